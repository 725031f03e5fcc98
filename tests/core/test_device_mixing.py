"""Ops over tensors on two devices: the error names the op and both devices; moves between devices are
differentiable (logical CPUs and backends)."""
import pytest

import ember
from tests.core.helpers import check_grads, rand64


@pytest.mark.parametrize("op, name", [
    (lambda a, b: a + b, "add"), (lambda a, b: a * b, "mul"), (lambda a, b: ember.cat([a, b]), "cat"),
    (lambda a, b: ember.mm(a, b), "mm"), (lambda a, b: ember.where(a > 0, a, b), "where"),
])
def test_mixing_logical_cpus_in_one_op_names_both(two_cpus, op, name):
    a, b = ember.ones(2, 2, device="cpu:0"), ember.ones(2, 2, device="cpu:1")
    with pytest.raises(ember.DeviceMismatchError, match=rf"{name}: expected all tensors to be on the same device, "
                                                        r"but found at least two devices, cpu:0 and cpu:1"):
        op(a, b)


def test_mixing_backends_in_one_op_names_both():
    with pytest.raises(ember.DeviceMismatchError, match="add: .*found at least two devices, cpu and strict"):
        ember.ones(2) + ember.ones(2, device="strict")


def test_moves_between_logical_cpus_are_differentiable(two_cpus):
    x = rand64(2, 3)
    check_grads(lambda t: (t.to("cpu:1") * 2).to("cpu:0"), x, gradgrad=True)
    y = x.to("cpu:1")
    assert y.device == ember.device("cpu:1") and y.grad_fn.name() == "ToCopyBackward0"
    (y * 3).sum().backward()
    assert x.grad.device == x.device and x.grad.tolist() == [[3.0] * 3] * 2


def test_moves_between_backends_are_differentiable():
    x = rand64(2, 3)
    check_grads(lambda t: (t.to("strict") * t.to("strict")).cpu(), x, gradgrad=True)
