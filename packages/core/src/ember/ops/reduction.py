"""Reductions over dimensions: ``sum``, ``mean`` (more in this family to come in the same file).

``dim`` may be an int, a tuple of ints or ``None`` (all); ``keepdim`` keeps
reduced dimensions with size 1.

>>> import ember
>>> ember.tensor([[1., 2.], [3., 4.]]).sum(dim=0)
tensor([4., 6.])
"""
from __future__ import annotations

from .. import _dtype as dt
from ..autograd.function import Op
from ._common import Tensor, tensor_method, wrap_dim
from .view import Expand

__all__ = ["sum", "mean"]


def norm_dims(dim, ndim) -> tuple | None:
    """``dim`` as a sorted tuple of non-negative ints, or ``None`` for all dimensions."""
    if dim is None:
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
    @staticmethod
    def forward(ctx, xp, a, dims=None, keepdim=False, dtype=None):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        return xp.sum(a, axis=dims, keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, g):
        return expand_back(g, ctx.shape, ctx.dims, ctx.keepdim)


class Mean(Op):
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


@tensor_method()
def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001 - PyTorch's name
    """Sum of elements over ``dim`` (all by default); bools and ints sum to int64."""
    dims = norm_dims(dim, input._data.ndim)
    if dtype is None and input._dtype.category < 2:
        dtype = dt.int64
    nat = None if dtype is None else input._device.backend.native_dtype(dtype)
    if nat is None:
        return Sum.apply(input, dims=dims, keepdim=keepdim) if dims or keepdim else Sum.apply(input)
    return Sum.apply(input, dims=dims, keepdim=keepdim, dtype=nat)


@tensor_method()
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim`` (all by default); needs a floating dtype, as in PyTorch."""
    if dtype is not None:
        input = input.to(dtype)
    if input._dtype.category < 2:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {input._dtype.name.capitalize()}")
    return Mean.apply(input, dims=norm_dims(dim, input._data.ndim), keepdim=keepdim)
