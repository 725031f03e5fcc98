"""Comparisons, isclose/allclose/equal, logical and bitwise ops."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember

OPS = {"eq": (operator.eq, np.equal), "ne": (operator.ne, np.not_equal), "gt": (operator.gt, np.greater),
       "ge": (operator.ge, np.greater_equal), "lt": (operator.lt, np.less), "le": (operator.le, np.less_equal)}


@pytest.mark.parametrize("name", sorted(OPS))
def test_comparisons_with_tensors_and_scalars(name, device):
    op, ref = OPS[name]
    a = ember.tensor([[1, 2, 3]], device=device)
    b = ember.tensor([[2], [3]], dtype=ember.float32, device=device)
    want = ref(np.array([[1, 2, 3]]), np.array([[2.0], [3.0]]))
    for got in (getattr(ember, name)(a, b), getattr(a, name)(b), op(a, b)):
        assert got.dtype == ember.bool_ and got.tolist() == want.tolist()
    assert op(a, 2.5).tolist() == ref(np.array([[1, 2, 3]]), 2.5).tolist()  # compared as floats
    assert op(2, a).tolist() == ref(2, np.array([[1, 2, 3]])).tolist()  # reflected


def test_comparison_results_do_not_require_grad(device):
    x = ember.tensor([1.0, 2.0], device=device, requires_grad=True)
    out = x > 1
    assert not out.requires_grad and out.grad_fn is None


def test_comparison_with_other_objects():
    x = ember.tensor([1.0, 2.0])
    assert (x == None) is False  # noqa: E711 - PyTorch returns False, as Python does
    assert (x != "a") is True
    with pytest.raises(TypeError, match="'<' not supported"):
        x < "a"  # noqa: B015
    with pytest.raises(TypeError, match=r"eq\(\): argument 'other' \(position 2\) must be Tensor or Number, "
                                        "not str"):
        ember.eq(x, "a")
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\) at "
                                           "non-singleton dimension 1"):
        ember.eq(ember.tensor([[1, 2, 3]]), ember.tensor([1, 2]))


def test_comparison_aliases():
    x, y = ember.tensor([1, 2]), ember.tensor([2, 2])
    assert ember.greater(x, y).tolist() == [False, False] and ember.less_equal(x, y).tolist() == [True, True]
    assert x.not_equal(y).tolist() == [True, False] and x.greater_equal(y).tolist() == [False, True]


@settings(max_examples=40, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       name=st.sampled_from(sorted(OPS)))
def test_comparisons_broadcast_like_numpy(shapes, name):
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 3, size=s) for s in shapes.input_shapes)
    got = OPS[name][0](ember.tensor(a), ember.tensor(b))
    assert tuple(got.shape) == shapes.result_shape
    np.testing.assert_array_equal(got.numpy(), OPS[name][1](a, b))


def test_isclose_allclose_equal(device):
    a = ember.tensor([1.0, 2.0, float("nan"), float("inf")], device=device)
    b = ember.tensor([1.0 + 1e-7, 2.1, float("nan"), float("inf")], device=device)
    assert ember.isclose(a, b).tolist() == [True, False, False, True]
    assert a.isclose(b, equal_nan=True).tolist() == [True, False, True, True]
    assert ember.isclose(a, b, rtol=0.1).tolist() == [True, True, False, True]
    assert ember.isclose(ember.tensor([float("inf")], device=device),
                         ember.tensor([-float("inf")], device=device)).tolist() == [False]
    assert ember.allclose(a[:2], b[:2], atol=0.2) is True and ember.allclose(a[:2], b[:2]) is False
    assert ember.isclose(ember.tensor([1, 2], device=device), ember.tensor([1, 3], device=device)).tolist() == [
        True, False]
    assert ember.equal(a[:2], a[:2]) is True and ember.equal(a[:2], b[:2]) is False
    assert ember.equal(a[:2], a[:1]) is False
    assert ember.equal(ember.tensor([1, 2], device=device), ember.tensor([1.0, 2.0], device=device)) is True
    with pytest.raises(RuntimeError, match="Long did not match Float"):
        ember.isclose(ember.tensor([1]), ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        ember.isclose(a, b, rtol=-1)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        ember.allclose(ember.tensor([1.0, 2.0, 3.0]), ember.tensor([1.0, 2.0]))


# -- logical and bitwise ----------------------------------------------------------------------------------------
def test_logical_ops(device):
    a = ember.tensor([1, 0, 2, 0], device=device)
    b = ember.tensor([1.0, 1.0, 0.0, 0.0], device=device)
    assert ember.logical_and(a, b).tolist() == [True, False, False, False]
    assert ember.logical_or(a, b).tolist() == [True, True, True, False]
    assert a.logical_xor(b).tolist() == [False, True, True, False]
    assert ember.logical_not(a).tolist() == [False, True, False, True]
    assert ember.logical_and(a, b).dtype == ember.bool_
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        ember.logical_and(a, 1)


def test_bitwise_ops_and_operators(device):
    i = ember.tensor([12, 10, -1], device=device)
    assert (i & 6).tolist() == [4, 2, 6] and (6 & i).tolist() == [4, 2, 6]
    assert (i | 1).tolist() == [13, 11, -1] and (1 | i).tolist() == [13, 11, -1]
    assert (i ^ 6).tolist() == [10, 12, -7] and (6 ^ i).tolist() == [10, 12, -7]
    assert (~i).tolist() == [-13, -11, 0]
    assert (i << 1).tolist() == [24, 20, -2] and (i >> 1).tolist() == [6, 5, -1] and (1 << i[:2]).tolist() == [
        4096, 1024]
    assert ember.bitwise_and(i, i).tolist() == [12, 10, -1] and i.bitwise_xor(i).tolist() == [0, 0, 0]
    b = ember.tensor([True, False], device=device)
    c = ember.tensor([True, True], device=device)
    assert (b & c).tolist() == [True, False] and (b | c).dtype == ember.bool_
    assert (b ^ c).tolist() == [False, True] and (~b).tolist() == [False, True]
    assert (b & True).dtype == ember.bool_ and (b & 1).dtype == ember.int64
    assert (ember.tensor([3], dtype=ember.int32, device=device) & 1).dtype == ember.int32
    assert (ember.tensor([3], dtype=ember.uint8, device=device) | ember.tensor([4], device=device)).dtype == (
        ember.int64)


def test_bitwise_errors():
    f = ember.tensor([1.0])
    with pytest.raises(NotImplementedError, match="\"bitwise_and\" not implemented for 'Float'"):
        f & 1
    with pytest.raises(NotImplementedError, match="\"bitwise_or\" not implemented for 'Float'"):
        ember.tensor([1]) | 2.5
    with pytest.raises(TypeError, match=r"~ \(operator.invert\) is only implemented on integer and Boolean"):
        ~f
    with pytest.raises(NotImplementedError, match="\"bitwise_left_shift\" not implemented for 'Bool'"):
        ember.tensor([True]) << ember.tensor([True])
    with pytest.raises(TypeError):
        f & "a"
