"""The CPU backend's kernel of ``batch_norm`` with running statistics (``eval()``): the per-channel affine map
``x * scale + shift`` in one pass.

The op's array-API forward (:class:`ember.ops.normalization.BatchNormInference`) folds the statistics, weight and
bias into a ``scale`` and a ``shift`` per channel and applies them in two broadcast passes. Here a plugin's compiled
loop (hook ``ember_cpu_kernels``: ``channel_affine``, e.g. from ember-numba) does both in one, with the same
float32 (or float64) roundings: a product, then a sum. Without one, or for other dtypes or layouts, the op's own
forward runs.
"""
from __future__ import annotations

import numpy as np

from ..._plugins import cpu_kernel
from ...ops.normalization import BatchNormInference

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def batch_norm(ctx, xp, x, running_mean, running_var, weight, bias, eps=1e-5):
    """``BatchNormInference.forward``, the affine map in one compiled pass over C-contiguous float input."""
    kernel = cpu_kernel("channel_affine", x.size) if x.dtype in _FLOATS and x.ndim >= 2 else None
    if kernel is None or not x.flags.c_contiguous:
        return BatchNormInference.forward(ctx, xp, x, running_mean, running_var, weight, bias, eps)
    ctx.eps = eps
    scale, shift = BatchNormInference.factors(np, running_mean, running_var, weight, bias, eps)
    out = np.empty(x.shape, x.dtype)
    rows = x.reshape(x.shape[0], x.shape[1], -1)
    kernel(rows, scale.astype(x.dtype), shift.astype(x.dtype), out.reshape(rows.shape))
    return out


KERNELS = {"batch_norm": batch_norm}
