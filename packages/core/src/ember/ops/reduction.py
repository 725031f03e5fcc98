"""Reductions over dimensions: ``sum``, ``mean``, ``prod``, ``all``, ``any``, ``count_nonzero``, ``logsumexp``,
and the scans ``cumsum`` and ``cumprod``.

``max``/``min``/``arg*`` live in ``minmax.py``; ``var``/``std``/``norm`` in ``statistics.py``.

``dim`` may be an int, a tuple of ints or ``None`` (all); ``keepdim`` keeps
reduced dimensions with size 1.

>>> import ember
>>> ember.tensor([[1., 2.], [3., 4.]]).sum(dim=0)
tensor([4., 6.])
"""
from __future__ import annotations

from .. import _dtype as dt
from ..autograd.function import Op
from ..autograd.grad_mode import STATE
from ._common import Tensor, tensor_method, wrap_dim
from .pointwise import float_input
from .view import Expand

__all__ = ["sum", "mean", "prod", "all", "any", "count_nonzero", "logsumexp", "cumsum", "cumprod"]


def norm_dims(dim, ndim) -> tuple | None:
    """``dim`` as a sorted tuple of non-negative ints, or ``None`` for all dimensions."""
    if dim is None:
        return None
    if ndim == 0:  # a 0-dim tensor accepts dim 0 or -1; reducing it over "all" is the same
        for d in ((dim,) if isinstance(dim, int) else dim):
            wrap_dim(d, ndim)
        return None
    if isinstance(dim, int):
        return (wrap_dim(dim, ndim),)
    dims = tuple(sorted(wrap_dim(d, ndim) for d in dim))
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {list(dim)} appears multiple times in the list of dims")
    return dims or None


def expand_back(g, in_shape, dims, keepdim):
    """Broadcast a reduced gradient ``g`` back to ``in_shape``."""
    if not keepdim and dims is not None and len(in_shape):
        kept = list(in_shape)
        for d in dims:
            kept[d] = 1
        g = g.reshape(kept)
    return Expand.apply(g, shape=tuple(in_shape))


class Sum(Op):
    name_ = "sum"
    dims = None
    keepdim = False

    @staticmethod
    def forward(ctx, xp, a, dims=None, keepdim=False, dtype=None):
        ctx.shape = a.shape
        if dims is None and not keepdim:  # the whole tensor: the common case, kept short
            return xp.sum(a, dtype=dtype)
        ctx.dims, ctx.keepdim = dims, keepdim
        return xp.sum(a, axis=dims, keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, g):
        if ctx.dims is None and not ctx.keepdim:
            if not STATE.enabled:  # no graph of the backward: the broadcast view of g itself, without an op
                return Tensor._make_view(g, g._device.backend.xp.broadcast_to(g._data, ctx.shape))
            return Expand.apply1(g, {"shape": ctx.shape})
        return expand_back(g, ctx.shape, ctx.dims, ctx.keepdim)


class SumDim(Sum):
    name_ = "sum_dim"
    backward_name = "SumBackward1"


class Mean(Op):
    name_ = "mean"

    @staticmethod
    def forward(ctx, xp, a, dims=None, keepdim=False):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        n = 1
        for d in (dims if dims is not None else range(a.ndim)):
            n *= a.shape[d]
        ctx.n = n
        return xp.mean(a, axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        return expand_back(g / ctx.n, ctx.shape, ctx.dims, ctx.keepdim)


class MeanDim(Mean):
    name_ = "mean_dim"
    backward_name = "MeanBackward1"


_sum_all = Sum.apply1  # bound once, as arith's operators


@tensor_method()
def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001 - PyTorch's name
    """Sum of elements over ``dim`` (all by default); bools and ints sum to int64."""
    if dim is None and not keepdim and dtype is None and input._dtype.is_floating_point:
        return _sum_all(input)  # the common case, kept short
    dims = norm_dims(dim, input._data.ndim)
    if dtype is None and not input._dtype.is_floating_point:
        dtype = dt.int64
    if input._dtype is dt.bool_:
        input = input.to(dtype)  # the array API sums numbers only
    nat = None if dtype is None else input._device.backend.native_dtype(dtype)
    return (Sum if dim is None else SumDim).apply(input, dims=dims, keepdim=keepdim, dtype=nat)


@tensor_method()
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim`` (all by default); needs a floating dtype, as in PyTorch."""
    if dtype is not None:
        input = input.to(dtype)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {input._dtype.scalar_type_name}")
    op = Mean if dim is None else MeanDim
    return op.apply(input, dims=norm_dims(dim, input._data.ndim), keepdim=keepdim)


def _int_sum_dtype(input, dtype):
    """PyTorch's rule for sum-like ops: bool and integer inputs accumulate in int64 unless told otherwise."""
    if dtype is None and not input._dtype.is_floating_point:
        return dt.int64
    return dtype


def _slice(xp, a, axis, start, stop):
    return a[(slice(None),) * axis + (slice(start, stop),)]


def _products_of_others(xp, a, axis):
    """For each element, the product of the other elements along ``axis`` (exact where ``a`` has zeros)."""
    n = a.shape[axis]
    left = _slice(xp, xp.cumulative_prod(a, axis=axis, include_initial=True), axis, 0, n)
    flipped = xp.cumulative_prod(xp.flip(a, axis=axis), axis=axis, include_initial=True)
    return left * xp.flip(_slice(xp, flipped, axis, 0, n), axis=axis)


class Prod(Op):
    name_ = "prod"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, dim=None, keepdim=False, dtype=None):
        ctx.shape, ctx.dim, ctx.keepdim = a.shape, dim, keepdim
        return xp.prod(a, axis=dim, keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        dims = None if ctx.dim is None else (ctx.dim,)
        g = expand_back(g, ctx.shape, dims, ctx.keepdim)
        if not (a == 0).any():
            return g * expand_back(ctx.saved_output, ctx.shape, dims, ctx.keepdim) / a
        # with zeros, out / a is 0/0: take the products of the other elements instead
        # (computed as a constant, so a second derivative through a zero is not tracked)
        xp = a._device.backend.xp
        data = a._data if dims is not None else xp.reshape(a._data, (-1,))
        others = _products_of_others(xp, data, ctx.dim or 0)
        return g * Tensor._make(xp.reshape(others, a._data.shape), a._device)


class ProdDim(Prod):
    name_ = "prod_dim"
    backward_name = "ProdBackward1"


@tensor_method()
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product of elements (all, or along one ``dim``); bools and ints multiply in int64.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).prod(dim=1)
    tensor([ 2, 12])
    """
    if dim is not None and not isinstance(dim, int):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__} (prod reduces one "
                        "dimension or all of them)")
    dtype = _int_sum_dtype(input, dtype)
    if dtype is not None and dtype is not input._dtype:
        input = input.to(dtype)
    if dim is None or input._data.ndim == 0:
        if dim is not None:
            wrap_dim(dim, 0)
        return Prod.apply(input)
    return ProdDim.apply(input, dim=wrap_dim(dim, input._data.ndim), keepdim=keepdim)


class All(Op):
    name_ = "all"

    @staticmethod
    def forward(ctx, xp, a, dims=None, keepdim=False):
        out = xp.all(a if a.dtype == xp.bool else a != 0, axis=dims, keepdims=keepdim)
        return xp.astype(out, xp.uint8) if a.dtype == xp.uint8 else out


class Any(Op):
    name_ = "any"

    @staticmethod
    def forward(ctx, xp, a, dims=None, keepdim=False):
        out = xp.any(a if a.dtype == xp.bool else a != 0, axis=dims, keepdims=keepdim)
        return xp.astype(out, xp.uint8) if a.dtype == xp.uint8 else out


@tensor_method()
def all(input, dim=None, keepdim=False):  # noqa: A001 - PyTorch's name
    """True if every element (over ``dim``) is nonzero; uint8 inputs give uint8, others bool.

    >>> import ember
    >>> ember.tensor([[1, 0], [2, 3]]).all(dim=1)
    tensor([False,  True])
    """
    return All.apply(input, dims=norm_dims(dim, input._data.ndim), keepdim=keepdim)


@tensor_method()
def any(input, dim=None, keepdim=False):  # noqa: A001 - PyTorch's name
    """True if any element (over ``dim``) is nonzero; uint8 inputs give uint8, others bool.

    >>> import ember
    >>> ember.tensor([[0, 0], [0, 3]]).any(dim=1)
    tensor([False,  True])
    """
    return Any.apply(input, dims=norm_dims(dim, input._data.ndim), keepdim=keepdim)


class CountNonzero(Op):
    name_ = "countnonzero"

    @staticmethod
    def forward(ctx, xp, a, dims=None):
        return xp.sum(xp.astype(a != 0, xp.int64), axis=dims)


@tensor_method()
def count_nonzero(input, dim=None):
    """The number of nonzero elements (over ``dim``, an int or a tuple), as int64.

    >>> import ember
    >>> ember.count_nonzero(ember.tensor([[0, 1], [2, 3]]), dim=0)
    tensor([1, 2])
    """
    return CountNonzero.apply(input, dims=norm_dims(dim, input._data.ndim))


class Logsumexp(Op):
    name_ = "logsumexp"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, dims=None, keepdim=False):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        if a.size == 0:
            return xp.log(xp.sum(xp.exp(a), axis=dims, keepdims=keepdim))
        m = xp.max(a, axis=dims, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))  # all -inf (or inf) slices: no shift
        out = xp.log(xp.sum(xp.exp(a - m), axis=dims, keepdims=True)) + m
        return out if keepdim else xp.reshape(out, _reduced_shape(a.shape, dims))

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        out = expand_back(ctx.saved_output, ctx.shape, ctx.dims, ctx.keepdim)
        return expand_back(g, ctx.shape, ctx.dims, ctx.keepdim) * (a - out).exp()


def _reduced_shape(shape, dims):
    return () if dims is None else tuple(s for i, s in enumerate(shape) if i not in dims)


@tensor_method()
def logsumexp(input, dim, keepdim=False):
    """``log(exp(input).sum(dim))`` without overflow (the maximum is factored out); ints give floats.

    >>> import ember
    >>> ember.logsumexp(ember.tensor([1000.0, 1000.0], dtype=ember.float64), dim=0)
    tensor(1000.6931, dtype=ember.float64)
    """
    input = float_input(input)
    return Logsumexp.apply(input, dims=norm_dims(dim, input._data.ndim), keepdim=keepdim)


# -- scans ---------------------------------------------------------------------------------------------------------
def _scan_input(input, dim, dtype):
    dtype = _int_sum_dtype(input, dtype)
    if dtype is not None and dtype is not input._dtype:
        input = input.to(dtype)
    if input._data.ndim == 0:
        wrap_dim(dim, 0)
        return input.reshape(1), 0
    return input, wrap_dim(dim, input._data.ndim)


def _reverse_cumsum(g, dim):
    """``flip(cumsum(flip(g)))``: each element gets the sum of itself and everything after it."""
    return g.sum(dim, keepdim=True) - g.cumsum(dim) + g


class Cumsum(Op):
    name_ = "cumsum"

    @staticmethod
    def forward(ctx, xp, a, dim=0):
        ctx.dim = dim
        return xp.cumulative_sum(a, axis=dim)

    @staticmethod
    def backward(ctx, g):
        return _reverse_cumsum(g, ctx.dim)


@tensor_method()
def cumsum(input, dim, *, dtype=None):
    """Running sums along ``dim``; bools and ints accumulate in int64.

    >>> import ember
    >>> ember.tensor([[1, 2, 3]]).cumsum(dim=1)
    tensor([[1, 3, 6]])
    """
    shape = input.shape
    input, dim = _scan_input(input, dim, dtype)
    out = Cumsum.apply(input, dim=dim)
    return out.reshape(shape) if len(shape) == 0 else out


class Cumprod(Op):
    name_ = "cumprod"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, dim=0):
        ctx.dim = dim
        return xp.cumulative_prod(a, axis=dim)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        if not (a == 0).any():
            return _reverse_cumsum(g * ctx.saved_output, ctx.dim) / a
        # with zeros: grad_k = (product before k) * R_k, R_k = g_k + a_{k+1} R_{k+1} (a constant, see Prod)
        xp = a._device.backend.xp
        ad, gd = xp.moveaxis(a._data, ctx.dim, -1), xp.moveaxis(g._data, ctx.dim, -1)
        n = ad.shape[-1]
        before = xp.cumulative_prod(ad, axis=-1, include_initial=True)
        r = gd[..., n - 1]
        cols = [before[..., n - 1] * r]
        for k in range(n - 2, -1, -1):
            r = gd[..., k] + ad[..., k + 1] * r
            cols.append(before[..., k] * r)
        grad = xp.moveaxis(xp.stack(cols[::-1], axis=-1), -1, ctx.dim)
        return Tensor._make(grad, a._device)


@tensor_method()
def cumprod(input, dim, *, dtype=None):
    """Running products along ``dim``; bools and ints accumulate in int64.

    >>> import ember
    >>> ember.tensor([1, 2, 3, 4]).cumprod(dim=0)
    tensor([ 1,  2,  6, 24])
    """
    shape = input.shape
    input, dim = _scan_input(input, dim, dtype)
    out = Cumprod.apply(input, dim=dim)
    return out.reshape(shape) if len(shape) == 0 else out
