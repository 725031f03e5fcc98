"""The CPU backend's matrix products on float16/bfloat16 inputs: float32 BLAS on blocks, rounded once.

``Backend.run_reduced_float`` runs an op on float16/bfloat16 arrays by widening whole inputs to float32;
for a matrix product that means two or three large fresh float32 arrays at once, and fresh memory costs
here about 1 ms per MB in page faults once several large arrays are alive together (NumPy hands large
arrays back to the system when they die). These kernels widen one operand and a block of columns of the
other at a time into small reused arrays and round each block of the product straight into the
float16/bfloat16 result, so a product holds little more new memory than the float32 one does.

The kernels take the op's arrays as its forward does and return ``NotImplemented`` for a case they leave to
the general path (operands of different dtypes, batched right operands).

>>> import numpy as np, ml_dtypes
>>> a = np.ones((3, 4), ml_dtypes.bfloat16)
>>> product(a, a.T).dtype, float(product(a, a.T)[0, 0])
(dtype(bfloat16), 4.0)
"""
from __future__ import annotations

import numpy as np

from .reduced_casts import narrow, widen

__all__ = ["product", "KERNELS"]

#: float32 elements of one block of the right operand or of the product (256 KiB), unless MIN_SIDE needs more
BLOCK = 1 << 16
#: the fewest rows or columns of a block (thinner ones make BLAS slow)
MIN_SIDE = 64
#: a left operand up to this many elements is widened once, whole; a larger one block by block of rows (and a
#: right operand this small is widened whole when the product is small too)
WHOLE_LEFT = 1 << 18


def product(a, b, bias=None):
    """``a @ b (+ bias)`` for 2-D ``a`` and ``b`` of one float16/bfloat16 dtype (``bias``: 1-D, same dtype),
    computed in float32 and rounded once, into a new array of that dtype."""
    dtype = a.dtype
    m, k = a.shape
    n = b.shape[1]
    out = np.empty((m, n), dtype)
    small_product = m * n <= BLOCK and k * n <= WHOLE_LEFT  # one block: the whole right operand widened once
    cols = n if small_product else min(n, max(MIN_SIDE, BLOCK // max(k, 1)))
    rows = m if m * k <= WHOLE_LEFT else max(MIN_SIDE, BLOCK // max(k, cols))
    left = widen(a) if rows == m else None
    wide_bias = None if bias is None else widen(bias)
    for j in range(0, n, cols):
        right = widen(b[:, j:j + cols])
        for i in range(0, m, rows):
            block = np.matmul(left[i:i + rows] if left is not None else widen(a[i:i + rows]), right)
            if wide_bias is not None:
                block += wide_bias[j:j + cols]
            out[i:i + rows, j:j + cols] = narrow(block, dtype, scratch=True)
    return out


def _same_2d(a, b):
    return a.dtype == b.dtype and a.ndim == 2 and b.ndim == 2


def mm(ctx, xp, a, b):
    """The ``mm`` op's forward."""
    return product(a, b) if _same_2d(a, b) else NotImplemented


def matmul(ctx, xp, a, b):
    """The ``matmul`` op's forward for a left operand of rank >= 2 and a matrix on the right."""
    if a.ndim < 2 or b.ndim != 2 or a.dtype != b.dtype:
        return NotImplemented
    ctx.padded = False
    return product(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + (b.shape[1],))


def linear(ctx, xp, x, w, b=None):
    """The ``linear`` and ``linear_no_bias`` ops' forward: ``x @ w.T (+ b)``."""
    if x.ndim < 1 or x.dtype != w.dtype or w.ndim != 2 or (b is not None and b.dtype != w.dtype):
        return NotImplemented
    out = product(x.reshape(-1, x.shape[-1]), w.T, b)
    return out.reshape(x.shape[:-1] + (w.shape[0],))


KERNELS = {"mm": mm, "matmul": matmul, "linear": linear, "linear_no_bias": linear}
