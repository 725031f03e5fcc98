"""NumPy kernels for max pooling: the generic per-dimension passes with cheaper NumPy steps.

- Forward: the taps are folded with ``np.maximum`` and each tap's win is read
  off by one comparison, instead of the generic pass's compare / isnan /
  where per tap. That finds the first maximum too, but not PyTorch's NaN rule
  (the last NaN wins) nor, with padding, a window whose input is all at the
  lowest value; a result holding NaN or the lowest value is therefore redone
  by the generic pass.
- Backward (for a finite gradient): each tap's share is ``g`` times the tap's
  int8 mask (much faster than ``where``); with windows that tile the input
  (stride == kernel, no padding or dilation) every input element belongs to
  one window, so each tap's slots are written once instead of added into zeros.
- Without grad mode (inference), only the maxima are computed: one ``np.maximum``
  per tap into the output, no winners remembered.
- A plugin's compiled stages (hook ``ember_cpu_kernels``: ``max_pool_stage`` and
  ``max_pool_scatter``, e.g. from ember-numba) replace all of the above for
  float32/float64 input from :data:`~ember._plugins.CPU_KERNEL_MIN` elements: one
  pass per stage with the generic pass's rules (ties, NaN, padding, any gradient).
"""
from __future__ import annotations

import math

import numpy as np

from ..._plugins import cpu_kernel
from ...autograd.grad_mode import STATE
from ...ops import _pool_windows as pw
from ...ops.pooling import max_pool_backward_forward, max_pool_forward
from .. import cpu_threads


def _as_3d(a, axis):
    """``a`` as ``(outer, length, inner)`` with dimension ``axis`` (negative) in the middle."""
    shape = a.shape
    return a.reshape(math.prod(shape[:axis]), shape[axis], math.prod(shape[axis:][1:]))


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _compiled(name, a, win):
    """The plugin's kernel ``name`` if it serves this stage (float input, a plain window, a large array)."""
    if isinstance(win, pw.Windows) and win.k < 128 and a.dtype in _FLOATS:
        return cpu_kernel(name, a.size)
    return None


def _compiled_max_stage(kernel, a, axis, win):
    a3 = _as_3d(np.ascontiguousarray(a), axis)
    out = np.empty((a3.shape[0], win.out, a3.shape[2]), a.dtype)
    sel = np.empty(out.shape, np.int8)
    kernel(a3, win.k, win.s, win.d, win.left, a.dtype.type(-np.inf), out, sel)
    shape = a.shape[:axis] + (win.out,) + a.shape[axis:][1:]
    return out.reshape(shape), sel.reshape(shape)


def _compiled_scatter_stage(kernel, g, axis, win, sel):
    g3, sel3 = _as_3d(np.ascontiguousarray(g), axis), _as_3d(np.ascontiguousarray(sel), axis)
    z = np.empty(g.shape[:axis] + (win.size,) + g.shape[axis:][1:], g.dtype)  # owned: a leaf's .grad can take it
    kernel(g3, sel3, win.k, win.s, win.d, win.left, _as_3d(z, axis))
    return z


def _max_stage(xp, a, axis, win):
    kernel = _compiled("max_pool_stage", a, win)
    if kernel is not None:
        return _compiled_max_stage(kernel, a, axis, win)
    if not isinstance(win, pw.Windows) or win.k == 1 or win.k >= 128:
        return pw.max_stage(np, a, axis, win)
    lowest = pw.lowest_value(np, a.dtype)
    padded = pw.pad_axis(np, a, axis, win.left, win.right, lowest)
    cur = win.pick(np, padded, axis, 0)
    sel = None
    for j in range(1, win.k):
        new = np.maximum(cur, win.pick(np, padded, axis, j))
        won = new != cur
        if sel is None:
            sel = won.view(np.int8)  # tap 1 won where True: the int8 view reads 1
        else:  # a later win overrides an earlier one, so the winner is the largest j that won
            np.maximum(sel, won.view(np.int8) * np.int8(j), out=sel)
        cur = new
    if cur.size:
        low = cur.min()
        if low != low or (low == lowest and (win.left > 0 or win.right > 0)):
            return pw.max_stage(np, a, axis, win)
    return cur, sel


def _tiles(win) -> bool:
    return isinstance(win, pw.Windows) and win.s == win.k and win.d == 1 and win.left == 0 and win.right <= 0


def _scatter_stage(xp, g, axis, win, sel):
    kernel = _compiled("max_pool_scatter", g, win)
    if kernel is not None:
        return _compiled_scatter_stage(kernel, g, axis, win, sel)
    if not isinstance(win, pw.Windows):
        return pw.scatter_stage(np, g, axis, win, sel)
    if not _tiles(win):  # overlapping windows: add each tap's share in place
        shape = list(g.shape)
        shape[axis] = win.size + win.left + win.right
        z = np.zeros(shape, dtype=g.dtype)
        for j in range(win.k):
            z_j = win.pick(np, z, axis, j)
            z_j += g * (sel == j).view(np.int8)
        return pw.pad_axis(np, z, axis, -win.left, -win.right, 0)
    shape = list(g.shape)
    shape[axis] = win.size
    z = np.zeros(shape, dtype=g.dtype) if win.right < 0 else np.empty(shape, dtype=g.dtype)
    for j in range(1, win.k):  # multiplying by an int8 mask is faster than by a bool one, or np.where
        np.multiply(g, sel if win.k == 2 else (sel == j).view(np.int8), out=win.pick(np, z, axis, j))
    if win.k == 2:  # g is finite: g - g * mask is exactly what tap 0 gets
        np.subtract(g, win.pick(np, z, axis, 1), out=win.pick(np, z, axis, 0))
    else:
        np.multiply(g, (sel == 0).view(np.int8), out=win.pick(np, z, axis, 0))
    return z


def _max_values(a, windows):
    """The window maxima alone (nothing will be differentiated, so no winners are kept); same values as
    ``_max_stage``: the fold keeps the earlier of equal values and propagates NaN."""
    nd = len(windows)
    for i in range(nd - 1, -1, -1):
        win, axis = windows[i], i - nd
        kernel = _compiled("max_pool_stage", a, win)
        if kernel is not None:
            a = _compiled_max_stage(kernel, a, axis, win)[0]
            continue
        if not isinstance(win, pw.Windows) or win.k == 1:
            a = pw.max_stage(np, a, axis, win)[0]
            continue
        padded = pw.pad_axis(np, a, axis, win.left, win.right, pw.lowest_value(np, a.dtype))
        a = np.maximum(win.pick(np, padded, axis, 0), win.pick(np, padded, axis, 1))
        for j in range(2, win.k):
            np.maximum(a, win.pick(np, padded, axis, j), out=a)
    return a


def _by_rows(a, nd, fn):
    """``fn(start, stop)`` over slices of ``a``'s leading axis on every thread (``cpu_threads``), when that axis is
    not pooled; the slices' results in order (one result when it ran inline)."""
    if a.ndim <= nd or a.size < cpu_threads.MIN_ITEMS:
        return [fn(0, len(a) if a.ndim else 1)]
    results = {}

    def part(start, stop):
        results[start] = fn(start, stop)
    cpu_threads.parallel_for(a.shape[0], part, a.size)
    return [results[k] for k in sorted(results)]


def _joined(parts):
    # copying the parts into one array on the threads was no faster than np.concatenate (a max pool's forward
    # and backward on 64x64x24x24 at 2 threads: 0.85x the one-thread time, against 0.69-0.75x)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _scatter(g, windows, sels, stage):
    nd = len(windows)
    for i in range(nd):
        g = stage(np, g, i - nd, windows[i], sels[i])
    return g


def max_pool(ctx, xp, a, kernel_size=(1,), stride=(1,), padding=(0,), dilation=(1,), ceil_mode=False):
    windows = pw.pool_windows(a.shape, kernel_size, stride, padding, dilation, ceil_mode)
    nd = len(windows)
    if not STATE.enabled and not type(ctx).multi_output:
        return _joined(_by_rows(a, nd, lambda i, j: _max_values(a[i:j] if a.ndim > nd else a, windows)))
    if a.ndim <= nd or a.size < cpu_threads.MIN_ITEMS or cpu_threads.get_num_threads() == 1:
        return max_pool_forward(ctx, np, a, windows, stage=_max_stage)
    parts = _by_rows(a, nd, lambda i, j: pw.max_stages(np, a[i:j], windows, _max_stage))
    out = _joined([p[0] for p in parts])
    ctx.windows, ctx.sels = windows, [_joined([p[1][k] for p in parts]) for k in range(nd)]
    if type(ctx).multi_output:
        return out, pw.flat_indices(np, windows, ctx.sels, a.shape)
    return out


def max_pool_backward(ctx, xp, g, windows=(), sels=()):
    # g * mask is g or 0 for finite g only (a compiled scatter adds g itself: any g)
    finite = all(_compiled("max_pool_scatter", g, w) is not None for w in windows) or np.isfinite(g).all()
    stage = _scatter_stage if finite else pw.scatter_stage
    nd = len(windows)
    if g.ndim <= nd or g.size < cpu_threads.MIN_ITEMS or cpu_threads.get_num_threads() == 1:
        return max_pool_backward_forward(ctx, np, g, windows, sels, stage=stage)
    ctx.windows, ctx.sels = windows, sels
    return _joined(_by_rows(g, nd, lambda i, j: _scatter(g[i:j], windows, [s[i:j] for s in sels], stage)))


def avg_pool(ctx, xp, a, kernel_size=(1,), stride=(1,), padding=(0,), ceil_mode=False, count_include_pad=True,
             divisor_override=None):
    """``ember.ops.pooling``'s average pool with the window sums taken on every thread (slices of samples)."""
    windows = pw.pool_windows(a.shape, kernel_size, stride, padding, (1,) * len(kernel_size), ceil_mode)
    ctx.windows, ctx.div = windows, pw.divisor(np, windows, count_include_pad, divisor_override, a.dtype)
    ctx.attrs = dict(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                     count_include_pad=count_include_pad, divisor_override=divisor_override)
    nd = len(windows)
    return _joined(_by_rows(a, nd, lambda i, j: pw.window_sum(np, a[i:j] if a.ndim > nd else a, windows) / ctx.div))


def avg_pool_backward(ctx, xp, g, pool=None, windows=(), div=1.0, attrs=None):
    ctx.pool, ctx.attrs = pool, attrs
    nd = len(windows)
    return _joined(_by_rows(g, nd, lambda i, j: pw.window_sum_transpose(np, (g[i:j] if g.ndim > nd else g) / div,
                                                                        windows)))


KERNELS = {"max_pool1d": max_pool, "max_pool2d": max_pool, "max_pool1d_with_indices": max_pool,
           "max_pool2d_with_indices": max_pool, "max_pool_backward": max_pool_backward,
           "avg_pool1d": avg_pool, "avg_pool2d": avg_pool, "avg_pool_backward": avg_pool_backward}
