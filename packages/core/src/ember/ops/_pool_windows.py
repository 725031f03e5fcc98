"""Pooling windows along one dimension, and the per-dimension passes that pooling ops are made of (not public).

A pool over several dimensions is done one dimension at a time (the last one
first). :class:`Windows` are PyTorch's regular windows (kernel, stride,
padding, dilation, ceil mode), :class:`AdaptiveWindows` its adaptive ones;
both give tap ``j`` of every window at once, so each pass is a few whole-array
operations, with no loop over windows.
"""
from __future__ import annotations

import math

from ._resample import AxisMap

# -- windows along one dimension -----------------------------------------------------------------------------------

def pooled_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's output length of a pool: floor (or ceil) of the window count; a last window must start in range."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _key(axis: int, index) -> tuple:
    """An index that applies ``index`` on dimension ``axis`` (negative) and keeps the others."""
    return (Ellipsis, index) + (slice(None),) * (-axis - 1)


def _vector(xp, values, axis, dtype):
    """``values`` (one per position along ``axis``) shaped to broadcast along that dimension."""
    return xp.reshape(xp.asarray(values, dtype=dtype), (len(values),) + (1,) * (-axis - 1))


def pad_axis(xp, a, axis, left, right, fill):
    """``a`` with ``left``/``right`` positions of ``fill`` added along ``axis``; negative amounts crop instead."""
    if left < 0 or right < 0:
        a = a[_key(axis, slice(max(-left, 0), a.shape[axis] - max(-right, 0)))]
        left, right = max(left, 0), max(right, 0)
    if left == 0 and right == 0:
        return a
    shape = list(a.shape)
    shape[axis] += left + right
    out = xp.full(tuple(shape), fill, dtype=a.dtype)
    out[_key(axis, slice(left, left + a.shape[axis]))] = a
    return out


class Windows:
    """Pooling windows along one dimension of ``size``: ``k`` taps ``d`` apart, one window every ``s``
    positions of the input padded by ``p`` before (and, after, by ``right``: what the last window needs)."""

    def __init__(self, size, k, s, p, d, ceil_mode):
        self.size, self.k, self.s, self.p, self.d = size, k, s, p, d
        self.out = pooled_size(size, k, s, p, d, ceil_mode)
        self.left = p
        self.right = (self.out - 1) * s + d * (k - 1) + 1 - size - p  # negative: the input's tail is never read

    def _tap(self, axis, j):
        """The index of tap ``j`` of every window in the padded input: a strided slice."""
        start = j * self.d
        return _key(axis, slice(start, start + self.s * (self.out - 1) + 1, self.s))

    def pick(self, xp, a, axis, j):
        """Tap ``j`` of every window, from ``a`` padded by ``left`` and ``right``."""
        return a[self._tap(axis, j)]

    def add_at(self, xp, z, axis, j, c):
        """``z`` (padded) with ``c`` added where tap ``j`` of each window reads."""
        key = self._tap(axis, j)
        z[key] += c
        return z

    def total(self, xp, a, axis):
        """The sum over each window of ``a`` (padded)."""
        res = self.pick(xp, a, axis, 0)
        for j in range(1, self.k):
            res = res + self.pick(xp, a, axis, j)
        return res

    def spread(self, xp, g, axis):
        """The transpose of :meth:`total`: each window's ``g`` added over the window (padded result)."""
        shape = list(g.shape)
        shape[axis] = self.size + self.left + self.right
        z = xp.zeros(tuple(shape), dtype=g.dtype)
        for j in range(self.k):
            z = self.add_at(xp, z, axis, j, g)
        return z

    def valid(self, j):
        """Whether tap ``j`` of each window reads the input (not the padding)."""
        return [0 <= o * self.s + j * self.d - self.p < self.size for o in range(self.out)]

    def positions(self, xp, sel, axis):
        """The input positions of the taps ``sel`` (an array of tap numbers along ``axis``)."""
        first = _vector(xp, [o * self.s - self.p for o in range(self.out)], axis, xp.int64)
        return xp.astype(sel, xp.int64) * self.d + first

    def counts(self, include_pad):
        """Each window's size as PyTorch's average pooling divides by it."""
        res = []
        for o in range(self.out):
            start = o * self.s - self.p
            stop = min(start + self.k, self.size + self.p)
            res.append(stop - start if include_pad else min(stop, self.size) - max(start, 0))
        return res


class AdaptiveWindows:
    """PyTorch's adaptive windows: window ``o`` of ``out`` covers ``[floor(o*size/out), ceil((o+1)*size/out))``.

    Windows have different lengths; a short one repeats its last position up
    to the longest length ``k`` (harmless for a maximum).
    """

    left = right = 0

    def __init__(self, size, out):
        self.size, self.out = size, out
        self.starts = [o * size // out for o in range(out)]
        self.lengths = [-(-(o + 1) * size // out) - a for o, a in enumerate(self.starts)]
        self.k = max(self.lengths, default=1)
        self.taps = [tuple(a + min(j, n - 1) for a, n in zip(self.starts, self.lengths)) for j in range(self.k)]

    def pick(self, xp, a, axis, j):
        return xp.take(a, xp.asarray(self.taps[j], dtype=xp.int64), axis=axis)

    def add_at(self, xp, z, axis, j, c):
        return z + AxisMap(axis, self.size, ((self.taps[j], None),)).transpose(xp, c)

    def valid(self, j):
        return [True] * self.out

    def positions(self, xp, sel, axis):
        res = xp.zeros(sel.shape, dtype=xp.int64)
        for j in range(self.k):
            res = xp.where(sel == j, _vector(xp, self.taps[j], axis, xp.int64), res)
        return res

    def counts(self, include_pad):
        return self.lengths

    def _short(self, xp, j, axis):
        """Which windows are long enough to have a tap ``j`` (``None``: all of them)."""
        if j < min(self.lengths, default=self.k):
            return None
        return _vector(xp, [j < n for n in self.lengths], axis, xp.bool)

    def total(self, xp, a, axis):
        if self.out == 1:
            return xp.sum(a, axis=axis, keepdims=True)
        res = None
        for j in range(self.k):
            v = self.pick(xp, a, axis, j)
            short = self._short(xp, j, axis)
            if short is not None:  # a short window's repeated last element is not summed again
                v = xp.where(short, v, xp.zeros_like(v))
            res = v if res is None else res + v
        return res

    def spread(self, xp, g, axis):
        shape = list(g.shape)
        shape[axis] = self.size
        z = xp.zeros(tuple(shape), dtype=g.dtype)
        if self.out == 1:
            return z + g
        for j in range(self.k):
            short = self._short(xp, j, axis)
            z = self.add_at(xp, z, axis, j, g if short is None else xp.where(short, g, xp.zeros_like(g)))
        return z


def pool_windows(shape, kernel_size, stride, padding, dilation, ceil_mode):
    nd = len(kernel_size)
    return tuple(Windows(n, k, s, p, d, ceil_mode)
                 for n, k, s, p, d in zip(shape[-nd:], kernel_size, stride, padding, dilation))


# -- max: stages, their scatter and gather ---------------------------------------------------------------------------

def lowest_value(xp, dtype):
    """What padding holds for a max pool: below every value of ``dtype`` (or equal to the least)."""
    return xp.iinfo(dtype).min if xp.isdtype(dtype, "integral") else -math.inf


def max_stage(xp, a, axis, win):
    """Window maxima of ``a`` along ``axis``, and which tap won each (the first max; the last NaN)."""
    a = pad_axis(xp, a, axis, win.left, win.right, lowest_value(xp, a.dtype))
    cur = win.pick(xp, a, axis, 0)
    sel = xp.zeros(cur.shape, dtype=xp.int8 if win.k < 128 else xp.int64)
    if win.k == 1:
        return xp.asarray(cur, copy=True), sel
    floating = not xp.isdtype(a.dtype, "integral")
    unseen = [not v for v in win.valid(0)]  # windows that have not read the input yet (only padding)
    for j in range(1, win.k):
        val = win.pick(xp, a, axis, j)
        take = val > cur
        if floating:
            take = take | xp.isnan(val)
        first = [u and v for u, v in zip(unseen, win.valid(j))]
        if any(first):  # PyTorch starts from the window's first input element, even if it is the lowest value
            take = take | _vector(xp, first, axis, xp.bool)
            unseen = [u and not f for u, f in zip(unseen, first)]
        cur = xp.where(take, val, cur)
        sel = xp.where(take, xp.asarray(j, dtype=sel.dtype), sel)
    return cur, sel


def max_stages(xp, a, windows, stage=max_stage):
    """The pool's maxima (last dimension first) and the winning taps, one array per dimension."""
    nd = len(windows)
    sels = [None] * nd
    for i in range(nd - 1, -1, -1):
        a, sels[i] = stage(xp, a, i - nd, windows[i])
    return a, sels


def select_stage(xp, a, axis, win, sel):
    """The tap ``sel`` of each window of ``a`` along ``axis`` (the gather that a max pool did)."""
    a = pad_axis(xp, a, axis, win.left, win.right, 0)
    out = win.pick(xp, a, axis, 0)
    for j in range(1, win.k):
        out = xp.where(sel == j, win.pick(xp, a, axis, j), out)
    return out


def scatter_stage(xp, g, axis, win, sel):
    """The transpose of :func:`select_stage`: ``g`` added back at the chosen taps (zeros elsewhere)."""
    shape = list(g.shape)
    shape[axis] = win.size + win.left + win.right
    z = xp.zeros(tuple(shape), dtype=g.dtype)
    zero = xp.zeros_like(g)
    for j in range(win.k):
        z = win.add_at(xp, z, axis, j, xp.where(sel == j, g, zero))
    return pad_axis(xp, z, axis, -win.left, -win.right, 0)


def flat_indices(xp, windows, sels, shape):
    """PyTorch's ``return_indices``: each maximum's position in the flattened pooled dimensions."""
    if len(windows) == 1:
        return windows[0].positions(xp, sels[0], -1)
    rows = windows[0].positions(xp, sels[0], -2)
    cols = windows[1].positions(xp, select_stage(xp, sels[1], -2, windows[0], sels[0]), -1)
    return rows * shape[-1] + cols


# -- sums and averages ---------------------------------------------------------------------------------------------

def _whole(windows) -> bool:
    """Whether there is one window that covers all the pooled dimensions (global pooling)."""
    return all(isinstance(w, AdaptiveWindows) and w.out == 1 for w in windows)


def window_sum(xp, a, windows):
    """The sum over each pooling window (zero padding)."""
    nd = len(windows)
    if _whole(windows):
        return xp.sum(a, axis=tuple(range(-nd, 0)), keepdims=True)
    for i in range(nd - 1, -1, -1):
        win, axis = windows[i], i - nd
        a = win.total(xp, pad_axis(xp, a, axis, win.left, win.right, 0), axis)
    return a


def window_sum_transpose(xp, g, windows):
    """The transpose of :func:`window_sum`: each window's ``g`` added back over the window."""
    nd = len(windows)
    if _whole(windows):
        return xp.zeros(tuple(g.shape[:-nd]) + tuple(w.size for w in windows), dtype=g.dtype) + g
    for i in range(nd):
        win, axis = windows[i], i - nd
        g = pad_axis(xp, win.spread(xp, g, axis), axis, -win.left, -win.right, 0)
    return g


def divisor(xp, windows, count_include_pad, divisor_override, dtype):
    """What average pooling divides each window's sum by (a number, or an array that broadcasts)."""
    if divisor_override:
        return float(divisor_override)
    counts = [w.counts(count_include_pad) for w in windows]
    div = _vector(xp, counts[-1], -1, dtype)
    if len(counts) == 2:
        div = _vector(xp, counts[0], -2, dtype) * div
    return div
