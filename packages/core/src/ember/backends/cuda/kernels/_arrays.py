"""What the CUDA kernels share about arrays: which library holds them, and plain ``xp`` helpers."""
from __future__ import annotations

import sys

import numpy as np


def real_cupy(a):
    """The CuPy module when ``a`` is an array of the real CuPy (one that compiles kernels), else None."""
    if not type(a).__module__.startswith("cupy"):
        return None
    cupy = sys.modules.get("cupy")
    if getattr(cupy, "STANDIN", False) or not hasattr(cupy, "ElementwiseKernel"):
        return None
    return cupy


def library(a):
    """``numpy`` for NumPy arrays, the real CuPy for CuPy arrays, None for anything else (such as the tests'
    CuPy stand-in: the kernels then run the op's own forward)."""
    return np if isinstance(a, np.ndarray) else real_cupy(a)


def contiguous(xp, a):
    """A C-contiguous copy of ``a`` (``asarray(copy=True)`` keeps a permuted layout)."""
    out = xp.empty(a.shape, dtype=a.dtype)
    out[...] = a
    return out
