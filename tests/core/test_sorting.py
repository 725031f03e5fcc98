"""sort / argsort / msort / topk / kthvalue / unique: values vs NumPy, stability, gradients, errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from tests.core.helpers import check_grads, rand64

X = [[3., 1., 2., 1.], [0., 5., 5., -1.]]


def test_sort_values_indices_and_stability(device):
    x = ember.tensor(X, device=device, requires_grad=True)
    values, indices = ember.sort(x)
    assert values.tolist() == [[1., 1., 2., 3.], [-1., 0., 5., 5.]]
    assert indices.tolist() == [[1, 3, 2, 0], [3, 0, 1, 2]]
    assert values.grad_fn.name() == "SortBackward0" and indices.dtype == ember.int64
    assert not indices.requires_grad
    desc = ember.sort(x, descending=True, stable=True)
    assert desc.indices.tolist() == [[0, 2, 1, 3], [1, 2, 0, 3]]  # ties keep their order
    assert desc.values.grad_fn.name() == "SortBackward1"
    assert x.sort(0, True).indices.tolist() == [[0, 1, 1, 0], [1, 0, 0, 1]]
    assert ember.argsort(x, descending=True).tolist() == desc.indices.tolist()
    assert ember.msort(x).tolist() == [[0., 1., 2., -1.], [3., 5., 5., 1.]]
    assert type(ember.sort(x)).__name__ == "sort"


def test_sort_nan_and_scalar(device):
    x = ember.tensor([float("nan"), 1., -1.], device=device)
    assert ember.sort(x).indices.tolist() == [2, 1, 0]
    assert ember.sort(x, descending=True).indices.tolist() == [0, 1, 2]
    s = ember.sort(ember.tensor(3., device=device))
    assert s.values.item() == 3.0 and s.indices.item() == 0


def test_sort_topk_kthvalue_gradients(device):
    x = rand64(3, 5, device=device)
    check_grads(lambda t: ember.sort(t, 0).values, x, gradgrad=True)
    check_grads(lambda t: ember.sort(t, descending=True).values, x)
    check_grads(lambda t: ember.topk(t, 2).values, x, gradgrad=True)
    check_grads(lambda t: ember.topk(t, 2, dim=0, largest=False).values, x)
    check_grads(lambda t: ember.kthvalue(t, 2, 0).values, x)
    check_grads(lambda t: ember.kthvalue(t, 3, 1, keepdim=True).values, x)


def test_sort_gradient_goes_back_to_origin(device):
    x = ember.tensor([3., 1., 2.], device=device, requires_grad=True)
    (ember.sort(x).values * ember.tensor([1., 10., 100.], device=device)).sum().backward()
    assert x.grad.tolist() == [100., 1., 10.]
    y = ember.tensor([3., 1., 2.], device=device, requires_grad=True)
    (ember.topk(y, 2).values * ember.tensor([1., 10.], device=device)).sum().backward()
    assert y.grad.tolist() == [1., 0., 10.]


def test_topk(device):
    x = ember.tensor(X, device=device, requires_grad=True)
    top = ember.topk(x, 2)
    assert top.values.tolist() == [[3., 2.], [5., 5.]] and top.indices.tolist() == [[0, 2], [1, 2]]
    assert top.values.grad_fn.name() == "TopkBackward0" and type(top).__name__ == "topk"
    assert x.topk(2, largest=False).indices.tolist() == [[1, 3], [3, 0]]
    assert tuple(ember.topk(x, 0).values.shape) == (2, 0)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ember.topk(x, 5)


def test_kthvalue(device):
    x = ember.tensor(X, device=device, requires_grad=True)
    k = ember.kthvalue(x, 2)
    assert k.values.tolist() == [1., 0.] and k.indices.tolist() == [3, 0]
    assert k.values.grad_fn.name() == "KthvalueBackward0"
    assert tuple(x.kthvalue(1, 0, keepdim=True).values.shape) == (1, 4)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension 1"):
        ember.kthvalue(x, 5)


def test_median_and_nanmedian(device):
    """Lower median; NaN rules and indices as PyTorch 2.13 gives them (checked by hand)."""
    nan = float("nan")
    x = ember.tensor([[3., nan, 1., nan], [4., 1., 2., 3.]], device=device)
    m = ember.median(x, 1)
    assert type(m).__name__ == "median" and str(m.values.tolist()) == "[nan, 2.0]" and m.indices.tolist() == [1, 2]
    n = x.nanmedian(1)
    assert type(n).__name__ == "nanmedian" and n.values.tolist() == [1.0, 2.0] and n.indices.tolist() == [2, 2]
    assert str(ember.median(x).item()) == "nan" and ember.nanmedian(x).item() == 2.0
    assert ember.median(ember.tensor([1, 4, 2, 3], device=device)).tolist() == 2  # of the two middle, the smaller
    assert str(ember.median(ember.tensor([], device=device)).item()) == "nan"
    assert str(ember.nanmedian(ember.tensor([nan, nan], device=device)).item()) == "nan"
    kept = ember.median(ember.tensor([[1., 5.], [2., 8.]], device=device), 0, keepdim=True)
    assert kept.values.tolist() == [[1., 5.]] and kept.indices.tolist() == [[0, 0]]
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 1 to have non-zero size"):
        ember.median(ember.zeros(2, 0, device=device), 1)


def test_median_gradient_goes_to_the_element_picked(device):
    x = ember.tensor([[3., 1., 2., 5.], [4., 1., 2., 3.]], device=device, requires_grad=True)
    values = ember.median(x, 1).values
    assert values.grad_fn.name() == "MedianBackward1" and ember.median(x).grad_fn.name() == "MedianBackward0"
    assert ember.nanmedian(x, 1).values.grad_fn.name() == "NanmedianBackward1"
    values.sum().backward()
    assert x.grad.tolist() == [[0., 0., 1., 0.], [0., 0., 1., 0.]]
    check_grads(lambda t: ember.median(t, 0).values, rand64(5, 3, device=device, seed=7))
    check_grads(lambda t: ember.nanmedian(t), rand64(4, 3, device=device, seed=8))


@settings(max_examples=40, deadline=None)
@given(arr=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                      elements=st.one_of(st.integers(-3, 3).map(float), st.just(float("nan")))), data=st.data())
def test_median_matches_numpy(arr, data):
    dim = data.draw(st.integers(0, arr.ndim - 1))
    ordered = np.sort(arr, axis=dim)  # NaN last
    n = arr.shape[dim]
    nans = np.isnan(arr).sum(axis=dim, keepdims=True)
    lower = np.take_along_axis(ordered, np.full_like(nans, (n - 1) // 2), axis=dim)
    expect = np.where(nans > 0, np.nan, lower).squeeze(dim)
    got = ember.median(ember.tensor(arr), dim=dim)
    np.testing.assert_array_equal(got.values.numpy(), expect)
    np.testing.assert_array_equal(np.take_along_axis(arr, np.expand_dims(got.indices.numpy(), dim), axis=dim)
                                  .squeeze(dim), expect)  # the indices point at the values
    valid = n - nans
    lower = np.take_along_axis(ordered, np.maximum(valid - 1, 0) // 2, axis=dim)
    expect = np.where(valid > 0, lower, np.nan).squeeze(dim)
    np.testing.assert_array_equal(ember.nanmedian(ember.tensor(arr), dim=dim).values.numpy(), expect)


def test_unique(device):
    x = ember.tensor(X, device=device, requires_grad=True)
    values, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    assert values.tolist() == [-1., 0., 1., 2., 3., 5.]
    assert inverse.tolist() == [[4, 2, 3, 2], [1, 5, 5, 0]]
    assert counts.tolist() == [1, 1, 2, 1, 1, 2] and counts.dtype == ember.int64
    assert values.grad_fn.name() == "Unique2Backward0"
    with pytest.raises(NotImplementedError, match="the derivative for 'unique' is not implemented"):
        values.sum().backward()
    assert ember.unique(ember.tensor([3, 1, 3], device=device), sorted=False).tolist() == [1, 3]


def test_unique_dim(device):
    x = ember.tensor([[1, 2], [1, 2], [0, 1]], device=device)
    if device == "strict":
        with pytest.raises(ember.UnsupportedOpError, match="strict"):
            ember.unique(x, dim=0)
        return
    values, inverse, counts = ember.unique(x, dim=0, return_inverse=True, return_counts=True)
    assert values.tolist() == [[0, 1], [1, 2]] and inverse.tolist() == [1, 1, 0] and counts.tolist() == [1, 2]


def test_errors(device):
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.sort(ember.ones(2, 3, device=device), dim=2)
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.sort([3, 1])


@settings(max_examples=50, deadline=None)
@given(arr=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                      elements=st.integers(-3, 3).map(float)),
       descending=st.booleans(), data=st.data())
def test_sort_matches_numpy_stable_sort(arr, descending, data):
    dim = data.draw(st.integers(0, arr.ndim - 1))
    keys = -arr if descending else arr
    expect = np.argsort(keys, axis=dim, kind="stable")
    values, indices = ember.sort(ember.tensor(arr), dim=dim, descending=descending)
    np.testing.assert_array_equal(indices.numpy(), expect)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(arr, expect, axis=dim))
    k = data.draw(st.integers(0, arr.shape[dim]))
    top = ember.topk(ember.tensor(arr), k, dim=dim, largest=descending)
    np.testing.assert_array_equal(top.indices.numpy(), np.take(expect, range(k), axis=dim))
