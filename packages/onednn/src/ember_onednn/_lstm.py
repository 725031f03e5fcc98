"""The kernel of ember's op ``lstm`` on oneDNN's LSTM primitive (forward training and backward), as PyTorch runs its
CPU LSTM.

ember's op (:class:`ember.ops.recurrent.LSTM`) gets one layer and direction: the sequence ``x`` ``[L, N, input]``,
``W_ih`` ``[4H, input]``, the bias ``b_ih + b_hh`` ``[4H]`` (or None), ``W_hh`` ``[4H, H]`` and the initial states
``[N, H]``; oneDNN's primitive takes the same, with the gates in the same order (i, f, g, o). Its weights are
``[layers, directions, input, gates, hidden]`` tensors: ember's ``[4H, input]`` matrix is that tensor with the
strides of oneDNN's ``ldgoi``, and is described as it is; where the primitive wants another layout (it packs the
weights for its matrix products) a reorder copies them, as for the convolutions (:mod:`._plan`).

The forward keeps oneDNN's workspace (the gates, in its own layout) in the op's context and sets the context's
``bptt`` to this module's backward, which reads it. oneDNN's backward adds into the weight and bias gradients, so they
start from zeros.

float64, a projection (``proj_size``), an empty sequence or batch, or a shape oneDNN refuses run ember's built-in
kernel instead.
"""
from __future__ import annotations

import collections
import threading

import numpy as np

from ember.ops.recurrent import _wrap

from . import _dnnl as d
from ._plan import Arena, Execution, PlanCache, _aligned
from ._threads import follow_blas

#: LSTM shapes whose primitives are kept, least recently used dropped first
CACHE_SIZE = 32

_STATES = (d.ARG_SRC_ITER, d.ARG_SRC_ITER_C, d.ARG_DST_ITER, d.ARG_DST_ITER_C)
_WEIGHTS = (d.ARG_WEIGHTS, d.ARG_WEIGHTS_ITER)
_FORWARD_IN = (d.ARG_SRC, d.ARG_SRC_ITER, d.ARG_SRC_ITER_C, d.ARG_WEIGHTS, d.ARG_WEIGHTS_ITER, d.ARG_BIAS)
_FORWARD_OUT = (d.ARG_DST, d.ARG_DST_ITER, d.ARG_DST_ITER_C)


def _ldgoi(inputs: int, hidden: int) -> tuple:
    """The strides (in elements) of a C-order ``[4 * hidden, inputs]`` matrix seen as oneDNN's logical
    ``[1, 1, inputs, 4, hidden]`` weights."""
    return (4 * hidden * inputs, 4 * hidden * inputs, 1, hidden * inputs, inputs)


class LstmPlan:
    """The forward and backward primitives of one LSTM shape ``(L, N, input, H, reverse)``; creating it raises
    :class:`~._dnnl.DnnlError` where oneDNN has no implementation."""

    def __init__(self, dnnl: d.Binding, length: int, batch: int, inputs: int, hidden: int, reverse: bool):
        self._lock = threading.Lock()  # the memory objects are the plan's: one execution at a time
        self.forward = self.backward = None
        state = (1, 1, batch, hidden)
        shapes = {d.ARG_SRC: (length, batch, inputs), d.ARG_DST: (length, batch, hidden), d.ARG_BIAS: (1, 1, 4, hidden),
                  **{arg: state for arg in _STATES}}
        rows = {d.ARG_WEIGHTS: inputs, d.ARG_WEIGHTS_ITER: hidden}  # the input size each weight multiplies
        made: list = []  # descriptors to destroy

        def keep(md):
            made.append(md)
            return md
        user = {arg: keep(dnnl.memory_desc(shape)) for arg, shape in shapes.items()}
        user.update({arg: keep(dnnl.strided_memory_desc((1, 1, k, 4, hidden), _ldgoi(k, hidden)))
                     for arg, k in rows.items()})
        # the primitive chooses its weights' layouts, for the weights and their gradients alike
        chosen = dict(user)
        chosen.update({arg: keep(dnnl.memory_desc((1, 1, k, 4, hidden), plain=False)) for arg, k in rows.items()})
        chosen.update({arg + d.DIFF: md for arg, md in chosen.items()})
        pds = []
        try:
            fwd = dnnl.lstm_pd("forward", chosen, reverse)
            pds.append(fwd)
            workspace = dnnl.query_md(fwd, d.ARG_WORKSPACE)  # owned by fwd, which outlives its uses here
            self.workspace_bytes = dnnl.size(workspace)
            bwd = dnnl.lstm_pd("backward", chosen, reverse, hint=fwd)
            pds.append(bwd)
            forward_args = {arg: user[arg] for arg in _FORWARD_IN + _FORWARD_OUT}
            self.forward = Execution(dnnl, fwd, {**forward_args, d.ARG_WORKSPACE: workspace},
                                     outputs=_FORWARD_OUT + (d.ARG_WORKSPACE,))
            diffs = {arg + d.DIFF: user[arg] for arg in user}
            gradients = tuple(arg + d.DIFF for arg in _FORWARD_IN)
            self.backward = Execution(dnnl, bwd, {**forward_args, **diffs, d.ARG_WORKSPACE: workspace},
                                      outputs=gradients, accumulated=(d.ARG_DIFF_WEIGHTS, d.ARG_WEIGHTS_ITER + d.DIFF))
        finally:
            for pd in pds:
                dnnl.destroy("primitive_desc", pd)
            for md in made:
                dnnl.destroy("memory_desc", md)

    def run(self, execution: Execution, arrays: dict, arena: Arena) -> None:
        with self._lock:
            execution.run(arrays, arena)

    def __del__(self):
        try:
            for execution in (self.forward, self.backward):
                if execution is not None:
                    execution.destroy()
        except Exception:  # at interpreter exit the library may be gone already
            pass


class Lstms:
    """The ``lstm`` kernel over one :class:`~._dnnl.Binding`, with a cache of plans per shape; ``fallback`` is the
    kernel to run where oneDNN does not (ember's built-in CPU kernel)."""

    def __init__(self, dnnl: d.Binding, fallback):
        self.dnnl, self.fallback = dnnl, fallback
        self._plans = PlanCache(lambda *key: LstmPlan(dnnl, *key), CACHE_SIZE)
        self._arena = Arena()
        #: how many calls ran on oneDNN, and how many went to the fallback (for tests)
        self.calls: collections.Counter = collections.Counter()

    def forward(self, ctx, xp, x, w_ih, b, w_hh, h0, c0, w_hr, reverse=False):
        """``LSTM.forward`` on oneDNN; sets ``ctx.bptt`` to :meth:`backward`."""
        plan = None
        if w_hr is None and _supported(x, w_ih, b, w_hh, h0, c0):
            plan = self._plans.get((x.shape[0], x.shape[1], x.shape[2], w_hh.shape[1], bool(reverse)))
        if plan is None:
            self.calls["fallback"] += 1
            return self.fallback(ctx, xp, x, w_ih, b, w_hh, h0, c0, w_hr, reverse)
        length, batch, _ = x.shape
        hidden = w_hh.shape[1]
        arrays = _inputs(x, w_ih, b, w_hh, h0, c0)
        out = arrays[d.ARG_DST] = np.empty((length, batch, hidden), np.float32)
        h_n = arrays[d.ARG_DST_ITER] = np.empty((batch, hidden), np.float32)
        c_n = arrays[d.ARG_DST_ITER_C] = np.empty((batch, hidden), np.float32)
        arrays[d.ARG_WORKSPACE] = _aligned(plan.workspace_bytes)
        follow_blas()
        plan.run(plan.forward, arrays, self._arena)
        ctx.reverse, ctx.attrs, ctx.bptt = reverse, {"reverse": reverse}, self.backward
        ctx.onednn_plan, ctx.workspace = plan, arrays[d.ARG_WORKSPACE]
        self.calls["lstm"] += 1
        return out, h_n, c_n

    def backward(self, ctx, g_out, g_hn, g_cn):
        """Backward through time of :meth:`forward`'s call (the op's ``bptt``): the gradients of its seven inputs."""
        x, w_ih, b, w_hh, h0, c0, _ = ctx.saved_tensors
        out, h_n, c_n = (t._data for t in ctx.saved_output)  # version-checked
        arrays = _inputs(x._data, w_ih._data, None if b is None else b._data, w_hh._data, h0._data, c0._data)
        arrays.update({d.ARG_DST: out, d.ARG_DST_ITER: h_n, d.ARG_DST_ITER_C: c_n, d.ARG_WORKSPACE: ctx.workspace})
        for arg, g in ((d.ARG_DST, g_out), (d.ARG_DST_ITER, g_hn), (d.ARG_DST_ITER_C, g_cn)):
            arrays[arg + d.DIFF] = _contiguous(g._data)
        grads = {}
        for arg in _FORWARD_IN:
            shape = arrays[arg].shape
            # the weights' and bias's gradients are added into: they start at zero
            grads[arg] = arrays[arg + d.DIFF] = np.zeros(shape, np.float32) if arg in _WEIGHTS + (d.ARG_BIAS,) \
                else np.empty(shape, np.float32)
        follow_blas()
        plan = ctx.onednn_plan
        plan.run(plan.backward, arrays, self._arena)
        return _wrap((grads[d.ARG_SRC], grads[d.ARG_WEIGHTS], grads[d.ARG_BIAS], grads[d.ARG_WEIGHTS_ITER],
                      grads[d.ARG_SRC_ITER], grads[d.ARG_SRC_ITER_C], None), ctx.needs_input_grad, ctx._out_device)


def _supported(x, w_ih, b, w_hh, h0, c0) -> bool:
    """Whether oneDNN runs this LSTM: float32 throughout, no projection, nothing empty, and every shape the one
    the primitive will read (it reads by shape: anything else goes to ember's kernel, which raises)."""
    arrays = (x, w_ih, w_hh, h0, c0) + (() if b is None else (b,))
    if not (all(a.dtype == np.float32 for a in arrays) and x.ndim == 3 and x.size > 0 and w_hh.ndim == 2
            and w_hh.shape[0] == 4 * w_hh.shape[1] and w_hh.size > 0):
        return False
    gates, hidden = w_hh.shape
    state = (x.shape[1], hidden)
    return (w_ih.shape == (gates, x.shape[2]) and (b is None or b.shape == (gates,)) and h0.shape == state
            and c0.shape == state)


def _contiguous(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous float32 array: itself, or a copy (a float16/bfloat16 op's saved tensors and
    gradients keep their dtype; its forward ran in float32)."""
    return a if a.flags.c_contiguous and a.dtype == np.float32 else np.ascontiguousarray(a, dtype=np.float32)


def _inputs(x, w_ih, b, w_hh, h0, c0) -> dict:
    """The forward's input arrays by argument index, C-contiguous (a missing bias as zeros)."""
    return {d.ARG_SRC: _contiguous(x), d.ARG_WEIGHTS: _contiguous(w_ih), d.ARG_WEIGHTS_ITER: _contiguous(w_hh),
            d.ARG_BIAS: np.zeros(w_hh.shape[0], np.float32) if b is None else _contiguous(b),
            d.ARG_SRC_ITER: _contiguous(h0), d.ARG_SRC_ITER_C: _contiguous(c0)}
