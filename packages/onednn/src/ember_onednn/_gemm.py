"""oneDNN's float32 matrix product (``dnnl_sgemm``) as ember's CPU kernel ``gemm_float32``.

ember's CPU backend sends every large float32 2-D product through this kernel (``xp.matmul``, see
:mod:`ember.backends.numpy_namespace`), so that GEMMs run on the same OpenMP pool as oneDNN's convolutions instead
of on OpenBLAS's threads, which spin for about 0.1 s after each product and took a core from everything that ran
next (resnet18 inference at two threads: 80 ms with OpenBLAS's spinning threads, 23 ms without). On this 2-core
VM oneDNN's GEMM is also as fast as OpenBLAS's or faster on the shapes of ember's workloads (one thread: 0.79-1.0x
OpenBLAS's time; two: 0.67-0.85x), so nothing is lost where nothing else runs.

>>> import numpy as np
>>> from ember_onednn import plugin
>>> a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((3, 2), np.float32)
>>> out = np.empty((2, 2), np.float32)
>>> plugin.gemm_float32(a, b.T.copy().T, out)  # b as a transposed view: no copy
>>> out.tolist()
[[3.0, 3.0], [12.0, 12.0]]
"""
from __future__ import annotations

import ctypes
from ctypes import c_char, c_float, c_int, c_int64, c_void_p

from ._dnnl import STATUS, DnnlError
from ._threads import follow_blas

_ITEM = 4  # bytes of a float32


def _layout(x) -> tuple[bytes, int]:
    """``(trans, leading dimension)`` of a float32 matrix with unit stride along one of its dimensions (row-major:
    ``b"N"``; a transposed row-major matrix: ``b"T"``), as ``dnnl_sgemm`` (row-major) reads it."""
    rows, cols = x.strides
    if cols == _ITEM:
        return b"N", rows // _ITEM
    return b"T", cols // _ITEM


class Gemm:
    """``out = a @ b`` for float32 matrices through ``dnnl_sgemm`` of the loaded library ``lib``."""

    def __init__(self, lib: ctypes.CDLL):
        self._sgemm = lib.dnnl_sgemm
        self._sgemm.argtypes = (c_char, c_char, c_int64, c_int64, c_int64, c_float, c_void_p, c_int64, c_void_p,
                                c_int64, c_float, c_void_p, c_int64)
        self._sgemm.restype = c_int

    def __call__(self, a, b, out) -> None:
        """``a`` (M, K) and ``b`` (K, N) with unit stride along one dimension and a leading dimension no smaller
        than the other's extent; ``out`` (M, N) C-contiguous, not overlapping them; M, N, K >= 1."""
        (m, k), n = a.shape, b.shape[1]
        trans_a, lda = _layout(a)
        trans_b, ldb = _layout(b)
        follow_blas()
        status = self._sgemm(trans_a, trans_b, m, n, k, 1.0, a.ctypes.data, lda, b.ctypes.data, ldb, 0.0,
                             out.ctypes.data, n)
        if status:
            raise DnnlError(f"oneDNN's dnnl_sgemm failed: {STATUS.get(status, f'status {status}')}")
