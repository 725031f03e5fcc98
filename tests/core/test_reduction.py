"""Reductions and scans: values vs NumPy, dim/keepdim shapes, dtypes, gradients, named tuples, errors."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from tests.core.helpers import check_grads, rand64


# -- property tests against NumPy ---------------------------------------------------------------------------------
@st.composite
def array_and_dims(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    ndim = len(shape)
    dims = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                          st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple)))
    values = np.random.default_rng(len(shape)).standard_normal(shape)
    return values, dims, draw(st.booleans())


def _axis(dims):
    return dims if dims is None or isinstance(dims, int) else tuple(dims)


REDUCTIONS = {
    "sum": lambda a, ax, k: np.sum(a, axis=ax, keepdims=k),
    "mean": lambda a, ax, k: np.mean(a, axis=ax, keepdims=k),
    "amax": lambda a, ax, k: np.max(a, axis=ax, keepdims=k),
    "amin": lambda a, ax, k: np.min(a, axis=ax, keepdims=k),
    "var": lambda a, ax, k: np.var(a, axis=ax, keepdims=k, ddof=1),
    "std": lambda a, ax, k: np.std(a, axis=ax, keepdims=k, ddof=1),
    "logsumexp": lambda a, ax, k: np.log(np.sum(np.exp(a), axis=ax, keepdims=k)),
    "norm": lambda a, ax, k: np.sqrt(np.sum(a * a, axis=ax, keepdims=k)),
    "all": lambda a, ax, k: np.all(a > 0, axis=ax, keepdims=k),
    "any": lambda a, ax, k: np.any(a > 0, axis=ax, keepdims=k),
}


@settings(max_examples=60, deadline=None)
@given(case=array_and_dims(), name=st.sampled_from(sorted(REDUCTIONS)))
def test_reductions_match_numpy(case, name):
    values, dims, keepdim = case
    x = ember.tensor(values if name not in ("all", "any") else values > 0, dtype=None)
    if name == "logsumexp" and dims is None:
        dims = tuple(range(values.ndim))
    if name in ("var", "std"):
        n = values.size if dims is None else math.prod(values.shape[d] for d in np.atleast_1d(dims))
        if n < 2:
            return
    with np.errstate(all="ignore"):
        want = REDUCTIONS[name](values, _axis(dims), keepdim)
    got = getattr(ember, name)(x, dim=dims, keepdim=keepdim)
    assert tuple(got.shape) == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)


@settings(max_examples=40, deadline=None)
@given(case=array_and_dims())
def test_max_min_argmax_with_dim_match_numpy(case):
    values, dims, keepdim = case
    if not isinstance(dims, int):
        return
    x = ember.tensor(values)
    for name, npval, nparg in (("max", np.max, np.argmax), ("min", np.min, np.argmin)):
        r = getattr(x, name)(dims, keepdim)
        np.testing.assert_array_equal(r.values.numpy(), npval(values, axis=dims, keepdims=keepdim))
        np.testing.assert_array_equal(r.indices.numpy(), nparg(values, axis=dims, keepdims=keepdim))
        arg = getattr(x, "arg" + name)(dim=dims, keepdim=keepdim)
        np.testing.assert_array_equal(arg.numpy(), nparg(values, axis=dims, keepdims=keepdim))
    both = ember.aminmax(x, dim=dims, keepdim=keepdim)
    np.testing.assert_array_equal(both.min.numpy(), np.min(values, axis=dims, keepdims=keepdim))
    np.testing.assert_array_equal(both.max.numpy(), np.max(values, axis=dims, keepdims=keepdim))


@settings(max_examples=30, deadline=None)
@given(case=array_and_dims())
def test_scans_match_numpy(case):
    values, dims, _ = case
    if not isinstance(dims, int):
        return
    x = ember.tensor(values)
    np.testing.assert_allclose(x.cumsum(dims).numpy(), np.cumsum(values, axis=dims))
    np.testing.assert_allclose(x.cumprod(dims).numpy(), np.cumprod(values, axis=dims))
    np.testing.assert_allclose(x.prod(dims).numpy(), np.prod(values, axis=dims))
    np.testing.assert_array_equal(x.count_nonzero(dims).numpy(), np.count_nonzero(values > 0.5, axis=dims) * 0
                                  + np.count_nonzero(values, axis=dims))


# -- sum and mean ---------------------------------------------------------------------------------------------------
def test_sum_mean_names_and_second_derivatives(device):
    x = rand64(3, 4, device=device)
    assert x.sum().grad_fn.name() == "SumBackward0" and x.sum(1).grad_fn.name() == "SumBackward1"
    assert x.mean().grad_fn.name() == "MeanBackward0" and x.mean((0, 1)).grad_fn.name() == "MeanBackward1"
    for fn in (lambda t: (t * t).sum(), lambda t: (t * t).sum(1, keepdim=True), lambda t: (t * t).mean(0),
               lambda t: (t * t * t).mean()):
        check_grads(fn, x, gradgrad=True)


def test_sum_mean_dtypes_and_zero_dim(device):
    i = ember.tensor([[1, 2], [3, 4]], dtype=ember.int32, device=device)
    assert i.sum().dtype == ember.int64 and i.sum(0).tolist() == [4, 6]
    assert ember.tensor([True, True], device=device).sum().item() == 2
    s = ember.tensor(2.5, device=device)
    assert s.sum(0).item() == 2.5 and s.mean(-1).item() == 2.5 and s.amax(0).item() == 2.5
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        i.mean()
    with pytest.raises(RuntimeError, match="dim \\[0, 0\\] appears multiple times"):
        i.sum((0, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        i.sum(2)


# -- prod ---------------------------------------------------------------------------------------------------------
def test_prod(device):
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert x.prod().item() == 24.0 and x.prod(1).tolist() == [2.0, 12.0]
    assert x.prod(0, keepdim=True).tolist() == [[3.0, 8.0]]
    i = ember.tensor([2, 3], dtype=ember.int32, device=device)
    assert i.prod().dtype == ember.int64 and i.prod(dtype=ember.float32).dtype == ember.float32
    a = rand64(3, 4, device=device)
    assert a.prod().grad_fn.name() == "ProdBackward0" and a.prod(1).grad_fn.name() == "ProdBackward1"
    check_grads(ember.prod, a, gradgrad=True)
    check_grads(lambda t: t.prod(0, keepdim=True), a, gradgrad=True)
    with pytest.raises(TypeError, match="prod\\(\\): argument 'dim' must be int, not tuple"):
        a.prod((0, 1))


def test_prod_gradient_with_zeros(device):
    x = ember.tensor([0.0, 3.0, 3.0], dtype=ember.float64, device=device, requires_grad=True)
    x.prod().backward()
    assert x.grad.tolist() == [9.0, 0.0, 0.0]
    z = ember.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 5.0]], dtype=ember.float64, device=device, requires_grad=True)
    check_grads(lambda t: t.prod(1), z)
    check_grads(lambda t: t.prod(), z)


# -- max / min ----------------------------------------------------------------------------------------------------
def test_max_min_forms(device):
    x = ember.tensor([[1.0, 5.0], [7.0, 2.0]], device=device)
    assert x.max().item() == 7.0 and ember.min(x).item() == 1.0 and x.max().ndim == 0
    r = ember.max(x, 1)
    assert isinstance(r, ember.return_types.max) and isinstance(r, tuple)
    assert r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0] and r.indices.dtype == ember.int64
    values, indices = x.min(dim=0, keepdim=True)
    assert values.tolist() == [[1.0, 2.0]] and indices.tolist() == [[0, 1]]
    assert repr(r).startswith("ember.return_types.max(\nvalues=tensor([5., 7.]")
    other = ember.tensor([3.0, 3.0], device=device)
    assert x.max(other).tolist() == [[3.0, 5.0], [7.0, 3.0]] and ember.min(x, other).tolist() == [[1.0, 3.0],
                                                                                                    [3.0, 2.0]]
    s = ember.tensor(2.0, device=device)
    assert s.max(0).values.item() == 2.0 and s.max(0).indices.item() == 0
    nan = ember.tensor([1.0, float("nan"), 3.0], device=device)
    assert math.isnan(nan.max().item()) and nan.max(0).indices.item() == 1


def test_max_gradients(device):
    x = ember.tensor([[1.0, 3.0, 3.0]], device=device, requires_grad=True)
    x.max().backward()
    assert x.grad.tolist() == [[0.0, 0.5, 0.5]]  # ties share evenly
    x.grad = None
    x.amax(1).backward()
    assert x.grad.tolist() == [[0.0, 0.5, 0.5]]
    x.grad = None
    x.max(1).values.backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0]]  # goes to the returned index
    a = rand64(3, 4, device=device)
    assert a.max().grad_fn.name() == "MaxBackward1" and a.max(0).values.grad_fn.name() == "MaxBackward0"
    assert a.min().grad_fn.name() == "MinBackward1" and a.min(1)[0].grad_fn.name() == "MinBackward0"
    assert a.amax(0).grad_fn.name() == "AmaxBackward0" and a.amin().grad_fn.name() == "AminBackward0"
    assert a.max(0).indices.grad_fn is None and not a.argmax().requires_grad
    for fn in (ember.max, ember.min, lambda t: t.max(1).values, lambda t: t.min(0, keepdim=True).values,
               lambda t: t.amax((0, 1)), lambda t: t.amin(1, keepdim=True)):
        check_grads(fn, a, gradgrad=True)


def test_argmax_argmin(device):
    x = ember.tensor([[1, 5], [7, 2]], device=device)
    assert x.argmax().item() == 2 and x.argmin().item() == 0
    assert x.argmax(dim=1).tolist() == [1, 0] and x.argmin(0, keepdim=True).tolist() == [[0, 1]]
    assert x.argmax(keepdim=True).tolist() == [[2]]
    assert ember.tensor([3, 3], device=device).argmax().item() == 0  # first of ties


def test_extreme_errors():
    empty = ember.zeros(0)
    with pytest.raises(RuntimeError, match="max\\(\\): Expected reduction dim to be specified for "
                                           "input.numel\\(\\) == 0"):
        empty.max()
    with pytest.raises(IndexError, match="amax\\(\\): Expected reduction dim to be specified"):
        empty.amax()
    with pytest.raises(IndexError, match="argmax\\(\\): Expected reduction dim to be specified"):
        empty.argmax()
    with pytest.raises(IndexError, match="max\\(\\): Expected reduction dim 1 to have non-zero size"):
        ember.zeros(2, 0).max(1)
    with pytest.raises(TypeError, match="max\\(\\): argument 'dim' must be int, not tuple"):
        ember.zeros(2, 3).max(dim=(0, 1))
    with pytest.raises(TypeError, match="argmax\\(\\): argument 'dim' \\(position 1\\) must be int, not tuple"):
        ember.zeros(2, 3).argmax((0, 1))
    assert ember.zeros(0, 3).max(1).values.shape == (0,)


# -- var / std ----------------------------------------------------------------------------------------------------
def test_var_std_correction_and_legacy_unbiased(device):
    x = ember.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=ember.float64, device=device)
    assert x.var().item() == pytest.approx(5 / 3) and x.var(correction=0).item() == pytest.approx(1.25)
    assert x.var(unbiased=False).item() == pytest.approx(1.25) and x.var(False).item() == pytest.approx(1.25)
    assert x.var(1, True).tolist() == pytest.approx([5 / 3]) and x.var(1, correction=2).item() == pytest.approx(2.5)
    assert x.std(1, unbiased=False, keepdim=True).tolist()[0] == pytest.approx([math.sqrt(1.25)])
    v, m = ember.var_mean(x, 1, correction=0)
    assert v.tolist() == pytest.approx([1.25]) and m.tolist() == [2.5]
    s, m = ember.std_mean(x, keepdim=True)
    assert s.shape == (1, 1) and m.item() == 2.5
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):  # one element, correction 1: nan and
        assert math.isnan(ember.ones(1, device=device).var().item())  # PyTorch's warning
    with pytest.raises(TypeError, match="either 'unbiased' \\(legacy\\) or 'correction'"):
        x.var(unbiased=True, correction=1)
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex dtypes"):
        ember.tensor([1, 2]).var()


def test_var_std_gradients(device):
    a = rand64(3, 4, device=device)
    assert a.var().grad_fn.name() == "VarBackward0" and a.std(1).grad_fn.name() == "StdBackward0"
    assert [t.grad_fn.name() for t in ember.var_mean(a, 1)] == ["VarMeanBackward0"] * 2
    assert [t.grad_fn.name() for t in ember.std_mean(a)] == ["StdMeanBackward0"] * 2
    for fn in (ember.var, lambda t: t.var(1, correction=0), lambda t: t.std(0, keepdim=True), ember.std,
               lambda t: ember.var_mean(t, 1), lambda t: ember.std_mean(t, (0, 1), correction=2),
               lambda t: ember.var_mean(t)[1]):
        check_grads(fn, a, gradgrad=True)


# -- logsumexp, norm (Tensor.norm is ember.linalg's; checked here as part of the reductions) ---------------------------
def test_logsumexp(device):
    x = ember.tensor([[1000.0, 1000.0], [-float("inf"), -float("inf")]], dtype=ember.float64, device=device)
    out = x.logsumexp(1)
    assert out[0].item() == pytest.approx(1000 + math.log(2)) and out[1].item() == -math.inf
    assert ember.logsumexp(ember.tensor([1, 2], device=device), 0).dtype == ember.float32
    a = rand64(3, 4, device=device)
    assert a.logsumexp(1).grad_fn.name() == "LogsumexpBackward0"
    check_grads(lambda t: t.logsumexp(1), a, gradgrad=True)
    check_grads(lambda t: ember.logsumexp(t, (0, 1), keepdim=True), a, gradgrad=True)
    with pytest.raises(TypeError):
        ember.logsumexp(a)  # dim is required, as in PyTorch


@pytest.mark.parametrize("p", ["fro", 2, 1, 3, 0.5, math.inf, -math.inf])
def test_norm_values_and_grads(p, device):
    a = rand64(3, 4, device=device, low=0.2, high=1.5)
    signs = ember.tensor(np.where(np.arange(12).reshape(3, 4) % 3 == 0, -1.0, 1.0), dtype=ember.float64,
                         device=device)
    a = (a * signs).detach().requires_grad_()
    arr = a.detach().numpy(force=True)
    ordn = 2 if p == "fro" else p
    np.testing.assert_allclose(a.norm(p).item(), np.linalg.norm(arr.ravel(), ordn))
    np.testing.assert_allclose(ember.norm(a, p, dim=1).detach().numpy(force=True), np.linalg.norm(arr, ordn, axis=1))
    assert a.norm(p, dim=0, keepdim=True).shape == (1, 4)
    assert a.norm(p).grad_fn.name() == "LinalgVectorNormBackward0"
    check_grads(lambda t: t.norm(p, dim=1), a)
    check_grads(lambda t: t.norm(p), a)


def test_norm_special_cases(device):
    z = ember.zeros(3, dtype=ember.float64, device=device, requires_grad=True)
    z.norm().backward()
    assert z.grad.tolist() == [0.0, 0.0, 0.0]
    x = ember.tensor([0.0, 2.0, -3.0], device=device)
    assert x.norm(0).item() == 2.0 and x.norm(dtype=ember.float64).dtype == ember.float64
    check_grads(lambda t: t.norm(), rand64(2, 3, device=device), gradgrad=True)
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or complex tensor as "
                                           "input. Got Long"):
        ember.tensor([1, 2]).norm()
    with pytest.raises((RuntimeError, TypeError), match="abc|str"):
        x.norm("abc")


# -- scans ----------------------------------------------------------------------------------------------------------
def test_cumsum_cumprod(device):
    x = ember.tensor([[1, 2, 3], [4, 5, 6]], dtype=ember.int32, device=device)
    assert x.cumsum(1).tolist() == [[1, 3, 6], [4, 9, 15]] and x.cumsum(0).dtype == ember.int64
    assert x.cumprod(-1).tolist() == [[1, 2, 6], [4, 20, 120]]
    assert x.cumsum(1, dtype=ember.float64).dtype == ember.float64
    assert ember.tensor([True, True], device=device).cumsum(0).tolist() == [1, 2]
    assert ember.tensor(3.0, device=device).cumsum(0).item() == 3.0
    a = rand64(3, 4, device=device)
    assert a.cumsum(0).grad_fn.name() == "CumsumBackward0" and a.cumprod(1).grad_fn.name() == "CumprodBackward0"
    for dim in (0, 1, -1):
        check_grads(lambda t: t.cumsum(dim), a, gradgrad=True)
        check_grads(lambda t: t.cumprod(dim), a, gradgrad=True)
    zeros = ember.tensor([[2.0, 0.0, 3.0, 0.0], [0.0, 1.0, 2.0, 3.0]], dtype=ember.float64, device=device,
                         requires_grad=True)
    check_grads(lambda t: t.cumprod(1), zeros)
    with pytest.raises(TypeError):
        a.cumsum()
    with pytest.raises(IndexError, match="Dimension out of range"):
        a.cumsum(2)


# -- all / any / count_nonzero --------------------------------------------------------------------------------------
def test_all_any_count_nonzero(device):
    x = ember.tensor([[1, 0], [2, 3]], device=device)
    assert x.all().item() is False and x.any().item() is True
    assert x.all(1).tolist() == [False, True] and x.any(0, keepdim=True).tolist() == [[True, True]]
    assert x.all(dim=(0, 1)).dtype == ember.bool_
    u = ember.tensor([1, 2], dtype=ember.uint8, device=device)
    assert u.all().dtype == ember.uint8 and u.all().item() == 1
    assert ember.count_nonzero(x).item() == 3 and x.count_nonzero(dim=0).tolist() == [2, 1]
    assert x.count_nonzero((0, 1)).dtype == ember.int64
    f = ember.tensor([0.0, float("nan")], device=device)
    assert f.any().item() is True and f.all().item() is False


# -- reductions that skip NaN ----------------------------------------------------------------------------------
def test_nansum_nanmean_values_grads_and_names(device):
    nan = float("nan")
    x = ember.tensor([[1., nan, 2.], [nan, nan, nan], [float("inf"), 1., nan]], device=device, requires_grad=True)
    assert ember.nansum(x).item() == float("inf") and ember.nansum(x, 1).tolist() == [3.0, 0.0, float("inf")]
    assert str(x.nanmean(1).tolist()) == "[1.5, nan, inf]"  # all NaN: NaN, as PyTorch
    total = ember.nansum(x, 1)
    assert total.grad_fn.name() == "NansumBackward0"
    total.sum().backward()
    assert x.grad.tolist() == [[1., 0., 1.], [0., 0., 0.], [1., 1., 0.]]  # NaN gets no gradient
    x.grad = None
    ember.nanmean(x, 0, keepdim=True).sum().backward()
    assert x.grad.tolist() == [[0.5, 0., 1.], [0., 0., 0.], [0.5, 1., 0.]]
    check_grads(lambda t: ember.nansum(t, 0), rand64(3, 2, device=device, seed=3))
    check_grads(lambda t: ember.nanmean(t, 1, keepdim=True), rand64(3, 2, device=device, seed=4))
    assert ember.nansum(ember.tensor([1, 2], device=device)).dtype == ember.int64
    with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating point or complex dtype "
                                           "but got Long"):
        ember.nanmean(ember.tensor([1, 2], device=device))


@settings(max_examples=40, deadline=None)
@given(arr=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                      elements=st.one_of(st.floats(-3, 3), st.just(float("nan")))), data=st.data())
def test_nansum_nanmean_match_numpy(arr, data):
    dim = data.draw(st.one_of(st.none(), st.integers(-arr.ndim, arr.ndim - 1)))
    keepdim = data.draw(st.booleans())
    x = ember.tensor(arr)
    np.testing.assert_allclose(ember.nansum(x, dim, keepdim).numpy(), np.nansum(arr, axis=dim, keepdims=keepdim),
                               rtol=1e-12, atol=1e-12)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns on slices of NaN only
        want = np.nanmean(arr, axis=dim, keepdims=keepdim)
    np.testing.assert_allclose(ember.nanmean(x, dim, keepdim).numpy(), want, rtol=1e-12, atol=1e-12)


def test_aminmax(device):
    x = ember.tensor([[1., 5.], [3., 2.]], device=device, requires_grad=True)
    whole = x.aminmax()
    assert type(whole).__name__ == "aminmax" and whole.min.item() == 1.0 and whole.max.item() == 5.0
    kept = ember.aminmax(x, keepdim=True)
    assert tuple(kept.min.shape) == (1, 1) and kept.max.tolist() == [[5.0]]
    (whole.min + whole.max).backward()
    assert x.grad.tolist() == [[1., 1.], [0., 0.]]
    with pytest.raises(RuntimeError, match="aminmax\\(\\): cannot compute aminmax over an empty dimension"):
        ember.aminmax(ember.tensor([], device=device))
