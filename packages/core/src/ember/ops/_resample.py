"""Linear maps that act on one dimension at a time through fixed taps (not public).

Non-constant padding and nearest/linear interpolation are all of this form:
along each mapped dimension, output position ``o`` is ``sum_t w_t[o] *
input[idx_t[o]]`` for a few taps ``t`` whose indices and weights depend only on
the sizes, never on the data. :class:`Resample` applies such a map with
``take`` (so it runs on any array-API backend) and its backward is
:class:`ResampleTranspose`, the adjoint map; each one's backward is the other,
so gradients of any order are exact.

The adjoint of a ``take`` scatters values back, adding where an index repeats.
The array API has no scatter-add, so it is done with gathers: the output
positions that read input ``i`` are ranked, and round ``r`` gathers, for every
input position at once, the ``r``-th of them (``max rank`` gathers in all, 2 or
3 for padding and 2x upsampling).
"""
from __future__ import annotations

from functools import lru_cache

from ..autograd.function import Op


class AxisMap:
    """The map along one dimension (``axis``, negative) from ``size`` positions to ``len(taps[0][0])``.

    ``taps`` is a tuple of ``(indices, weights)``; ``weights`` is ``None`` for a plain gather.
    """

    def __init__(self, axis: int, size: int, taps: tuple):
        self.axis, self.size = axis, size
        self.taps = tuple((tuple(int(i) for i in idx), None if w is None else tuple(float(v) for v in w))
                          for idx, w in taps)
        self.out = len(self.taps[0][0])

    def apply(self, xp, a):
        res = None
        for idx, w in self.taps:
            v = xp.take(a, xp.asarray(idx, dtype=xp.int64), axis=self.axis)
            if w is not None:
                v = v * _along(xp, w, self.axis, a.dtype)
            res = v if res is None else res + v
        return res

    def transpose(self, xp, g):
        res = None
        for idx, w in self.taps:
            if w is not None:
                g_t = g * _along(xp, w, self.axis, g.dtype)
            else:
                g_t = g
            for src, mask in _gather_rounds(idx, self.size):
                v = xp.take(g_t, xp.asarray(src, dtype=xp.int64), axis=self.axis)
                if mask is not None:
                    v = xp.where(_along(xp, mask, self.axis, xp.bool), v, xp.zeros_like(v))
                res = v if res is None else res + v
        if res is None:  # nothing reads the input (an empty output): its gradient is zero
            shape = list(g.shape)
            shape[self.axis] = self.size
            res = xp.zeros(tuple(shape), dtype=g.dtype)
        return res


def _along(xp, values, axis, dtype):
    """``values`` (one per position along ``axis``) shaped to broadcast against an array on that axis."""
    return xp.reshape(xp.asarray(values, dtype=dtype), (len(values),) + (1,) * (-axis - 1))


@lru_cache(maxsize=256)
def _gather_rounds(idx: tuple, size: int) -> tuple:
    """``((src, mask), ...)``: round ``r`` reads, for input ``i``, the ``r``-th output position with ``idx == i``.

    ``mask`` marks the inputs that have an ``r``-th reader (``None`` when all do).
    """
    readers: list = [[] for _ in range(size)]
    for o, i in enumerate(idx):
        readers[i].append(o)
    rounds = []
    for r in range(max((len(x) for x in readers), default=0)):
        src = tuple(x[r] if r < len(x) else 0 for x in readers)
        mask = tuple(r < len(x) for x in readers)
        rounds.append((src, None if all(mask) else mask))
    return tuple(rounds)


class Resample(Op):
    """Apply the :class:`AxisMap` s of ``maps`` in turn; subclasses give the op its name.

    ``grad_name`` names the backward node (PyTorch's name for the public
    function's mode); ``spec`` holds the public arguments (mode, amounts,
    sizes), unused here, for an ONNX lowering to read.
    """

    name_ = "resample"

    @staticmethod
    def forward(ctx, xp, a, maps=(), grad_name=None, **spec):
        ctx.maps = maps
        if grad_name:
            ctx.backward_name = grad_name
        for m in maps:
            a = m.apply(xp, a)
        return a

    @staticmethod
    def backward(ctx, g):
        return ResampleTranspose.apply(g, maps=ctx.maps)


class ResampleTranspose(Op):
    """The adjoint of :class:`Resample` (its backward)."""

    name_ = "resampletranspose"

    @staticmethod
    def forward(ctx, xp, g, maps=()):
        ctx.maps = maps
        for m in reversed(maps):
            g = m.transpose(xp, g)
        return g

    @staticmethod
    def backward(ctx, gg):
        return Resample.apply(gg, maps=ctx.maps)
