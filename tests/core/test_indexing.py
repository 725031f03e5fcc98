"""Indexing: x[key] against NumPy, gather/scatter family, gradients (repeats accumulate), errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tests.core.helpers import check_grads, rand64

A = np.arange(60.0).reshape(3, 4, 5)


def idx(device, values):
    return ember.tensor(values, device=device)


def torch_rule(a, key):
    """NumPy's result for ``a[key]`` under PyTorch's rule: with advanced indices, ints select first."""
    advanced = any(isinstance(k, (list, np.ndarray)) for k in key)
    if not (advanced and any(isinstance(k, int) for k in key)):
        return a[key]
    first = tuple(k if isinstance(k, int) else (slice(None) if k is not None else None) for k in key)
    first = tuple(k for k in first if k is not None)
    rest = tuple(k for k in key if not isinstance(k, int))
    return a[first][rest]


KEYS = [
    (1,), (-1, 2), (slice(None), 1), (slice(1, None, 2),), (Ellipsis, 1), (None, 0, Ellipsis, None),
    (slice(10, 20),), (slice(-2, None), slice(None, None, 3)),
    ([0, 2],), ([[0, 1], [2, 2]], slice(1, 3)), (slice(None), [3, 0, 3]), (0, slice(None), [1, 2]),
    ([0, 1], [1, 2]), ([0, 1], slice(None), [1, 2]), (Ellipsis, [4, 0]), ([2, 0], None, [1, 1]),
    (np.array([True, False, True]),), (slice(None), np.array([True, False, True, True])),
    (np.ones((3, 4), dtype=bool),), ([-1, -3],), (1, [0, -1], slice(2, 4)),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_getitem_matches_numpy(device, key):
    x = ember.tensor(A, device=device)
    ekey = tuple(ember.tensor(k, device=device) if isinstance(k, np.ndarray) else k for k in key)
    np.testing.assert_array_equal(x[ekey].numpy(force=True), torch_rule(A, key))


@pytest.mark.parametrize("key", [k for k in KEYS if A[k].size], ids=[repr(k) for k in KEYS if A[k].size])
def test_getitem_grads(device, key):
    x = rand64(3, 4, 5, device=device)
    check_grads(lambda t: t[key], x, gradgrad=True)


def test_int_with_advanced_follows_pytorch_not_numpy():
    # PyTorch applies the int first (a select), so the advanced dim stays in place
    assert ember.zeros(3, 4, 5)[0, :, [1, 2]].shape == (4, 2)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_basic_and_advanced_indexing_property(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    a = np.random.default_rng(0).normal(size=shape)
    key = []
    for n in shape:
        kind = data.draw(st.sampled_from(["int", "slice", "array", "full"]))
        if kind == "int":
            key.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            key.append(slice(data.draw(st.integers(-n - 1, n + 1)), data.draw(st.integers(-n - 1, n + 1)),
                             data.draw(st.integers(1, 3))))
        elif kind == "array":
            key.append(data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)))
        else:
            key.append(slice(None))
    n_arrays = sum(isinstance(k, list) for k in key)
    if n_arrays > 1:  # equal lengths so they broadcast
        m = min(len(k) for k in key if isinstance(k, list))
        key = [k[:m] if isinstance(k, list) else k for k in key]
    got = ember.tensor(a)[tuple(key)].numpy()
    np.testing.assert_array_equal(got, torch_rule(a, tuple(key)))


def test_repeated_index_gradient_accumulates(device):
    x = ember.zeros(3, dtype=ember.float64, device=device, requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


def test_mask_index_and_grad_fn(device):
    x = rand64(3, 4, device=device)
    m = x > 0
    y = x[m]
    assert y.grad_fn.name() == "IndexBackward0"
    np.testing.assert_array_equal(y.detach().numpy(force=True), x.detach().numpy(force=True)[m.numpy(force=True)])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(force=True), m.numpy(force=True).astype(np.float64))


def test_index_with_tensor_scalar_and_int_tensor_index(device):
    x = ember.tensor(A, device=device)
    assert x[ember.tensor(1, device=device)].shape == (4, 5)
    assert x[ember.tensor([1, 2], dtype=ember.int32, device=device)].shape == (2, 4, 5)


@pytest.mark.parametrize("key,exc,msg", [
    ((3,), IndexError, "index 3 is out of bounds for dimension 0 with size 3"),
    ((0, 0, 0, 0), IndexError, "too many indices for tensor of dimension 3"),
    ((Ellipsis, Ellipsis), IndexError, "an index can only have a single ellipsis"),
    (([0, 5],), IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (([0.5],), IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    ((slice(None, None, -1),), ValueError, "step must be greater than zero"),
    (([0, 1], [0, 1, 2]), IndexError, "shape mismatch: indexing tensors could not be broadcast together"),
    ((np.array([True, False]),), IndexError, r"The shape of the mask \[2\] at index 0 does not match the shape of "
                                             r"the indexed tensor \[3, 4, 5\] at index 0"),
    (("a",), IndexError, "only integers, slices"),
])
def test_getitem_errors(device, key, exc, msg):
    x = ember.tensor(A, device=device)
    key = tuple(ember.tensor(k, device=device) if isinstance(k, np.ndarray) else k for k in key)
    with pytest.raises(exc, match=msg):
        x[key]


# -- along a dimension ------------------------------------------------------------
def test_gather_scatter_values_match_numpy(device):
    a = np.arange(12.0).reshape(3, 4)
    index = np.array([[0, 2], [1, 1], [3, 0]])
    x = ember.tensor(a, device=device)
    i = idx(device, index)
    np.testing.assert_array_equal(x.gather(1, i).numpy(force=True), np.take_along_axis(a, index, 1))
    np.testing.assert_array_equal(ember.take_along_dim(x, i, 1).numpy(force=True), np.take_along_axis(a, index, 1))
    np.testing.assert_array_equal(ember.take_along_dim(x, idx(device, [0, 11])).numpy(force=True), [0.0, 11.0])
    want = a.copy()
    np.put_along_axis(want, index, -1.0, 1)
    np.testing.assert_array_equal(x.scatter(1, i, -1.0).numpy(force=True), want)
    src = -np.arange(6.0).reshape(3, 2) - 1
    unique = np.array([[0, 2], [1, 3], [3, 0]])  # which of two values lands on one place is undefined
    want = a.copy()
    np.put_along_axis(want, unique, src, 1)
    got = x.scatter(1, idx(device, unique), ember.tensor(src, device=device))
    np.testing.assert_array_equal(got.numpy(force=True), want)
    added = ember.zeros(3, 4, dtype=ember.float64, device=device).scatter_add(
        1, i, ember.ones(3, 2, dtype=ember.float64, device=device))
    np.testing.assert_array_equal(added.numpy(force=True), [[1, 0, 1, 0], [0, 2, 0, 0], [1, 0, 0, 1]])
    np.testing.assert_array_equal(x.index_select(1, idx(device, [3, 0, 3])).numpy(force=True), a[:, [3, 0, 3]])
    np.testing.assert_array_equal(
        ember.zeros(4, device=device).index_add(0, idx(device, [1, 1, 3]), ember.tensor([1.0, 2.0, 3.0], device=device),
                                                alpha=2).tolist(), [0.0, 6.0, 0.0, 6.0])


def test_scatter_reduce_modes(device):
    i = idx(device, [[0, 0, 1]])
    x = ember.ones(1, 3, device=device)
    assert x.scatter(1, i, ember.full((1, 3), 2.0, device=device), reduce="add").tolist() == [[5.0, 3.0, 1.0]]
    if device == "cpu":
        assert x.scatter(1, i, 3.0, reduce="multiply").tolist() == [[9.0, 3.0, 1.0]]
    else:
        with pytest.raises(ember.UnsupportedOpError, match="multiply"):
            x.scatter(1, i, 3.0, reduce="multiply")


@pytest.mark.parametrize("fn", [
    lambda x, s: x.gather(1, ember.tensor([[0, 2], [1, 1], [3, 0]], device=x.device)),
    lambda x, s: x.gather(0, ember.tensor([[0, 2, 2, 1]], device=x.device)),
    lambda x, s: ember.take_along_dim(x, ember.tensor([[1], [0], [3]], device=x.device), 1),
    lambda x, s: x.index_select(1, ember.tensor([3, 0, 3], device=x.device)),
    lambda x, s: x.scatter(1, ember.tensor([[0, 2], [1, 3], [3, 0]], device=x.device), s),
    lambda x, s: x.scatter(1, ember.tensor([[0], [1], [3]], device=x.device), 0.5),
    lambda x, s: x.scatter_add(1, ember.tensor([[0, 0], [1, 1], [3, 0]], device=x.device), s),
    lambda x, s: x.index_add(1, ember.tensor([2, 2], device=x.device), s, alpha=3),
    lambda x, s: x.index_put((ember.tensor([0, 2], device=x.device),), s[:2, :1], accumulate=True),
    lambda x, s: x.index_put((ember.tensor([0, 2], device=x.device), ember.tensor([1, 1], device=x.device)), s[0]),
    lambda x, s: ember.take(x, ember.tensor([[0, 11], [5, 5]], device=x.device)),
    lambda x, s: x.masked_select(x > 0),
])
def test_gather_family_grads(device, fn):
    check_grads(fn, rand64(3, 4, device=device), rand64(3, 2, device=device, seed=5), gradgrad=True)


def test_grad_fn_names():
    x = ember.ones(3, 4, requires_grad=True) * 1
    i = ember.tensor([[0], [1], [2]])
    assert x.gather(1, i).grad_fn.name() == "GatherBackward0"
    assert x.scatter(1, i, 1.0).grad_fn.name() == "ScatterBackward1"
    assert x.scatter(1, i, x).grad_fn.name() == "ScatterBackward0"
    assert x.scatter_add(1, i, x).grad_fn.name() == "ScatterAddBackward0"
    assert x.index_select(0, ember.tensor([0])).grad_fn.name() == "IndexSelectBackward0"
    assert x[[0, 1]].grad_fn.name() == "IndexBackward0"


@pytest.mark.parametrize("call,exc,msg", [
    (lambda x: x.gather(1, ember.tensor([[0.0]], device=x.device)), RuntimeError,
     r"gather\(\): Expected dtype int64 for index"),
    (lambda x: x.gather(1, ember.tensor([0], device=x.device)), RuntimeError,
     "Index tensor must have the same number of dimensions as input tensor"),
    (lambda x: x.gather(1, ember.tensor([[4]], device=x.device)), RuntimeError,
     "index 4 is out of bounds for dimension 1 with size 4"),
    (lambda x: x.gather(1, ember.zeros(4, 1, dtype=ember.int64, device=x.device)), RuntimeError,
     r"Size does not match at dimension 0 expected index \[4, 1\] to be no larger than self \[3, 4\]"),
    (lambda x: x.index_select(0, ember.tensor([3], device=x.device)), IndexError, "index out of range in self"),
    (lambda x: x.index_select(0, ember.tensor([[0]], device=x.device)), IndexError, "Index is supposed to be a vector"),
    (lambda x: x.scatter(1, ember.tensor([[0]], device=x.device), ember.ones(1, 1, dtype=ember.int64,
                                                                               device=x.device)),
     RuntimeError, "Expected self.dtype to be equal to src.dtype"),
    (lambda x: x.scatter(1, ember.tensor([[0]], device=x.device), 1.0, reduce="max"), RuntimeError,
     "reduce argument must be either add or multiply"),
    (lambda x: x.index_add(0, ember.tensor([0], device=x.device), ember.ones(1, 3, device=x.device)), RuntimeError,
     "Source/destination tensor must have same slice shapes"),
])
def test_gather_family_errors(device, call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(ember.zeros(3, 4, device=device))


def test_scatter_multiply_on_strict_names_op_and_backend():
    x = ember.ones(2, 3, device="strict")
    with pytest.raises(ember.UnsupportedOpError, match="op 'scatter' with reduce='multiply' is not supported by "
                                                       "backend 'strict'"):
        x.clone().scatter_(1, ember.tensor([[0], [2]], device="strict"), 2.0, reduce="multiply")
