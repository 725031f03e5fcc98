"""Reductions that skip NaN: ``nansum`` and ``nanmean`` (``nanmedian`` is with the sorting ops).

A NaN counts as 0 in ``nansum`` and not at all in ``nanmean``; it gets no gradient.

>>> import ember
>>> x = ember.tensor([1.0, float("nan"), 2.0])
>>> ember.nansum(x), ember.nanmean(x)
(tensor(3.), tensor(1.5000))
"""
from __future__ import annotations

from .. import _dtype as dt
from ..autograd.function import Op
from ._common import tensor_method
from .reduction import expand_back, norm_dims

__all__ = ["nansum", "nanmean"]


class Nansum(Op):
    name_ = "nansum"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, dims=None, keepdim=False, dtype=None):
        ctx.dims, ctx.keepdim = dims, keepdim
        kept = xp.where(xp.isnan(a), xp.zeros_like(a), a)
        return xp.sum(kept, axis=dims, keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return expand_back(g, a.shape, ctx.dims, ctx.keepdim) * ~a.isnan()


@tensor_method()
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over ``dim`` (all by default) with NaN counted as 0; bools and integers sum to int64, as :func:`sum`.

    >>> import ember
    >>> ember.nansum(ember.tensor([[1.0, float("nan")], [2.0, 3.0]]), dim=1)
    tensor([1., 5.])
    """
    if dtype is None and not input._dtype.is_floating_point:
        dtype = dt.int64
    if input._dtype is dt.bool_:
        input = input.to(dtype)  # the array API sums numbers only
    nat = None if dtype is None else input._device.backend.native_dtype(dtype)
    return Nansum.apply(input, dims=norm_dims(dim, input._data.ndim), keepdim=keepdim, dtype=nat)


@tensor_method()
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim`` (all by default) of the values that are not NaN (NaN where all are); floats only.

    >>> import ember
    >>> ember.nanmean(ember.tensor([[1.0, float("nan")], [2.0, 3.0]]), dim=1)
    tensor([1.0000, 2.5000])
    """
    if dtype is not None:
        input = input.to(dtype)
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input._dtype.scalar_type_name}")
    return nansum(input, dim, keepdim) / (~input.isnan()).sum(dim, keepdim)
