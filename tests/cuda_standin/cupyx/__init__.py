"""STAND-IN for ``cupyx`` (tests only, never shipped): pinned host arrays and ``scatter_add`` on NumPy."""
from __future__ import annotations

import numpy as _np
from cupy.cuda import memory as _memory


def empty_pinned(shape, dtype=float, order="C"):
    """A host array "in pinned memory": counted by the stand-in pinned pool."""
    _memory._PINNED_POOL.allocations += 1
    return _np.empty(shape, dtype=dtype, order=order)


def zeros_pinned(shape, dtype=float, order="C"):
    out = empty_pinned(shape, dtype, order)
    out[...] = 0
    return out


def scatter_add(a, slices, value) -> None:
    from cupy import _unwrap
    _np.add.at(a._a, _unwrap(slices), _unwrap(value))
