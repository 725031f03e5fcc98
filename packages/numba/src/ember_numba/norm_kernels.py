"""Batch norm's per-channel affine map in one pass (kernel ``channel_affine`` of the hook ``ember_cpu_kernels``).

``out[n, c, i] = x[n, c, i] * scale[c] + shift[c]``: a product rounded to the arrays' dtype, then a sum, as NumPy's
two broadcast passes do (no fastmath, so no fused multiply-add), over the channels of every sample in parallel.

>>> import numpy as np
>>> x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
>>> out = np.empty_like(x)
>>> channel_affine(x, np.array([2, 10], np.float32), np.array([1, 0], np.float32), out)
>>> out.tolist()
[[[1.0, 3.0, 5.0], [30.0, 40.0, 50.0]]]
"""
from __future__ import annotations

from numba import njit, prange

__all__ = ["channel_affine"]


@njit(cache=True, parallel=True)
def channel_affine(x, scale, shift, out):
    """``out = x * scale[c] + shift[c]`` for ``x`` and ``out`` of shape (N, C, inner), C-contiguous."""
    n, c, inner = x.shape
    for nc in prange(n * c):
        i, j = nc // c, nc % c
        s, t = scale[j], shift[j]
        row, dst = x[i, j], out[i, j]
        for k in range(inner):
            dst[k] = row[k] * s + t
