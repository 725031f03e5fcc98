"""Sorting and selection: ``sort``, ``argsort``, ``msort``, ``topk``, ``kthvalue``, ``median``, ``nanmedian``,
``unique``.

Sorts are stable (equal elements keep their order, also when descending) and
put NaN last ascending, first descending, as PyTorch does. The gradient of the
sorted values goes back to the positions they came from.

>>> import ember
>>> ember.sort(ember.tensor([3., 1., 2.]))
ember.return_types.sort(
values=tensor([1., 2., 3.]),
indices=tensor([1, 2, 0]))
>>> ember.topk(ember.tensor([3., 1., 2.]), 2).indices
tensor([0, 2])
"""
from __future__ import annotations

import math

from ..autograd.function import Op
from ..return_types import kthvalue as KthvalueResult
from ..return_types import median as MedianResult
from ..return_types import nanmedian as NanmedianResult
from ..return_types import sort as SortResult
from ..return_types import topk as TopkResult
from ._common import Tensor, tensor_method, wrap_dim
from .creation import full

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "unique"]


def _argsort(xp, a, axis, descending):
    """A stable argsort; descending sorts the reversed array and reverses back, so ties keep their order."""
    if not descending:
        return xp.argsort(a, axis=axis, stable=True)
    n = a.shape[axis]
    flipped = xp.argsort(xp.flip(a, axis=axis), axis=axis, stable=True)
    return (n - 1) - xp.flip(flipped, axis=axis)


def _inverse_permutation(xp, perm, axis):
    return xp.argsort(perm, axis=axis)


class PermuteAlongDim(Op):
    """``take_along_axis`` with a permutation; its gradient is the same op with the inverse permutation."""

    name_ = "permutealongdim"

    @staticmethod
    def forward(ctx, xp, a, perm=None, inverse=None, dim=0):
        ctx.perm, ctx.inverse, ctx.dim = perm, inverse, dim
        return xp.take_along_axis(a, perm, axis=dim)

    @staticmethod
    def backward(ctx, g):
        return PermuteAlongDim.apply(g, perm=ctx.inverse, inverse=ctx.perm, dim=ctx.dim)


class PadAlongDim(Op):
    """Zeros appended along ``dim`` up to ``size`` (the adjoint of keeping the first entries)."""

    name_ = "padalongdim"

    @staticmethod
    def forward(ctx, xp, a, dim=0, size=0):
        ctx.dim, ctx.k = dim, a.shape[dim]
        shape = list(a.shape)
        shape[dim] = size - ctx.k
        return xp.concat([a, xp.zeros(tuple(shape), dtype=a.dtype)], axis=dim)

    @staticmethod
    def backward(ctx, g):
        return NarrowAlongDim.apply(g, dim=ctx.dim, k=ctx.k)


class NarrowAlongDim(Op):
    """The first ``k`` entries along ``dim``."""

    name_ = "narrowalongdim"

    @staticmethod
    def forward(ctx, xp, a, dim=0, k=0):
        ctx.dim, ctx.size = dim, a.shape[dim]
        return a[(slice(None),) * dim + (slice(0, k), ...)]

    @staticmethod
    def backward(ctx, g):
        return PadAlongDim.apply(g, dim=ctx.dim, size=ctx.size)


class Sort(Op):
    """Values and indices of the first ``k`` entries of the sorted order (all of them for ``sort``)."""
    name_ = "sort"
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a, dim=-1, descending=False, k=None):
        scalar = a.ndim == 0
        if scalar:
            a = xp.reshape(a, (1,))
        perm = _argsort(xp, a, dim, descending)
        ctx.perm, ctx.dim, ctx.scalar = perm, dim, scalar
        if k is not None:
            perm = perm[(slice(None),) * dim + (slice(0, k), ...)]
        values, indices = xp.take_along_axis(a, perm, axis=dim), xp.astype(perm, xp.int64)
        if scalar:
            return xp.reshape(values, ()), xp.reshape(indices, ())
        return values, indices

    @staticmethod
    def backward(ctx, g, g_indices):
        xp = g._device.backend.xp
        if ctx.scalar:
            return g
        dim, n = ctx.dim, ctx.perm.shape[ctx.dim]
        if g.shape[dim] != n:
            g = PadAlongDim.apply(g, dim=dim, size=n)
        inverse = _inverse_permutation(xp, ctx.perm, dim)
        return PermuteAlongDim.apply(g, perm=inverse, inverse=ctx.perm, dim=dim)


class SortStable(Sort):
    name_ = "sortstable"
    backward_name = "SortBackward1"


class Topk(Sort):
    name_ = "topk"
    pass


class Kthvalue(Op):
    name_ = "kthvalue"
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a, k=1, dim=-1, keepdim=False):
        perm = _argsort(xp, a, dim, False)
        return _picked(ctx, xp, a, perm[(slice(None),) * dim + (slice(k - 1, k), ...)], dim, keepdim)

    @staticmethod
    def backward(ctx, g, g_indices):
        xp = g._device.backend.xp
        if not ctx.keepdim:
            shape = list(g.shape)
            shape.insert(ctx.dim, 1)
            g = g.reshape(shape)
        positions = xp.reshape(xp.arange(ctx.n), (ctx.n,) + (1,) * (ctx.pick.ndim - ctx.dim - 1))
        hit = Tensor._make(xp.astype(positions == ctx.pick, g._data.dtype), g._device)
        return g * hit


def _picked(ctx, xp, a, pick, dim, keepdim):
    """The values of ``a`` at the positions ``pick`` (one per slice along ``dim``) and those positions."""
    ctx.pick, ctx.dim, ctx.keepdim, ctx.n = pick, dim, keepdim, a.shape[dim]
    values, indices = xp.take_along_axis(a, pick, axis=dim), xp.astype(pick, xp.int64)
    if not keepdim:
        values, indices = xp.squeeze(values, axis=dim), xp.squeeze(indices, axis=dim)
    return values, indices


class Median(Kthvalue):
    """The lower median along ``dim`` and where it is; a slice holding NaN gives its first NaN."""

    name_ = "median"
    backward_name = "MedianBackward1"
    ignores_nan = False

    @staticmethod
    def forward(ctx, xp, a, dim=-1, keepdim=False):
        perm = _argsort(xp, a, dim, False)  # NaN sort last, in their order
        n = a.shape[dim]
        nans = xp.sum(xp.astype(xp.isnan(a), xp.int64), axis=dim, keepdims=True)
        if type(ctx).ignores_nan:
            pos = xp.where(nans < n, (n - nans - 1) // 2, xp.zeros_like(nans))
        else:
            pos = xp.where(nans > 0, n - nans, xp.full_like(nans, (n - 1) // 2))
        return _picked(ctx, xp, a, xp.take_along_axis(perm, pos, axis=dim), dim, keepdim)


class MedianAll(Median):
    name_ = "median_all"
    backward_name = "MedianBackward0"


class Nanmedian(Median):
    """The lower median of the values that are not NaN (NaN if there are none)."""

    name_ = "nanmedian"
    backward_name = "NanmedianBackward1"
    ignores_nan = True


class NanmedianAll(Nanmedian):
    name_ = "nanmedian_all"
    backward_name = "NanmedianBackward0"


def _median(name, whole, along, result, input, dim, keepdim):
    _check_sortable(name, input)
    if dim is None:
        if input.numel() == 0:
            return full((), math.nan, dtype=input.dtype, device=input.device)
        return whole.apply(input.reshape(-1), dim=0, keepdim=False)[0]
    if input.ndim == 0:
        wrap_dim(dim, 1)
        return result(*along.apply(input.reshape(1), dim=0, keepdim=False))
    dim = wrap_dim(dim, input.ndim)
    if input.shape[dim] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    return result(*along.apply(input, dim=dim, keepdim=keepdim))


@tensor_method()
def median(input, dim=None, keepdim=False):
    """The lower median: of the two middle values, the smaller. NaN where a slice holds NaN.

    Without ``dim``, of all elements (a tensor; NaN for an empty one); with ``dim``, ``(values, indices)``
    along it. The gradient goes to the element picked.

    >>> import ember
    >>> ember.median(ember.tensor([1.0, 5.0, 2.0, 8.0]))
    tensor(2.)
    >>> ember.median(ember.tensor([[3.0, 1.0, 2.0]]), dim=1)
    ember.return_types.median(
    values=tensor([2.]),
    indices=tensor([2]))
    """
    return _median("median", MedianAll, Median, MedianResult, input, dim, keepdim)


@tensor_method()
def nanmedian(input, dim=None, keepdim=False):
    """:func:`median` of the values that are not NaN (NaN where all are).

    >>> import ember
    >>> ember.nanmedian(ember.tensor([3.0, float("nan"), 1.0]))
    tensor(1.)
    """
    return _median("nanmedian", NanmedianAll, Nanmedian, NanmedianResult, input, dim, keepdim)


def _check_sortable(fn, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' must be Tensor, not {type(input).__name__}")


@tensor_method()
def sort(input, dim=-1, descending=False, *, stable=False):
    """``(values, indices)``: ``input`` sorted along ``dim`` and where each value came from.

    The sort is always stable (``stable`` is accepted for PyTorch compatibility).

    >>> import ember
    >>> ember.sort(ember.tensor([[2., 1., 2.]]), descending=True).indices
    tensor([[0, 2, 1]])
    """
    _check_sortable("sort", input)
    dim = wrap_dim(dim, input.ndim)
    op = SortStable if stable else Sort
    return SortResult(*op.apply(input, dim=dim, descending=bool(descending)))


@tensor_method()
def argsort(input, dim=-1, descending=False, *, stable=False):
    """The indices that sort ``input`` along ``dim`` (stable).

    >>> import ember
    >>> ember.argsort(ember.tensor([3, 1, 2]))
    tensor([1, 2, 0])
    """
    return sort(input, dim, descending).indices


@tensor_method()
def msort(input):
    """``input`` sorted along its first dimension.

    >>> import ember
    >>> ember.msort(ember.tensor([[2., 0.], [1., 3.]]))
    tensor([[1., 0.],
            [2., 3.]])
    """
    return sort(input, 0).values


@tensor_method()
def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - PyTorch's name
    """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) entries along ``dim``.

    Ties keep their original order; results are always sorted.

    >>> import ember
    >>> ember.topk(ember.tensor([1., 5., 3.]), 2)
    ember.return_types.topk(
    values=tensor([5., 3.]),
    indices=tensor([1, 2]))
    """
    _check_sortable("topk", input)
    dim = wrap_dim(dim, input.ndim)
    n = input.shape[dim] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    return TopkResult(*Topk.apply(input, dim=dim, descending=bool(largest), k=k))


@tensor_method()
def kthvalue(input, k, dim=-1, keepdim=False):
    """``(values, indices)`` of the ``k``-th smallest entry along ``dim`` (``k`` counts from 1).

    >>> import ember
    >>> ember.kthvalue(ember.tensor([3., 1., 2.]), 2)
    ember.return_types.kthvalue(
    values=tensor(2.),
    indices=tensor(2))
    """
    _check_sortable("kthvalue", input)
    if input.ndim == 0:
        if k != 1:
            raise RuntimeError("kthvalue(): selected number k out of range for dimension 0")
        return KthvalueResult(*Kthvalue.apply(input.reshape(1), k=1, dim=0, keepdim=False))
    dim = wrap_dim(dim, input.ndim)
    if not 1 <= k <= input.shape[dim]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    return KthvalueResult(*Kthvalue.apply(input, k=k, dim=dim, keepdim=keepdim))


class Unique2(Op):
    """Sorted distinct values of the flattened input, with inverse indices and counts (not differentiable)."""
    name_ = "unique2"
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a):
        values, _, inverse, counts = xp.unique_all(xp.reshape(a, (-1,)))
        order = xp.argsort(values, stable=True)  # the standard leaves the order unspecified
        rank = xp.argsort(order)
        inverse = xp.reshape(xp.take(rank, xp.reshape(inverse, (-1,))), a.shape)
        return (xp.take(values, order), xp.astype(inverse, xp.int64),
                xp.astype(xp.take(counts, order), xp.int64))

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for 'unique' is not implemented.")


class UniqueDim(Op):
    """Distinct slices along ``dim`` (NumPy backend only: the array API has no lexicographic unique)."""
    name_ = "uniquedim"
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a, dim=0):
        values, inverse, counts = xp.unique(a, axis=dim, return_inverse=True, return_counts=True)
        return values, xp.astype(xp.reshape(inverse, (-1,)), xp.int64), xp.astype(counts, xp.int64)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for 'unique_dim' is not implemented.")


@tensor_method()
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct elements of ``input`` (of the flattened input, or the distinct slices along ``dim``),
    sorted; optionally also ``inverse`` indices (``output[inverse]`` rebuilds ``input``) and ``counts``.

    ``unique`` has no gradient (as in PyTorch). ``dim`` needs the NumPy backend.

    >>> import ember
    >>> ember.unique(ember.tensor([3, 1, 3, 2]), return_counts=True)
    (tensor([1, 2, 3]), tensor([1, 1, 2]))
    """
    _check_sortable("unique", input)
    if dim is None:
        values, inverse, counts = Unique2.apply(input)
    else:
        values, inverse, counts = UniqueDim.apply(input, dim=wrap_dim(dim, input.ndim))
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out
