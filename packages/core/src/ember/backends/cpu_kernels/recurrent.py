"""The CPU backend's NumPy kernel of the LSTM op: the recurrence in preallocated buffers, in place.

Same inputs, outputs and equations as :class:`ember.ops.recurrent.LSTM`, whose
array-API forward and backward run on every other backend; the input projection
``x @ W_ih^T + b`` and its gradients are that op's own functions. The generic
version allocates a few arrays per time step; here every step writes into
buffers made once for the whole sequence (NumPy's ``out=``), which is where
the time goes for the small matrices of a recurrence.

- The gates are kept gate-major, ``[L, 4, N, H]``: NumPy is much slower on
  one gate's columns of a ``[N, 4 * H]`` row (a strided view) than on a whole
  contiguous block, so every per-step operation here is on contiguous blocks.
  The recurrent product is then one batched matmul, ``h @ W_k^T`` for the
  four gates ``k`` (faster than one ``[N, 4 * H]`` product at these sizes).
- One ``tanh`` serves all four gates: ``sigmoid(a) = (1 + tanh(a / 2)) / 2``,
  and halving the ``i, f, o`` blocks of ``x_proj`` and ``W_hh`` up front is
  exact, so a step is ``tanh`` of ``x_proj[t] * s + h @ (W_hh * s)^T`` followed
  by ``* s + (1 - s)``, with ``s`` 1/2 on those gates and 1 on ``g``.
- The hidden and cell states live in ``[L + 1, ...]`` buffers that also hold
  ``h0`` / ``c0``, so every step's previous state is a view of them, for the
  recurrence and for backward.
- Backward (BPTT) first computes, for all steps at once, the factors that
  turn ``(dc, dc, dc, dh)`` into the gates' gradients; the loop over time
  scales one step's block of them in place and runs the ``dh @ W_hh``
  product; the gradient of ``x_proj`` is that buffer back in ``[L, N, 4 * H]``
  order, and the gradients of ``x``, the weights and the bias are one matmul
  (or sum) each at the end.
"""
from __future__ import annotations

import numpy as np

from ...ops.recurrent import LSTM, _steps, _wrap, input_grads, input_projection
from ..numpy_namespace import xp as _xp

__all__ = ["KERNELS"]


def _states(length, batch, size, first, reverse, dtype):
    """A ``[L + 1, N, size]`` buffer holding ``first`` where the sequence starts: ``(steps view, previous view)``.

    ``steps[t]`` is the state after step ``t``; ``previous[t]`` the one it started from.
    """
    buf = np.empty((length + 1, batch, size), dtype=dtype)
    if reverse:
        buf[length] = first
        return buf[:length], buf[1:]
    buf[0] = first
    return buf[1:], buf[:length]


def _gate_major(a, hidden):
    """``[L, N, 4 * H]`` as a ``[L, 4, N, H]`` view."""
    return np.reshape(a, (a.shape[0], a.shape[1], 4, hidden)).transpose(0, 2, 1, 3)


def lstm(ctx, xp, x, w_ih, b, w_hh, h0, c0, w_hr, reverse=False):
    """The forward of ``ember.ops.recurrent.LSTM`` on NumPy arrays (the generic one for mixed dtypes)."""
    if any(a is not None and a.dtype != x.dtype for a in (w_ih, b, w_hh, h0, c0, w_hr)):
        return LSTM.forward(ctx, xp, x, w_ih, b, w_hh, h0, c0, w_hr, reverse)
    ctx.reverse, ctx.attrs, ctx.bptt = reverse, {"reverse": reverse}, lstm_backward
    x_proj = input_projection(_xp, x, w_ih, b)  # through the namespace: a plugin's GEMM, if any
    length, batch, gates = x_proj.shape
    hidden, out_size, dtype = gates // 4, h0.shape[-1], x_proj.dtype
    half = np.full((4, 1, 1), 0.5, dtype=dtype)
    half[2] = 1
    scale = np.broadcast_to(half, (4, batch, hidden)).copy()  # a step's shape: NumPy's fastest path
    shift = 1 - scale
    acts = np.multiply(_gate_major(x_proj, hidden), half, out=np.empty((length, 4, batch, hidden), dtype=dtype))
    w_t = np.reshape(w_hh, (4, hidden, out_size)).transpose(0, 2, 1)
    w_t = np.multiply(w_t, half, out=np.empty((4, out_size, hidden), dtype=dtype))
    cells, c_prev = _states(length, batch, hidden, c0, reverse, dtype)
    tanh_cells = np.empty((length, batch, hidden), dtype=dtype)
    out, h_prev = _states(length, batch, out_size, h0, reverse, dtype)
    unprojected = hs = out
    if w_hr is not None:
        w_hr_t = np.ascontiguousarray(w_hr.T)
        unprojected = np.empty((length, batch, hidden), dtype=dtype)
    ig = np.empty((batch, hidden), dtype=dtype)
    recurrent = np.empty((4, batch, hidden), dtype=dtype)
    h, c = h0, c0
    for t in _steps(length, reverse):
        a = acts[t]
        a += np.matmul(h, w_t, out=recurrent)
        np.tanh(a, out=a)
        a *= scale
        a += shift
        c = cells[t]
        np.multiply(a[1], c_prev[t], out=c)
        np.multiply(a[0], a[2], out=ig)
        c += ig
        np.tanh(c, out=tanh_cells[t])
        h = np.multiply(a[3], tanh_cells[t], out=unprojected[t])
        if w_hr is not None:
            h = np.matmul(h, w_hr_t, out=hs[t])
    ctx.acts, ctx.c_prev, ctx.tanh_cells, ctx.h_prev = acts, c_prev, tanh_cells, h_prev
    ctx.unprojected = None if w_hr is None else unprojected
    return out, h.copy(), c.copy()


def _gate_factors(acts, c_prev, tanh_cells):
    """``[L, 4, N, H]``: what turns ``(dc, dc, dc, dh)`` into the gradients of the gates' pre-activations at
    every step, ``(i' g, f' c_prev, g' i, o' tanh(c))`` with ``s' = s (1 - s)`` and ``g' = 1 - g^2``."""
    i, g = acts[:, 0], acts[:, 2]
    factors = np.subtract(1, acts)
    factors *= acts  # s (1 - s), then times what the gate multiplies
    factors[:, 0] *= g
    factors[:, 1] *= c_prev
    factors[:, 3] *= tanh_cells
    g_slope = np.multiply(g, g)
    np.subtract(1, g_slope, out=g_slope)
    np.multiply(g_slope, i, out=factors[:, 2])
    return factors


def _flat(a):
    return np.reshape(a, (a.shape[0] * a.shape[1], a.shape[2]))


def lstm_backward(ctx, g_out, g_hn, g_cn):
    """Backward through time of :func:`lstm`, on arrays; returns the gradients of its five inputs.

    ``d[t] = factors[t] * (dc, dc, dc, dh)`` gate by gate, with ``dc`` gaining ``dh * o * (1 - tanh(c)^2)``
    at every step; ``d`` starts as the factors and is scaled in place, a step at a time.
    """
    x, w_ih, _, w_hh, h0, c0, w_hr = ctx.saved_tensors
    ctx.saved_output  # noqa: B018 -- the version check of the outputs whose buffer this backward reads
    acts, c_prev, tanh_cells, unprojected = ctx.acts, ctx.c_prev, ctx.tanh_cells, ctx.unprojected
    length, _, batch, hidden = acts.shape
    d = _gate_factors(acts, c_prev, tanh_cells)
    dc_dh = np.multiply(tanh_cells, tanh_cells)
    np.subtract(1, dc_dh, out=dc_dh)
    dc_dh *= acts[:, 3]
    g_out = g_out._data
    w = np.reshape(w_hh._data, (4, hidden, -1))
    dh, dc = g_hn._data.copy(), g_cn._data.copy()
    d_proj = None
    if w_hr is not None:
        w_r = w_hr._data
        d_proj = np.empty(g_out.shape, dtype=dh.dtype)
    step = np.empty((batch, hidden), dtype=dh.dtype)
    parts = np.empty((4, *dh.shape), dtype=dh.dtype)
    for t in _steps(length, not ctx.reverse):
        dh += g_out[t]
        du = dh
        if d_proj is not None:
            d_proj[t] = dh
            du = np.matmul(dh, w_r)
        np.multiply(du, dc_dh[t], out=step)
        dc += step
        dt = d[t]
        dt[:3] *= dc
        dt[3] *= du
        dc *= acts[t, 1]
        np.add.reduce(np.matmul(dt, w, out=parts), axis=0, out=dh)
    d_gates = np.empty((length, batch, 4 * hidden), dtype=d.dtype)
    np.copyto(_gate_major(d_gates, hidden), d)
    needs = ctx.needs_input_grad
    dx, dw_ih, db = input_grads(_xp, d_gates, x._data, w_ih._data, needs)
    dw = _xp.matmul(_flat(d_gates).T, _flat(ctx.h_prev)) if needs[3] else None  # a plugin's GEMM, if any
    dw_r = np.matmul(_flat(d_proj).T, _flat(unprojected)) if needs[6] else None
    return _wrap((dx, dw_ih, db, dw, dh, dc, dw_r), needs, ctx._out_device)


KERNELS = {"lstm": lstm}
