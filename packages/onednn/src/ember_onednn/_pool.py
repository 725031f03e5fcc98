"""The kernel of ember's op ``max_pool2d`` on oneDNN's pooling primitive, when nothing will be differentiated: one
pass over the input on oneDNN's threads, where ember's kernel takes one per pooled dimension (ResNet-18's max pool
at inference: 0.95 -> 0.48 ms at one thread, the NaN check below included).

It takes C-order float32 NCHW arrays as they are (no reorder). With grad mode on, ember's kernel runs, which keeps
the winners for the backward; so does an input that holds NaN (PyTorch propagates it, oneDNN's maximum need not;
a sum finds one in a pass far cheaper than the pooling), a geometry with a window that reads padding only (its
maximum is -inf in PyTorch, the lowest finite float in oneDNN), and a geometry oneDNN refuses.
"""
from __future__ import annotations

import collections

import numpy as np

from ember.autograd.grad_mode import STATE
from ember.ops import _pool_windows as pw

from . import _dnnl as d
from ._plan import Arena, PlanCache, Primitive
from ._threads import follow_blas

#: shapes whose primitives are kept, least recently used dropped first
CACHE_SIZE = 128


class Pools:
    """``max_pool2d`` over one :class:`~._dnnl.Binding`; ``fallback`` is ember's kernel, for what oneDNN does not
    run."""

    def __init__(self, dnnl: d.Binding, fallback):
        self.dnnl, self.fallback = dnnl, fallback
        self._primitives = PlanCache(self._primitive, CACHE_SIZE)
        self._arena = Arena()  # unused: plain layouts need no reorder
        #: how many calls ran on oneDNN, and how many went to the fallback (for tests)
        self.calls: collections.Counter = collections.Counter()

    def _primitive(self, in_shape, out_shape, geometry) -> Primitive:
        strides, kernel, dilations, left, _ = geometry
        if any(_padding_only(*dims) for dims in zip(in_shape[2:], out_shape[2:], kernel, strides, dilations, left)):
            raise d.DnnlError("a pooling window reads padding only")  # remembered: ember's kernel for this shape
        return Primitive(self.dnnl, lambda mds, made: self.dnnl.max_pooling_pd(mds, geometry),
                         {d.ARG_SRC: in_shape, d.ARG_DST: out_shape}, (d.ARG_DST,))

    def max_pool2d(self, ctx, xp, a, kernel_size=(1,), stride=(1,), padding=(0,), dilation=(1,), ceil_mode=False):
        """``MaxPool2d.forward``: the maxima alone, on oneDNN, when grad mode is off."""
        primitive = None
        if (not STATE.enabled and not type(ctx).multi_output and a.dtype == np.float32 and a.ndim == 4
                and a.size and a.flags.c_contiguous and not np.isnan(np.add.reduce(a, axis=None))):
            windows = pw.pool_windows(a.shape, kernel_size, stride, padding, dilation, ceil_mode)
            out_shape = a.shape[:2] + tuple(w.out for w in windows)
            # oneDNN counts dilation from 0; a negative right padding (the input's tail never read) is none
            geometry = (tuple(w.s for w in windows), tuple(w.k for w in windows), tuple(w.d - 1 for w in windows),
                        tuple(w.left for w in windows), tuple(max(w.right, 0) for w in windows))
            primitive = self._primitives.get((a.shape, out_shape, geometry))
        if primitive is None:
            self.calls["fallback"] += 1
            return self.fallback(ctx, xp, a, kernel_size, stride, padding, dilation, ceil_mode)
        out = np.empty(out_shape, np.float32)
        follow_blas()
        primitive.run({d.ARG_SRC: a, d.ARG_DST: out}, self._arena)
        self.calls["max_pool2d"] += 1
        return out


def _padding_only(size, out, k, s, dilation, left) -> bool:
    """Whether some of the ``out`` windows along a dimension of ``size`` (``k`` taps, stride ``s``, oneDNN's
    ``dilation``, ``left`` padding) has none of its taps in the input."""
    step = dilation + 1
    return any(all(not 0 <= o * s + t * step - left < size for t in range(k)) for o in range(out))
