"""Array helpers the CUDA kernels share, on plain ``xp`` calls (NumPy in CI, CuPy on a GPU)."""
from __future__ import annotations

import sys


def as_strided(a, shape, strides):
    """A view of ``a`` with ``shape`` and byte ``strides`` (``None`` when the array's library has no such view,
    as with a stand-in: the caller then copies slice by slice)."""
    module = sys.modules.get(type(a).__module__.split(".")[0])
    tricks = getattr(getattr(module, "lib", None), "stride_tricks", None)
    if tricks is None or not hasattr(tricks, "as_strided"):
        return None
    return tricks.as_strided(a, shape=tuple(shape), strides=tuple(strides))


def contiguous(xp, a):
    """A C-contiguous copy of ``a`` (``asarray(copy=True)`` keeps a permuted layout)."""
    out = xp.empty(a.shape, dtype=a.dtype)
    out[...] = a
    return out
