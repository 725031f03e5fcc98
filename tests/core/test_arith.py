"""Arithmetic operators: type promotion, broadcasting vs NumPy, gradients (first and second), errors."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from tests.core.helpers import check_grads, rand64

BINARY = {"add": (ember.add, np.add), "sub": (ember.sub, np.subtract), "mul": (ember.mul, np.multiply),
          "div": (ember.div, np.divide), "pow": (ember.pow, np.power)}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_gradients_with_broadcasting(name, device):
    fn = BINARY[name][0]
    a = rand64(3, 1, device=device, low=0.5, high=2.0, seed=1)
    b = rand64(4, device=device, low=0.5, high=2.0, seed=2)
    check_grads(fn, a, b, gradgrad=True)
    check_grads(lambda t: fn(t, 1.5), a, gradgrad=True)
    check_grads(lambda t: fn(1.5, t), b, gradgrad=True)
    want = "PowBackward1" if name == "pow" else name.capitalize() + "Backward0"  # pow: 0 scalar exponent, 2 base
    assert fn(a, b).grad_fn.name() == want


def test_alpha_and_neg_gradients(device):
    a, b = rand64(2, 3, device=device, seed=1), rand64(3, device=device, seed=2)
    check_grads(lambda x, y: ember.add(x, y, alpha=2.5), a, b, gradgrad=True)
    check_grads(lambda x, y: ember.sub(x, y, alpha=-3), a, b, gradgrad=True)
    check_grads(lambda x: -x, a, gradgrad=True)
    assert ember.add(ember.tensor([1, 2], device=device), ember.tensor([3, 4], device=device), alpha=2).tolist() == [
        7, 10]
    assert ember.rsub(ember.tensor([1.0], device=device), 5.0).tolist() == [4.0]


@pytest.mark.parametrize("a_dtype,other,want", [
    (ember.int32, 2.5, ember.float32),      # a Python float makes an integer tensor float (default dtype)
    (ember.int32, 2, ember.int32),          # a Python int keeps the tensor's integer dtype
    (ember.uint8, 30, ember.uint8),
    (ember.bool_, 1, ember.int64),
    (ember.bool_, True, ember.bool_),
    (ember.float16, 2.5, ember.float16),
    (ember.float64, 2, ember.float64),
])
def test_promotion_with_python_scalars(a_dtype, other, want):
    x = ember.ones(2, dtype=a_dtype)
    assert (x + other).dtype == want and (other + x).dtype == want and (x * other).dtype == want


@pytest.mark.parametrize("a,b,want", [
    (ember.int32, ember.int64, ember.int64), (ember.uint8, ember.int8, ember.int16),
    (ember.int64, ember.float16, ember.float16), (ember.float32, ember.float64, ember.float64),
    (ember.bool_, ember.uint8, ember.uint8), (ember.float16, ember.bfloat16, ember.float32),
])
def test_promotion_between_tensors(a, b, want):
    assert (ember.ones(2, dtype=a) + ember.ones(2, dtype=b)).dtype == want
    assert (ember.ones(2, dtype=a) * ember.ones(2, dtype=b)).dtype == want


def test_zero_dim_tensors_do_not_win_within_a_category(device):
    x = ember.ones(2, dtype=ember.int32, device=device)
    assert (x + ember.tensor(5, device=device)).dtype == ember.int32  # int64 0-dim: same category
    assert (x + ember.tensor(5.0, dtype=ember.float64, device=device)).dtype == ember.float64  # higher category
    f = ember.ones(2, dtype=ember.float32, device=device)
    assert (f * ember.tensor(2.0, dtype=ember.float64, device=device)).dtype == ember.float32


def test_division_rules(device):
    i = ember.tensor([7, -7], device=device)
    assert (i / 2).dtype == ember.float32 and (i / 2).tolist() == [3.5, -3.5]
    assert ember.div(i, 2, rounding_mode="floor").tolist() == [3, -4]
    assert ember.div(i, 2, rounding_mode="trunc").tolist() == [3, -3]
    assert ember.div(i, 2, rounding_mode="trunc").dtype == ember.int64
    assert (i // 2).tolist() == [3, -4] and (i % 3).tolist() == [1, 2] and ember.fmod(i, 3).tolist() == [1, -1]
    assert (7.0 / ember.tensor([2.0], device=device)).tolist() == [3.5]
    with pytest.raises(ValueError, match="rounding_mode to be one of None, 'trunc', or 'floor'"):
        ember.div(i, 2, rounding_mode="round")


def test_pow_forms(device):
    x = ember.tensor([1.0, 2.0, 3.0], device=device)
    assert (x ** 2).tolist() == [1.0, 4.0, 9.0] and (2 ** x).tolist() == [2.0, 4.0, 8.0]
    assert (ember.tensor([2, 3], device=device) ** 2).dtype == ember.int64
    assert (ember.tensor([2, 3], device=device) ** 0.5).dtype == ember.float32
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        ember.tensor([2]) ** -1
    base = rand64(3, device=device, low=0.5, high=2.0)
    assert (base ** 2).grad_fn.name() == "PowBackward0" and (2 ** base).grad_fn.name() == "PowBackward2"
    check_grads(lambda t: 2.0 ** t, base, gradgrad=True)
    check_grads(lambda t: t ** 3, base, gradgrad=True)


def test_bool_errors():
    b = ember.tensor([True, False])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors is not supported"):
        b - b
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor is not supported"):
        -b
    with pytest.raises(TypeError, match="expected a Tensor or a Python number, got str"):
        ember.add(ember.ones(1), "a")


def test_shape_mismatch_error(device):
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\) at "
                                           "non-singleton dimension 1"):
        ember.ones(2, 3, device=device) + ember.ones(2, 2, device=device)


OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv]


@settings(max_examples=60, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3),
       op=st.sampled_from(OPERATORS), reflected=st.booleans())
def test_broadcasting_matches_numpy(shapes, op, reflected):
    rng = np.random.default_rng(1)
    a, b = (rng.uniform(0.5, 2.0, size=s) for s in shapes.input_shapes)
    got = op(ember.tensor(a), ember.tensor(b)) if not reflected else op(ember.tensor(a), float(b.flat[0]))
    want = op(a, b) if not reflected else op(a, float(b.flat[0]))
    assert tuple(got.shape) == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
def test_broadcast_gradients_reduce_to_input_shapes(shapes):
    rng = np.random.default_rng(2)
    a, b = (ember.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes.input_shapes)
    (a * b + a).sum().backward()
    assert tuple(a.grad.shape) == tuple(a.shape) and tuple(b.grad.shape) == tuple(b.shape)
    expected_b = np.broadcast_to(a.detach().numpy(), shapes.result_shape)
    lead = len(shapes.result_shape) - b.ndim
    summed = expected_b.sum(axis=tuple(range(lead))) if lead else expected_b
    for i, s in enumerate(b.shape):
        if s == 1:
            summed = summed.sum(axis=i, keepdims=True)
    np.testing.assert_allclose(b.grad.numpy(), summed.reshape(b.shape), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn, names", [(lambda x, y: x % y, ("RemainderBackward1", "RemainderBackward0")),
                                       (ember.fmod, ("FmodBackward1", "FmodBackward0"))])
def test_remainder_and_fmod_gradients_reach_both_sides_and_broadcast(device, fn, names):
    a = ember.tensor([[5.3], [7.1], [-3.7]], dtype=ember.float64, device=device, requires_grad=True)
    b = ember.tensor([2.2, 3.1, -4.3, 2.6], dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradcheck(fn, (a, b))
    assert fn(a, b).grad_fn.name() == names[0]
    assert fn(a, 2.0).grad_fn.name() == names[1]


def test_integer_scalars_out_of_range_wrap_like_c():
    assert (ember.tensor([1, 2], dtype=ember.int8) + 300).tolist() == [45, 46]
    assert (ember.tensor([250], dtype=ember.uint8) + 10).tolist() == [4]
    assert (ember.tensor([1], dtype=ember.int16) * 70000).dtype == ember.int16
