"""The kernels of ember's ops ``convolution``, ``convolution_backward`` and ``convolutionweightgrad`` on oneDNN.

ember describes every convolution as a map from a *big* grid to a *small* one (``ember.ops.convolution``): a
convolution's forward is oneDNN's forward (big -> small), a transposed convolution and a convolution's input
gradient are its backward-data pass (small -> big), and the weight gradient is its backward-weights pass. The weight
``[small channels, big channels / groups, *kernel]`` is oneDNN's ``OIHW`` (``GOIHW`` with groups) as it is.

float32 arrays of 1-D and 2-D convolutions go to oneDNN, with any stride, padding (ember's tight padding may crop
trailing input: a negative right padding, which oneDNN takes down to ``1 - stride``), dilation and groups. Anything
else (float64, other dtypes, a geometry oneDNN refuses, a transposed pass into fewer than :data:`FEW_CHANNELS`
channels, where ember's kernel is faster) runs ember's own kernel, the one this plugin replaces.
"""
from __future__ import annotations

import collections

import numpy as np

from . import _dnnl as d
from ._plan import Arena, PlanCache, Primitive
from ._threads import follow_blas

#: plans kept, least recently used dropped first (each holds a primitive and its reorders; no data)
CACHE_SIZE = 256
#: oneDNN 3.2's backward-data pass into fewer big-grid channels than this (without groups) runs a slow generic
#: kernel: the MNIST CNN's first layer (1 channel) took 2.5x ember's time, 3 channels 1.7x, 4 channels 1.2x, and
#: 8 channels 0.7x (``benchmarks/bench_conv.py``); those stay on ember's kernel. Depthwise (groups) is 20x faster.
FEW_CHANNELS = 8


class Convolutions:
    """The three kernels over one :class:`~._dnnl.Binding`, with a cache of plans per shape and geometry.

    ``fallback`` maps each op name to the kernel to run where oneDNN does not (ember's built-in CPU kernel).
    """

    def __init__(self, dnnl: d.Binding, fallback: dict):
        self.dnnl, self.fallback = dnnl, fallback
        self._plans = PlanCache(self._build, CACHE_SIZE)
        self._arena = Arena()  # per thread: the scratch buffers of the reordered arguments
        #: how many calls ran on oneDNN, and how many went to the fallback (for tests and ``ember info``)
        self.calls = collections.Counter()

    def _build(self, kind, shapes, outputs, geometry) -> Primitive:
        shapes = dict(shapes)
        return Primitive(self.dnnl, lambda mds, made: _convolution_pd(self.dnnl, kind, mds, shapes, geometry, made),
                         shapes, outputs)

    def plan(self, kind: str, shapes: dict, outputs: tuple, geometry) -> Primitive | None:
        """The cached plan, built on first use; None where oneDNN has no implementation for it (remembered)."""
        return self._plans.get((kind, tuple(shapes.items()), outputs, geometry))

    # -- the op kernels (the ops' forward contract: ``kernel(ctx, xp, *arrays, **attrs)``) ---------------------
    def convolution(self, ctx, xp, x, w, b=None, *, geometry, transposed):
        """``Convolution.forward``: a convolution, or with ``transposed`` its adjoint, of ``x`` with ``w``; also the
        kernel of ``ConvolutionBackward`` (a convolution inside a backward pass), as for ember's own kernel."""
        op = getattr(type(ctx), "name_", "convolution")  # counted under the op's name
        if not _supported(x, w, geometry) or (b is not None and b.dtype != np.float32):
            return self._fallback(op, ctx, xp, x, w, b, geometry=geometry, transposed=transposed)
        x, w = _contiguous(x), _contiguous(w)
        groups = geometry.groups
        if transposed:
            if groups == 1 and w.shape[1] < FEW_CHANNELS:
                return self._fallback(op, ctx, xp, x, w, b, geometry=geometry, transposed=transposed)
            big = geometry.big_sizes(x.shape[2:], w.shape[2:])
            out_shape = (x.shape[0], w.shape[1] * groups) + big
            shapes = {d.ARG_DIFF_SRC: out_shape, d.ARG_WEIGHTS: _weight_shape(w.shape, groups),
                      d.ARG_DIFF_DST: x.shape}
            plan = self.plan("backward_data", shapes, (d.ARG_DIFF_SRC,), _onednn_geometry(geometry))
            if plan is None:
                return self._fallback(op, ctx, xp, x, w, b, geometry=geometry, transposed=transposed)
            out = np.empty(out_shape, np.float32)
            follow_blas()
            plan.run({d.ARG_DIFF_SRC: out, d.ARG_WEIGHTS: w, d.ARG_DIFF_DST: x}, self._arena)
            if b is not None:
                out += b.reshape((-1,) + (1,) * len(big))
        else:
            small = geometry.small_sizes(x.shape[2:], w.shape[2:])
            out_shape = (x.shape[0], w.shape[0]) + small
            shapes = {d.ARG_SRC: x.shape, d.ARG_WEIGHTS: _weight_shape(w.shape, groups), d.ARG_DST: out_shape}
            arrays = {d.ARG_SRC: x, d.ARG_WEIGHTS: w}
            if b is not None:
                shapes[d.ARG_BIAS] = b.shape
                arrays[d.ARG_BIAS] = _contiguous(b)
            plan = self.plan("forward", shapes, (d.ARG_DST,), _onednn_geometry(geometry))
            if plan is None:
                return self._fallback(op, ctx, xp, x, w, b, geometry=geometry, transposed=transposed)
            out = arrays[d.ARG_DST] = np.empty(out_shape, np.float32)
            follow_blas()
            plan.run(arrays, self._arena)
        ctx.geometry, ctx.transposed = geometry, transposed
        self.calls[op] += 1
        return out

    def weight_grad(self, ctx, xp, big, small, *, geometry, kernel_size):
        """``ConvolutionWeightGrad.forward``: ``d conv(big, w) / d w`` contracted with the gradient ``small``."""
        op = "convolutionweightgrad"
        if not _supported(big, small, geometry):
            return self._fallback(op, ctx, xp, big, small, geometry=geometry, kernel_size=kernel_size)
        big, small = _contiguous(big), _contiguous(small)
        groups = geometry.groups
        w_shape = (small.shape[1], big.shape[1] // groups) + tuple(kernel_size)
        shapes = {d.ARG_SRC: big.shape, d.ARG_DIFF_WEIGHTS: _weight_shape(w_shape, groups), d.ARG_DIFF_DST: small.shape}
        plan = self.plan("backward_weights", shapes, (d.ARG_DIFF_WEIGHTS,), _onednn_geometry(geometry))
        if plan is None:
            return self._fallback(op, ctx, xp, big, small, geometry=geometry, kernel_size=kernel_size)
        out = np.empty(w_shape, np.float32)
        follow_blas()
        plan.run({d.ARG_SRC: big, d.ARG_DIFF_WEIGHTS: out, d.ARG_DIFF_DST: small}, self._arena)
        ctx.geometry = geometry
        self.calls[op] += 1
        return out

    def _fallback(self, op, ctx, xp, *arrays, **attrs):
        self.calls["fallback"] += 1
        return self.fallback[op](ctx, xp, *arrays, **attrs)


def _convolution_pd(dnnl, kind, user_mds, shapes, geometry, made) -> int:
    """The primitive descriptor of a convolution pass between arrays of ``shapes`` (their descriptors
    ``user_mds``), every layout but the bias's left to oneDNN; a backward pass gets a forward's as its hint. What
    it creates besides goes to ``made`` (see :class:`~._plan.Primitive`)."""
    def keep(kind_, handle):
        made.append((kind_, handle))
        return handle
    # every layout free for the primitive to choose, but the bias: 1-d, it has one layout
    any_mds = {arg: (md if arg == d.ARG_BIAS else keep("memory_desc", dnnl.memory_desc(shapes[arg], plain=False)))
               for arg, md in user_mds.items()}
    hint = None
    if kind != "forward":  # the backward passes are created with a forward's as a hint
        fwd = {d.ARG_SRC: any_mds.get(d.ARG_SRC, any_mds.get(d.ARG_DIFF_SRC)),
               d.ARG_WEIGHTS: any_mds.get(d.ARG_WEIGHTS, any_mds.get(d.ARG_DIFF_WEIGHTS)),
               d.ARG_DST: any_mds[d.ARG_DIFF_DST]}
        hint = keep("primitive_desc", dnnl.convolution_pd("forward", fwd, geometry))
    return dnnl.convolution_pd(kind, any_mds, geometry, hint)


def _supported(a, b, geometry) -> bool:
    """Whether oneDNN runs the convolution of arrays ``a``, ``b`` here: float32, 1-D or 2-D, not empty."""
    return (a.dtype == b.dtype == np.float32 and a.ndim == b.ndim == len(geometry.stride) + 2
            and a.ndim in (3, 4) and a.size > 0 and b.size > 0)


def _contiguous(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _weight_shape(shape, groups):
    """oneDNN's logical weight shape: ``(O, I, *k)``, or ``(G, O/G, I, *k)`` with groups (the same memory)."""
    return tuple(shape) if groups == 1 else (groups, shape[0] // groups) + tuple(shape[1:])


def _onednn_geometry(geometry):
    """``(strides, dilations, padding_l, padding_r)`` of an ember ``ConvGeometry``: oneDNN counts dilation from 0."""
    return (tuple(geometry.stride), tuple(k - 1 for k in geometry.dilation),
            tuple(lo for lo, _ in geometry.padding), tuple(hi for _, hi in geometry.padding))
