"""Max pooling along one dimension in one pass (kernels ``max_pool_stage`` and ``max_pool_scatter`` of the hook
``ember_cpu_kernels``).

ember pools one dimension at a time (``ember.ops._pool_windows``); these are one such stage, on an array viewed
as ``(outer, length, inner)`` with the pooled dimension in the middle, with the generic NumPy stage's rules: a
window's maximum is its first valid element replaced by each later one that is strictly greater or NaN (so the
first maximum wins, or the last NaN), and the stage records which tap won. The scatter, the stage's transpose,
adds each window's gradient at its winning tap, the windows taken last to first (the generic stage's order of
addition where windows overlap). Neither holds the GIL, so ember's thread pool can run slices side by side.

>>> import numpy as np
>>> a = np.array([[[1.0], [5.0], [2.0], [2.0]]], np.float32)        # (outer 1, length 4, inner 1)
>>> out, sel = np.empty((1, 2, 1), np.float32), np.empty((1, 2, 1), np.int8)
>>> max_stage(a, 2, 2, 1, 0, np.float32(-np.inf), out, sel)      # windows of 2 taps, stride 2
>>> out.ravel().tolist(), sel.ravel().tolist()
([5.0, 2.0], [1, 0])
>>> z = np.empty_like(a)
>>> scatter(np.ones_like(out), sel, 2, 2, 1, 0, z)
>>> z.ravel().tolist()
[0.0, 1.0, 1.0, 0.0]
"""
from __future__ import annotations

from numba import njit

__all__ = ["max_stage", "scatter"]


@njit(cache=True, nogil=True)
def max_stage(a, k, s, d, left, lowest, out, sel):
    """Window maxima of ``a`` (outer, L, inner) into ``out`` and the winning taps into ``sel`` (both (outer, OL,
    inner), all C-contiguous); window ``w`` reads ``a[:, w * s + t * d - left]`` for taps ``t < k`` that fall
    inside ``0 .. L-1``; a window that reads none gets ``lowest`` and tap 0 (as the generic stage, which pads
    with ``lowest``)."""
    length, n_out = a.shape[1], out.shape[1]
    first = min(-(-left // s), n_out)  # the windows first .. last - 1 read inside the input only
    last = max(min((length - 1 - (k - 1) * d + left) // s + 1, n_out), first)
    # the common windows with constant sizes, so that the compiler unrolls the taps and vectorises
    # (the padding and the first window too: an offset the compiler cannot see made these loops 3-9x slower)
    if k == 2 and s == 2 and d == 1 and left == 0:
        _inside(a, 2, 2, 1, 0, 0, last, out, sel)
    elif k == 3 and s == 2 and d == 1 and left == 1 and first == 1:
        _inside(a, 3, 2, 1, 1, 1, last, out, sel)
    elif k == 3 and s == 2 and d == 1 and left == 0:
        _inside(a, 3, 2, 1, 0, 0, last, out, sel)
    else:
        _inside(a, k, s, d, left, first, last, out, sel)
    _edges(a, k, s, d, left, lowest, 0, first, out, sel)
    _edges(a, k, s, d, left, lowest, last, n_out, out, sel)


@njit(nogil=True, inline="always")
def _inside(a, k, s, d, left, first, last, out, sel):
    """The windows ``first .. last - 1``, whose taps all read the input."""
    outer, length, inner = a.shape
    if inner == 1:  # as 2-D arrays: the windows are the innermost loop, which the compiler vectorises
        _rows(a.reshape(outer, length), k, s, d, left, first, last, out.reshape(outer, -1), sel.reshape(outer, -1))
        return
    for o in range(outer):
        for w in range(first, last):
            start = w * s - left
            for i in range(inner):
                best = a[o, start, i]
                won = 0
                for t in range(1, k):  # branch-free: on random data a branch here is mispredicted half the time
                    v = a[o, start + t * d, i]
                    take = (v > best) | (v != v)
                    best = v if take else best
                    won = t if take else won
                out[o, w, i] = best
                sel[o, w, i] = won


@njit(nogil=True, inline="always")
def _rows(a, k, s, d, left, first, last, out, sel):
    for o in range(a.shape[0]):
        for w in range(first, last):
            start = w * s - left
            best = a[o, start]
            won = 0
            for t in range(1, k):
                v = a[o, start + t * d]
                take = (v > best) | (v != v)
                best = v if take else best
                won = t if take else won
            out[o, w] = best
            sel[o, w] = won


@njit(nogil=True)
def _edges(a, k, s, d, left, lowest, first, last, out, sel):
    """The windows ``first .. last - 1``, some of whose taps fall in the padding."""
    outer, length, inner = a.shape
    for o in range(outer):
        for w in range(first, last):
            start = w * s - left
            for i in range(inner):
                best = lowest
                won = 0
                seen = False
                for t in range(k):
                    pos = start + t * d
                    if pos < 0 or pos >= length:
                        continue
                    v = a[o, pos, i]
                    if not seen or v > best or v != v:
                        best = v
                        won = t
                        seen = True
                out[o, w, i] = best
                sel[o, w, i] = won


@njit(cache=True, nogil=True)
def scatter(g, sel, k, s, d, left, z):
    """The stage's transpose, into ``z`` (outer, L, inner; its contents are not read): zero but for each window's
    gradient ``g`` (outer, OL, inner) added at its winning tap ``sel``. Windows are taken last to first, so that
    where windows overlap the sums are added in the order of the generic stage (tap by tap, each onto 0.0)."""
    outer, n_out, inner = g.shape
    length = z.shape[1]
    if s == k and d == 1 and left == 0 and inner == 1 and n_out * k <= length:  # windows that tile the input:
        # each element written once (not with ceil_mode's last window, which reaches past the input's end)
        g2, sel2, z2 = g.reshape(outer, n_out), sel.reshape(outer, n_out), z.reshape(outer, length)
        if k == 2:  # constant: unrolled
            _tile_rows(g2, sel2, 2, z2)
        else:
            _tile_rows(g2, sel2, k, z2)
        return
    z[:] = 0
    for o in range(outer):
        for w in range(n_out - 1, -1, -1):
            start = w * s - left
            for i in range(inner):
                pos = start + sel[o, w, i] * d
                if 0 <= pos < length:
                    z[o, pos, i] += g[o, w, i]


@njit(nogil=True, inline="always")
def _tile_rows(g, sel, k, z):
    zero = g.dtype.type(0)
    covered = g.shape[1] * k
    for o in range(g.shape[0]):
        for w in range(g.shape[1]):
            won = sel[o, w]
            value = g[o, w] + zero  # 0.0 + g, as the generic stage adds it (-0.0 becomes 0.0)
            for t in range(k):
                z[o, w * k + t] = value if t == won else zero
        for p in range(covered, z.shape[1]):
            z[o, p] = zero
