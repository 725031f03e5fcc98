"""The CPU backend's kernel of ``relu``: one compiled pass where a plugin gives one (hook ``ember_cpu_kernels``:
``relu``, e.g. from ember-numba), else NumPy's ``maximum``, split over ember's threads for large arrays.

Both keep what :meth:`ember.ops.activation.Relu.forward` keeps: NaN, and ``-0.0`` (``np.maximum(0, a)`` gives
its second argument on a tie). :func:`relu_backward_arrays` is the backward's counterpart,
``g * (out != 0)``.
"""
from __future__ import annotations

import numpy as np

from ..._plugins import cpu_kernel
from .. import cpu_threads

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _flat(*arrays):
    """The arrays (of one shape) as one axis each when all are contiguous (views), else as they are (then split
    along their leading axis)."""
    if all(a.flags.c_contiguous for a in arrays):
        return [a.reshape(-1) for a in arrays]
    return arrays


def _compiled(name: str, *arrays):
    """The plugin kernel ``name`` for C-contiguous float32/float64 ``arrays`` of one shape and dtype, else None."""
    first = arrays[0]
    if first.dtype not in _FLOATS or not first.ndim:
        return None
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != first.dtype or a.shape != first.shape or not a.flags.c_contiguous:
            return None
    return cpu_kernel(name, first.size)


def relu(ctx, xp, a):
    """``max(a, 0)``: the compiled pass, or NumPy (over ember's threads from :data:`cpu_threads.MIN_ITEMS`)."""
    kernel = _compiled("relu", a)
    if kernel is not None:
        out = np.empty(a.shape, a.dtype)
        kernel(a.reshape(-1), out.reshape(-1))
        return out
    if a.size >= cpu_threads.MIN_ITEMS and isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.ndim:
        out = np.empty(a.shape, a.dtype)
        flat_a, flat_out = _flat(a, out)
        cpu_threads.parallel_for(len(flat_a), lambda i, j: np.maximum(0, flat_a[i:j], out=flat_out[i:j]), a.size)
        return out
    return xp.maximum(0, a)


def relu_backward_arrays(g, out):
    """``g * (out != 0)`` in ``g``'s dtype, for NumPy arrays ``g`` and ``out`` of one shape."""
    kernel = _compiled("relu_backward", g, out)
    if kernel is not None:
        res = np.empty(g.shape, g.dtype)
        kernel(g.reshape(-1), out.reshape(-1), res.reshape(-1))
        return res
    if g.size >= cpu_threads.MIN_ITEMS and isinstance(g, np.ndarray) and g.shape == out.shape:
        res = np.empty(g.shape, g.dtype)
        flat_g, flat_o, flat_res = _flat(g, out, res)

        def part(i, j):
            np.multiply(flat_g[i:j], flat_o[i:j] != 0, out=flat_res[i:j], dtype=g.dtype)
        cpu_threads.parallel_for(len(flat_g), part, g.size)
        return res
    return g * (out != 0).astype(g.dtype)


KERNELS = {"relu": relu}
