"""nn.Parameter and nn.Buffer: a Tensor subclass sharing its data, PyTorch's repr, ops giving plain tensors.

Expected reprs were printed by PyTorch 2.13 by hand (torch. -> ember.).
"""
import copy
import gc

import numpy as np
import pytest

import ember
from ember import nn


def test_repr_as_pytorch_prints_it():
    p = nn.Parameter(ember.ones(2, 3))
    assert repr(p) == "Parameter containing:\ntensor([[1., 1., 1.],\n        [1., 1., 1.]], requires_grad=True)"
    assert str(p) == repr(p)
    assert repr(nn.Parameter(ember.ones(2), requires_grad=False)) == "Parameter containing:\ntensor([1., 1.])"
    assert repr(nn.Parameter()) == "Parameter containing:\ntensor([], requires_grad=True)"
    assert repr(nn.Parameter(ember.ones(2, dtype=ember.float64))) == \
        "Parameter containing:\ntensor([1., 1.], dtype=ember.float64, requires_grad=True)"
    assert repr(nn.Parameter(ember.tensor([1, 2]), requires_grad=False)) == "Parameter containing:\ntensor([1, 2])"


def test_is_a_tensor_and_ops_give_plain_tensors():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    assert isinstance(p, ember.Tensor) and ember.is_tensor(p) and type(p) is nn.Parameter
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    for out in (p * 2, p.sum(), p.detach(), p.data, p[0], p + p, ember.exp(p)):
        assert type(out) is ember.Tensor
    assert repr(p * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(p.sum()) == "tensor(3., grad_fn=<SumBackward0>)"


def test_shares_memory_and_version_counter_with_data():
    t = ember.zeros(3)
    p = nn.Parameter(t)
    t.add_(1)
    assert p.tolist() == [1.0, 1.0, 1.0]
    assert p._version == t._version == 1
    with ember.no_grad():
        p.mul_(3)
    assert t.tolist() == [3.0, 3.0, 3.0]
    assert p.data_ptr() == t.data_ptr()


def test_from_a_tensor_with_history_is_a_leaf():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    p = nn.Parameter(y)
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    y.data.add_(1)
    assert p.tolist() == [3.0, 3.0]
    (p * p).sum().backward()
    assert p.grad.tolist() == [6.0, 6.0] and x.grad is None


def test_gradient_accumulates_into_grad():
    p = nn.Parameter(ember.tensor([1.0, -2.0]))
    (p * 3).sum().backward()
    (p * p).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [3 + 2 * 1.0, 3 + 2 * -2.0])


def test_integer_parameter_must_not_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(ember.tensor([1, 2]))
    p = nn.Parameter(ember.tensor([1, 2]), requires_grad=False)
    assert p.dtype == ember.int64 and not p.requires_grad


def test_non_tensor_data_is_a_type_error():
    with pytest.raises(TypeError, match="must be a Tensor, but got list"):
        nn.Parameter([1.0])


def test_deepcopy_copies_values_not_memory():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q is not p and q.requires_grad
    assert q.tolist() == [1.0, 2.0] and q.data_ptr() != p.data_ptr()
    frozen = copy.deepcopy(nn.Parameter(ember.ones(1), requires_grad=False))
    assert not frozen.requires_grad
    pair = copy.deepcopy([p, p])
    assert pair[0] is pair[1]


def test_memory_counted_once_while_either_lives():
    gc.collect()
    before = ember.memory_allocated("cpu")
    p = nn.Parameter(ember.zeros(1000))  # the temporary dies at once
    assert ember.memory_allocated("cpu") - before == 4000
    t = ember.zeros(500, dtype=ember.float64)
    q = nn.Parameter(t)
    assert ember.memory_allocated("cpu") - before == 8000
    del q  # t still holds the memory
    assert ember.memory_allocated("cpu") - before == 8000
    del t, p
    gc.collect()
    assert ember.memory_allocated("cpu") == before


def test_buffer_carries_persistence_and_registers_as_plain_tensor():
    b = nn.Buffer(ember.zeros(2), persistent=False)
    assert isinstance(b, ember.Tensor) and b.persistent is False and not b.requires_grad
    assert repr(b) == "tensor([0., 0.])"
    m = nn.Module()
    m.steps = b
    m.count = nn.Buffer(ember.tensor([3]))
    assert type(m.steps) is ember.Tensor and type(m.count) is ember.Tensor
    assert list(m.state_dict()) == ["count"]
    assert [name for name, _ in m.named_buffers()] == ["steps", "count"]
    m.steps.add_(1)
    assert b.tolist() == [1.0, 1.0]  # same memory as the Buffer given
