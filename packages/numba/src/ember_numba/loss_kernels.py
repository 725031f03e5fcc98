"""Cross entropy over class indices, forward and backward in one pass each (kernels ``cross_entropy`` and
``cross_entropy_backward`` of the hook ``ember_cpu_kernels``), for a C-contiguous float32 or float64
``(N, C)`` input.

Each row is computed in the input's dtype as ember's NumPy code does it: ``z = x - max(x)``,
``logp = z - log(sum(exp(z)))`` (a NaN anywhere in a row gives NaN; a row of -inf too), the loss
``-logp[target]``; the gradient is ``(exp(logp) - one_hot) * coef``. Sums run left to right, where NumPy sums
pairwise, so results may differ from NumPy's in the last bit.

>>> import numpy as np
>>> x = np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]], np.float32)
>>> logp, losses = np.empty_like(x), np.empty(2, np.float32)
>>> cross_entropy(x, np.array([0, 2]), logp, losses)
>>> [round(float(v), 4) for v in losses]
[0.2395, 1.0986]
>>> grad = np.empty_like(x)
>>> cross_entropy_backward(logp, np.array([0, 2]), np.full(1, 0.5, np.float32), grad)
>>> [round(float(v), 4) for v in grad[1]]
[0.1667, 0.1667, -0.3333]
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["cross_entropy", "cross_entropy_backward"]


@njit(cache=True)
def cross_entropy(x, target, logp, losses):
    """``logp[i] = log_softmax(x[i])`` and ``losses[i] = -logp[i, target[i]]`` for each row ``i`` (targets in
    ``[0, C)``, checked by the caller)."""
    n, c = x.shape
    for i in range(n):
        row = x[i]
        top = row[0]
        for j in range(1, c):
            v = row[j]
            if v > top or v != v:  # NaN wins, as in np.max
                top = v
        total = np.exp(row[0] - top)
        for j in range(1, c):
            total += np.exp(row[j] - top)
        log_total = np.log(total)
        out = logp[i]
        for j in range(c):
            out[j] = (row[j] - top) - log_total
        losses[i] = -out[target[i]]


@njit(cache=True)
def cross_entropy_backward(logp, target, coef, grad):
    """``grad[i] = (exp(logp[i]) - one_hot(target[i])) * coef[i]`` (``coef`` of length N, or 1 for all rows)."""
    n, c = logp.shape
    per_row = coef.shape[0] > 1
    for i in range(n):
        k = coef[i] if per_row else coef[0]
        t = target[i]
        src, dst = logp[i], grad[i]
        for j in range(c):
            p = np.exp(src[j])
            if j == t:
                p = p - 1
            dst[j] = p * k
