"""The fused optimizer updates (kernels ``sgd_update`` and ``adam_update`` of the hook ``ember_cpu_kernels``).

One pass over flat arrays doing, element by element, the same operations in the same order and precision as
ember.optim's NumPy update (which runs them as several whole-array passes): the caller gives every scalar in the
arrays' dtype, so that float32 arithmetic rounds as NumPy's float32 ufuncs with a Python scalar do. No fastmath.

>>> import numpy as np
>>> p, g, b = np.ones(3, np.float32), np.full(3, 2, np.float32), np.ones(3, np.float32)
>>> f = np.float32
>>> sgd_update(p, g, b, f(0.9), f(1.0), f(0.1), False, True)
>>> float(b[0]), float(p[0])
(2.9000000953674316, 0.7099999785423279)
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["adam_update", "sgd_update"]


@njit(cache=True, parallel=True)
def sgd_update(p, g, b, momentum, keep, lr, nesterov, has_buffer):
    """SGD's update of the flat ``p`` with gradient ``g``: with ``has_buffer`` the momentum buffer ``b`` becomes
    ``b * momentum + g * keep`` and the step is ``b`` (or ``b * momentum + g`` if ``nesterov``); ``p -= step * lr``."""
    for i in prange(p.shape[0]):
        step = g[i]
        if has_buffer:
            buf = b[i] * momentum + g[i] * keep
            b[i] = buf
            step = buf * momentum + g[i] if nesterov else buf
        p[i] = p[i] - step * lr


@njit(cache=True, parallel=True)
def adam_update(p, g, m, v, v_max, amsgrad, keep_g, one_minus_beta2, beta2, neg_step_size, bias2_sqrt, eps):
    """Adam's update of the flat ``p`` with gradient ``g`` and moments ``m``, ``v`` (and ``v_max`` if
    ``amsgrad``): ``m += (g - m) * keep_g``, ``v = v * beta2 + g * g * one_minus_beta2``,
    ``p += m * neg_step_size / (sqrt(v) / bias2_sqrt + eps)``."""
    for i in prange(p.shape[0]):
        gi = g[i]
        mi = m[i] + (gi - m[i]) * keep_g
        m[i] = mi
        vi = v[i] * beta2 + gi * gi * one_minus_beta2
        v[i] = vi
        if amsgrad:
            top = v_max[i]
            if not (top >= vi or top != top):  # np.maximum: the larger, NaN if either is NaN
                top = vi
            v_max[i] = top
            vi = top
        p[i] = p[i] + m[i] * neg_step_size / (np.sqrt(vi) / bias2_sqrt + eps)
