"""Gaps found auditing issue 2: cross-device errors and moves, logspace, result-tuple reprs, grad_fn
names, scalar casts of in-place fills, and gradchecks of ops that had none."""
import numpy as np
import pytest

import ember
from tests.core.helpers import check_grads, rand64


# -- devices ------------------------------------------------------------------------------------------------
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


# -- logspace -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, kwargs", [
    ((0, 2, 3), {}), ((0, 3, 4), {"base": 2}), ((-1, 1, 5), {"dtype": ember.float64}), ((1, 2, 1), {}),
    ((1, 2, 0), {}),
])
def test_logspace_matches_numpy(device, args, kwargs):
    out = ember.logspace(*args, device=device, **kwargs)
    want = kwargs.get("dtype", ember.float32)
    assert out.dtype == want and out.device.type == device
    ref = np.logspace(*args, base=kwargs.get("base", 10.0))
    np.testing.assert_allclose(out.numpy(force=True), ref, rtol=1e-6)


def test_logspace_rejects_negative_steps():
    with pytest.raises(RuntimeError, match="number of steps must be (a )?non-negative"):
        ember.logspace(0, 1, -2)


# -- named result tuples print like PyTorch's --------------------------------------------------------------
@pytest.mark.parametrize("call, head", [
    (lambda x: x.sort(), "ember.return_types.sort(\nvalues=tensor("),
    (lambda x: x.topk(1), "ember.return_types.topk(\nvalues=tensor("),
    (lambda x: x.kthvalue(1), "ember.return_types.kthvalue(\nvalues=tensor("),
    (lambda x: x.max(0), "ember.return_types.max(\nvalues=tensor("),
    (lambda x: ember.linalg.qr(x), "ember.return_types.linalg_qr(\nQ=tensor("),
    (lambda x: ember.linalg.eigh(x @ x.T), "ember.return_types.linalg_eigh(\neigenvalues=tensor("),
    (lambda x: ember.linalg.svd(x), "ember.return_types.linalg_svd(\nU=tensor("),
    (lambda x: ember.linalg.slogdet(x), "ember.return_types.linalg_slogdet(\nsign=tensor("),
])
def test_result_tuples_print_as_pytorch_return_types(call, head):
    r = call(ember.tensor([[3.0, 1.0], [0.0, 2.0]]))
    assert repr(r).startswith(head) and repr(r).endswith("))")
    assert type(r).__module__ == "ember.return_types" and isinstance(r, tuple)
    assert isinstance(r, getattr(ember.return_types, type(r).__name__))


def test_sort_result_repr_in_full():
    assert repr(ember.tensor([3.0, 1.0]).sort()) == ("ember.return_types.sort(\nvalues=tensor([1., 3.]),\n"
                                                     "indices=tensor([1, 0]))")


# -- grad_fn names ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn, name", [
    (lambda x: x.split([1, 2])[0], "SplitWithSizesBackward0"), (lambda x: x.split(2)[0], "SplitBackward0"),
    (lambda x: x.clone().fill_(2.0), "FillBackward2"), (lambda x: x.clone().fill_(ember.tensor(2.0)), "FillBackward3"),
    (lambda x: x.clone().zero_(), "ZeroBackward0"), (lambda x: x.masked_fill(x > 0, 1.0), "MaskedFillBackward0"),
    (lambda x: x.masked_fill(x > 0, ember.tensor(1.0)), "MaskedFillBackward1"),
])
def test_grad_fn_names_match_pytorch(fn, name):
    assert fn(ember.ones(3, requires_grad=True)).grad_fn.name() == name


# -- number casts of fills ----------------------------------------------------------------------------------
def test_fills_truncate_floats_for_integer_tensors():
    mask = ember.tensor([True, False])
    assert ember.ones(2, dtype=ember.int64).fill_(1.5).tolist() == [1, 1]
    assert ember.ones(2, dtype=ember.int8).masked_fill(mask, -1.7).tolist() == [-1, 1]
    assert ember.ones(2, dtype=ember.int64).masked_fill(mask, True).tolist() == [1, 1]
    x = ember.zeros(2, dtype=ember.int32)
    x[0] = 2.9
    assert x.tolist() == [2, 0]


@pytest.mark.parametrize("dtype, value, ctype", [
    (ember.uint8, 300, "uint8_t"), (ember.int8, -129, "int8_t"), (ember.int16, 1e10, "int16_t"),
    (ember.int32, 1e10, "int"), (ember.int64, 1e30, "int64_t"), (ember.int32, float("nan"), "int"),
])
def test_fills_out_of_range_raise_pytorchs_error(dtype, value, ctype):
    msg = f"value cannot be converted to type {ctype} without overflow"
    with pytest.raises(RuntimeError, match=msg):
        ember.ones(2, dtype=dtype).fill_(value)
    with pytest.raises(RuntimeError, match=msg):
        ember.ones(2, dtype=dtype).masked_fill(ember.tensor([True, False]), value)


# -- gradchecks of ops that had none ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round", "frac"])
def test_rounding_gradients(device, name):
    x = rand64(2, 3, device=device, low=0.2, high=0.8) * 4  # away from integers and half-integers
    x = x.detach().requires_grad_()
    check_grads(getattr(ember, name), x, gradgrad=True)


def test_round_with_decimals_gradient(device):
    x = (rand64(2, 3, device=device, low=0.11, high=0.14) + 0.0).detach().requires_grad_()
    assert ember.round(x, decimals=1).grad_fn.name() == "RoundBackward1"
    check_grads(lambda t: ember.round(t, decimals=1), x, gradgrad=True)


@pytest.mark.parametrize("name", ["remainder", "fmod"])
def test_remainder_fmod_gradient_wrt_the_dividend(device, name):
    a = rand64(3, 1, device=device, low=0.2, high=0.8)
    check_grads(lambda t: getattr(ember, name)(t * 3, 1.3), a, gradgrad=True)


def test_stable_sort_gradient(device):
    x = rand64(2, 4, device=device)
    assert ember.sort(x, stable=True).values.grad_fn.name() == "SortBackward1"
    check_grads(lambda t: ember.sort(t, dim=0, stable=True, descending=True).values, x, gradgrad=True)


def test_fill_and_masked_fill_with_tensor_value_gradients(device):
    x, v = rand64(2, 3, device=device), rand64(device=device, seed=1)
    check_grads(lambda t, s: t.clone().fill_(s), x, v, gradgrad=True)
    check_grads(lambda t, s: t.masked_fill(t > 0, s), x, v, gradgrad=True)


def test_split_with_sizes_gradient(device):
    x = rand64(2, 5, device=device)
    check_grads(lambda t: [p * (i + 1) for i, p in enumerate(t.split([1, 4, 0], 1))], x, gradgrad=True)


def test_scatter_multiply_has_no_derivative_as_in_pytorch():
    x = ember.ones(2, 3, requires_grad=True)
    out = x.clone().scatter_(1, ember.tensor([[0], [2]]), 2.0, reduce="multiply")
    assert out.tolist() == [[2.0, 1.0, 1.0], [1.0, 1.0, 2.0]]
    with pytest.raises(RuntimeError, match="the derivative for 'scatter' with reduce='multiply' is not implemented"):
        out.sum().backward()


# -- names ------------------------------------------------------------------------------------------------
def test_in_place_functions_exist_at_top_level_as_in_pytorch():
    x = ember.zeros(3)
    assert ember.fill_(x, 2.0) is x and x.tolist() == [2.0] * 3
    assert ember.zero_(x) is x and x.tolist() == [0.0] * 3
    y = ember.tensor([-1.0, 0.5, 3.0])
    assert ember.clamp_(y, 0, 1) is y and y.tolist() == [0.0, 0.5, 1.0]
    assert ember.index_put_(x, (ember.tensor([1]),), ember.tensor(5.0)).tolist() == [0.0, 5.0, 0.0]


@pytest.mark.parametrize("name", [
    "view", "transpose", "t", "permute", "expand", "squeeze", "unsqueeze", "narrow", "flatten", "unflatten",
    "reshape", "contiguous", "clone", "add_", "mul_", "sub_", "div_", "zero_", "fill_", "clamp_", "copy_",
    "scatter_", "scatter_add_", "index_add_", "masked_fill_", "uniform_", "normal_", "chunk", "split",
    "index_select", "gather", "scatter", "take_along_dim", "flip", "roll", "repeat", "tile", "tril", "triu",
    "masked_fill", "logsumexp", "norm", "cumsum", "cumprod", "softmax", "log_softmax", "isclose", "allclose", "equal",
    "sort", "argsort", "topk", "unique", "mm", "bmm", "matmul", "dot", "outer", "retain_grad", "register_hook",
    "register_post_accumulate_grad_hook", "detach", "detach_", "requires_grad_",
])
def test_listed_ops_are_tensor_methods(name):
    assert callable(getattr(ember.ones(2, 2), name))


def test_scatter_multiply_on_strict_names_op_and_backend():
    x = ember.ones(2, 3, device="strict")
    with pytest.raises(ember.UnsupportedOpError, match="op 'scatter' with reduce='multiply' is not supported by "
                                                       "backend 'strict'"):
        x.clone().scatter_(1, ember.tensor([[0], [2]], device="strict"), 2.0, reduce="multiply")
