"""Spread: ``var``, ``std``, ``var_mean`` and ``std_mean`` (norms live in :mod:`ember.linalg`).

``correction`` is the number subtracted from the element count in the
denominator (1: Bessel's unbiased estimate, the default; 0: the population
value); the legacy ``unbiased=True/False`` means ``correction=1/0``.

>>> import ember
>>> x = ember.tensor([1.0, 2.0, 3.0, 4.0])
>>> x.var()
tensor(1.6667)
>>> x.var(correction=0)
tensor(1.2500)
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd.function import Op
from ._common import Tensor
from .reduction import expand_back, norm_dims

__all__ = ["var", "std", "var_mean", "std_mean"]


def _count(shape, dims):
    return math.prod(shape[d] for d in (dims if dims is not None else range(len(shape))))


def _moments(ctx, xp, a, dims, correction, keepdim):
    """(variance, mean) of ``a`` over ``dims``; records what backward needs on ``ctx``."""
    n = _count(a.shape, dims)
    ctx.shape, ctx.dims, ctx.keepdim, ctx.n, ctx.denom = a.shape, dims, keepdim, n, max(n - correction, 0)
    mean = xp.mean(a, axis=dims, keepdims=True)
    d = a - mean
    with np.errstate(divide="ignore", invalid="ignore"):  # too few elements: inf or nan, as in PyTorch
        v = xp.sum(d * d, axis=dims, keepdims=keepdim) / ctx.denom
    if not keepdim:
        mean = xp.reshape(mean, v.shape)
    return v, mean


def _var_grad(ctx, a, g_var):
    """d var / d a applied to ``g_var`` (a reduced-shape gradient)."""
    centered = a - a.mean(ctx.dims if ctx.dims is not None else tuple(range(a.ndim)), keepdim=True)
    return expand_back(g_var, ctx.shape, ctx.dims, ctx.keepdim) * centered * (2.0 / ctx.denom)


class Var(Op):
    name_ = "var"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, dims=None, correction=1, keepdim=False):
        return _moments(ctx, xp, a, dims, correction, keepdim)[0]

    @staticmethod
    def backward(ctx, g):
        return _var_grad(ctx, ctx.saved_tensors[0], g)


class Std(Op):
    name_ = "std"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, dims=None, correction=1, keepdim=False):
        return xp.sqrt(_moments(ctx, xp, a, dims, correction, keepdim)[0])

    @staticmethod
    def backward(ctx, g):
        return _var_grad(ctx, ctx.saved_tensors[0], g / (2 * ctx.saved_output))


class VarMean(Op):
    name_ = "varmean"
    saves_inputs = True
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a, dims=None, correction=1, keepdim=False):
        return _moments(ctx, xp, a, dims, correction, keepdim)

    @staticmethod
    def backward(ctx, g_var, g_mean):
        a, = ctx.saved_tensors
        return _var_grad(ctx, a, g_var) + expand_back(g_mean / ctx.n, ctx.shape, ctx.dims, ctx.keepdim)


class StdMean(Op):
    name_ = "stdmean"
    saves_inputs = True
    saves_output = True
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a, dims=None, correction=1, keepdim=False):
        v, mean = _moments(ctx, xp, a, dims, correction, keepdim)
        return xp.sqrt(v), mean

    @staticmethod
    def backward(ctx, g_std, g_mean):
        a, = ctx.saved_tensors
        std = ctx.saved_output[0]
        return _var_grad(ctx, a, g_std / (2 * std)) + expand_back(g_mean / ctx.n, ctx.shape, ctx.dims, ctx.keepdim)


def _spread_args(name, input, dim, unbiased, keepdim, correction):
    """Resolve PyTorch's overloads: ``(dim, unbiased, keepdim)``, ``(unbiased)``, ``(dim, *, correction)``."""
    if isinstance(dim, bool):  # var(x, True): the legacy "unbiased" overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}(): pass either 'unbiased' (legacy) or 'correction', not both")
    if not input._dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if correction is None:
        correction = 0 if unbiased is False else 1
    dims = norm_dims(dim, input._data.ndim)
    if _count(input._data.shape, dims) - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    return dims, correction, bool(keepdim)


def _spread(name, op, doc):
    def fn(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        dims, correction, keepdim = _spread_args(name, input, dim, unbiased, keepdim, correction)
        out = op.apply(input, dims=dims, correction=correction, keepdim=keepdim)
        return tuple(out) if op.multi_output else out
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    setattr(Tensor, name, fn)
    return fn


var = _spread("var", Var, """Variance over ``dim`` (all by default), with ``correction`` (default 1).

    >>> import ember
    >>> ember.tensor([[1.0, 3.0], [2.0, 2.0]]).var(dim=1)
    tensor([2., 0.])
    """)
std = _spread("std", Std, """Standard deviation over ``dim``: the square root of :func:`var`.

    >>> import ember
    >>> ember.tensor([[1.0, 3.0], [2.0, 2.0]]).std(dim=1, correction=0)
    tensor([1., 0.])
    """)
var_mean = _spread("var_mean", VarMean, """``(var, mean)`` over ``dim`` in one pass.

    >>> import ember
    >>> ember.var_mean(ember.tensor([1.0, 3.0]))
    (tensor(2.), tensor(2.))
    """)
std_mean = _spread("std_mean", StdMean, """``(std, mean)`` over ``dim`` in one pass.

    >>> import ember
    >>> ember.std_mean(ember.tensor([1.0, 3.0]), correction=0)
    (tensor(1.), tensor(2.))
    """)
