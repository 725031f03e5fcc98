"""Max and average pooling on CuPy: each per-dimension pass of the ops is one ``ElementwiseKernel``.

The pooling ops work one dimension at a time (``ember.ops._pool_windows``);
their array-API passes cost several launches per tap of the window (compare,
NaN test, two ``where`` for a max; a padded copy first). Here each pass is one
kernel over the pass's output that reads its taps straight from the unpadded
input (a tap outside it reads the padding value), with the ops' exact rules:
the first maximum wins, a NaN wins over everything and the last NaN over
earlier ones, a window that starts in the padding takes its first input
element. The backward passes gather, for each input element, the taps that
chose it (max) or cover it (average) in the same order as the ops' scatter,
so results are bit for bit the ops' forwards on the same GPU. Adaptive
windows, and arrays other than real CuPy ones, go through the ops' own
passes. CuPy-only: tested on a GPU (marker ``cuda``).
"""
from __future__ import annotations

import math

from ....ops import _pool_windows as pw
from ....ops.pooling import AvgPoolBackward, _AvgPool, max_pool_backward_forward, max_pool_forward
from ._arrays import real_cupy
from ._compiled import elementwise, launch

_PARAMS = "int64 n_in, int64 n_out, int64 n_inner, int64 taps, int64 step, int64 pad, int64 dil"
# an output position of a pass: (outer, o, n_inner) over an input laid out (outer, n_in, n_inner)
_OUT_INDEX = ("long long in_i = i % n_inner; long long o = (i / n_inner) % n_out; "
              "long long base = (i / n_inner / n_out) * n_in * n_inner + in_i; long long first = o * step - pad;")
# an input position of a backward pass: (outer, q, n_inner) over gradients laid out (outer, n_out, n_inner)
_IN_INDEX = ("long long in_i = i % n_inner; long long q = (i / n_inner) % n_in; "
             "long long base = (i / n_inner / n_in) * n_out * n_inner + in_i;")

_MAX = _OUT_INDEX + """
bool valid = first >= 0 && first < n_in;
T cur = valid ? a[base + first * n_inner] : lowest;
bool unseen = !valid;
S won = 0;
for (long long j = 1; j < taps; ++j) {
    long long at = first + j * dil;
    bool inside = at >= 0 && at < n_in;
    T val = inside ? a[base + at * n_inner] : lowest;
    bool take = val > cur || val != val || (unseen && inside);
    if (unseen && inside) unseen = false;
    if (take) { cur = val; won = (S)j; }
}
y = cur; sel = won;
"""

_MAX_SCATTER = _IN_INDEX + """
T acc = T(0);
for (long long j = 0; j < taps; ++j) {
    long long t = q + pad - j * dil;
    if (t < 0 || t % step != 0) continue;
    long long o = t / step;
    if (o < n_out && (long long)sel[base + o * n_inner] == j) acc = acc + g[base + o * n_inner];
}
z = acc;
"""

_SUM = _OUT_INDEX + """
T acc = (first >= 0 && first < n_in) ? a[base + first * n_inner] : T(0);
for (long long j = 1; j < taps; ++j) {
    long long at = first + j * dil;
    acc = acc + ((at >= 0 && at < n_in) ? a[base + at * n_inner] : T(0));
}
y = acc;
"""

_SPREAD = _IN_INDEX + """
T acc = T(0);
for (long long j = 0; j < taps; ++j) {
    long long t = q + pad - j * dil;
    if (t < 0 || t % step != 0) continue;
    long long o = t / step;
    if (o < n_out) acc = acc + g[base + o * n_inner];
}
z = acc;
"""


def _layout(shape, axis):
    """``(outer, inner)`` sizes around ``axis`` (negative) of ``shape``."""
    axis %= len(shape)
    return math.prod(shape[:axis]), math.prod(shape[axis + 1:])


def _with_axis(shape, axis, n):
    shape = list(shape)
    shape[axis] = n
    return tuple(shape)


def _geometry(win, inner):
    return (win.size, win.out, inner, win.k, win.s, win.p, win.d)


def _usable(a, win) -> bool:
    return isinstance(win, pw.Windows) and real_cupy(a) is not None and a.dtype.kind in "fiu"


def max_stage(xp, a, axis, win):
    """:func:`ember.ops._pool_windows.max_stage` as one kernel."""
    if _usable(a, win):
        cupy = real_cupy(a)
        _, inner = _layout(a.shape, axis)
        shape = _with_axis(a.shape, axis, win.out)
        out = cupy.empty(shape, dtype=a.dtype)
        sel = cupy.empty(shape, dtype=cupy.int8 if win.k < 128 else cupy.int64)
        lowest = a.dtype.type(pw.lowest_value(cupy, a.dtype))
        kernel = elementwise(f"raw T a, T lowest, {_PARAMS}", "T y, S sel", _MAX, "ember_max_pool_stage")
        if launch(kernel, "ember_max_pool_stage", cupy.ascontiguousarray(a), lowest, *_geometry(win, inner), out,
                  sel) is not None:
            return out, sel
    return pw.max_stage(xp, a, axis, win)


def scatter_stage(xp, g, axis, win, sel):
    """:func:`ember.ops._pool_windows.scatter_stage` (the max pool's backward pass) as one kernel."""
    if _usable(g, win):
        cupy = real_cupy(g)
        _, inner = _layout(g.shape, axis)
        out = cupy.empty(_with_axis(g.shape, axis, win.size), dtype=g.dtype)
        kernel = elementwise(f"raw T g, raw S sel, {_PARAMS}", "T z", _MAX_SCATTER, "ember_max_pool_scatter")
        if launch(kernel, "ember_max_pool_scatter", cupy.ascontiguousarray(g), cupy.ascontiguousarray(sel),
                  *_geometry(win, inner), out) is not None:
            return out
    return pw.scatter_stage(xp, g, axis, win, sel)


def _sum_stage(a, axis, win):
    cupy = real_cupy(a)
    _, inner = _layout(a.shape, axis)
    out = cupy.empty(_with_axis(a.shape, axis, win.out), dtype=a.dtype)
    kernel = elementwise(f"raw T a, {_PARAMS}", "T y", _SUM, "ember_sum_pool_stage")
    return launch(kernel, "ember_sum_pool_stage", cupy.ascontiguousarray(a), *_geometry(win, inner), out)


def _spread_stage(g, axis, win):
    cupy = real_cupy(g)
    _, inner = _layout(g.shape, axis)
    out = cupy.empty(_with_axis(g.shape, axis, win.size), dtype=g.dtype)
    kernel = elementwise(f"raw T g, {_PARAMS}", "T z", _SPREAD, "ember_spread_pool_stage")
    return launch(kernel, "ember_spread_pool_stage", cupy.ascontiguousarray(g), *_geometry(win, inner), out)


def _window_sum(xp, a, windows):
    nd = len(windows)
    if all(_usable(a, w) for w in windows):
        out = a
        for i in range(nd - 1, -1, -1):
            out = _sum_stage(out, i - nd, windows[i])
            if out is None:
                break
        else:
            return out
    return pw.window_sum(xp, a, windows)


def _window_sum_transpose(xp, g, windows):
    nd = len(windows)
    if all(_usable(g, w) for w in windows):
        out = g
        for i in range(nd):
            out = _spread_stage(out, i - nd, windows[i])
            if out is None:
                break
        else:
            return out
    return pw.window_sum_transpose(xp, g, windows)


# -- kernels ----------------------------------------------------------------------------------------------
def max_pool(ctx, xp, a, kernel_size=(1,), stride=(1,), padding=(0,), dilation=(1,), ceil_mode=False):
    """The forward of ``max_pool1d``/``2d`` (with or without indices)."""
    windows = pw.pool_windows(a.shape, kernel_size, stride, padding, dilation, ceil_mode)
    return max_pool_forward(ctx, xp, a, windows, stage=max_stage)


def max_pool_backward(ctx, xp, g, windows=(), sels=()):
    """The ``max_pool_backward`` op's forward."""
    return max_pool_backward_forward(ctx, xp, g, windows, sels, stage=scatter_stage)


def avg_pool(ctx, xp, a, kernel_size=(1,), stride=(1,), padding=(0,), ceil_mode=False, count_include_pad=True,
             divisor_override=None):
    """The forward of ``avg_pool1d``/``2d``."""
    if real_cupy(a) is None:
        return _AvgPool.forward(ctx, xp, a, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                divisor_override)
    windows = pw.pool_windows(a.shape, kernel_size, stride, padding, (1,) * len(kernel_size), ceil_mode)
    ctx.windows = windows
    ctx.attrs = dict(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                     count_include_pad=count_include_pad, divisor_override=divisor_override)
    ctx.div = pw.divisor(xp, windows, count_include_pad, divisor_override, a.dtype)
    return _window_sum(xp, a, windows) / ctx.div


def avg_pool_backward(ctx, xp, g, pool=None, windows=(), div=1.0, attrs=None):
    """The ``avg_pool_backward`` op's forward."""
    if real_cupy(g) is None:
        return AvgPoolBackward.forward(ctx, xp, g, pool=pool, windows=windows, div=div, attrs=attrs)
    ctx.pool, ctx.attrs = pool, attrs
    return _window_sum_transpose(xp, g / div, windows)


KERNELS = {"max_pool1d": max_pool, "max_pool2d": max_pool, "max_pool1d_with_indices": max_pool,
           "max_pool2d_with_indices": max_pool, "max_pool_backward": max_pool_backward,
           "avg_pool1d": avg_pool, "avg_pool2d": avg_pool, "avg_pool_backward": avg_pool_backward}
