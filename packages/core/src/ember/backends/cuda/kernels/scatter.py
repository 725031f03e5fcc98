"""``index_add`` and ``scatter_add`` through one atomic scatter (``cupyx.scatter_add`` on CuPy).

The ops' forwards call the backend namespace's ``add.at`` when it has one and
otherwise build a one-hot matrix (``O(rows x indices)``). These kernels always
scatter: ``cupyx.scatter_add`` on CuPy arrays, ``numpy.add.at`` on NumPy ones
(which is how CI checks them against the ops' forwards). Booleans, which
``cupyx.scatter_add`` does not take, and other arrays (the tests' CuPy
stand-in) go through the op's own forward.
"""
from __future__ import annotations

import importlib

import numpy as np

from ....ops.gather import IndexAdd, ScatterAdd, _narrow_to, _scatter_positions
from ._arrays import library


def _native(a) -> bool:
    return library(a) is not None and a.dtype != np.bool_


def _scatter_add(a):
    """The unbuffered ``add.at`` for ``a``'s library: ``numpy.add.at`` or ``cupyx.scatter_add``."""
    return np.add.at if library(a) is np else importlib.import_module("cupyx").scatter_add


def _added(xp, base, idx, src):
    out = xp.asarray(base, copy=True)
    _scatter_add(out)(out, idx, src)
    return out


def index_add(ctx, xp, a, src, index=None, dim=0, alpha=1):
    """The ``indexadd`` op's forward."""
    if a.ndim == 0 or not _native(a):
        return IndexAdd.forward(ctx, xp, a, src, index=index, dim=dim, alpha=alpha)
    ctx.index, ctx.dim, ctx.alpha = index, dim, alpha
    if alpha != 1:
        src = src * alpha
    moved = _added(xp, xp.moveaxis(a, dim, 0), index, xp.astype(xp.moveaxis(src, dim, 0), a.dtype))
    return xp.moveaxis(moved, 0, dim)


def scatter_add(ctx, xp, a, src, index=None, dim=0):
    """The ``scatteradd`` op's forward."""
    if not _native(a):
        return ScatterAdd.forward(ctx, xp, a, src, index=index, dim=dim)
    ctx.index, ctx.dim, ctx.src_shape = index, dim, src.shape
    flat = _added(xp, xp.reshape(a, (-1,)), _scatter_positions(xp, a, index, dim), _narrow_to(xp, src, index.shape))
    return xp.reshape(flat, a.shape)


KERNELS = {"indexadd": index_add, "scatteradd": scatter_add}
