"""Recurrent layers as ops: one layer and direction of an Elman RNN, an LSTM or a GRU over a whole sequence.

The input-to-hidden projection ``x @ W_ih.T + b_ih`` does not depend on the
recurrence: it runs for all time steps in one matmul. For the RNN and the GRU
the caller computes it and passes it in as ``x_proj`` (``[L, N, gates *
hidden]``); the LSTM op takes ``x``, ``W_ih`` and the bias itself and computes
it first, so that a backend can run the whole layer as one kernel (oneDNN's
LSTM primitive, through ember-onednn). Each op then runs the sequential part,
the hidden-to-hidden matmul and the gate arithmetic, in one forward over time,
and differentiates it in one backward pass through time (BPTT) with the gate
activations it kept, instead of recording a few dozen small ops per time step.

Gate layouts and equations are PyTorch's (``W_hh`` is ``[gates * hidden, hidden]``):

- RNN: ``h' = tanh(x_proj + h W_hh^T)`` (or relu).
- LSTM, gates ``i, f, g, o``: ``c' = f * c + i * g``, ``h' = o * tanh(c')``, with
  ``g = tanh(.)`` and the others sigmoid, over ``x @ W_ih^T + b + h W_hh^T``; with a
  projection ``h' = (o * tanh(c')) W_hr^T``. ``b`` is ``b_ih + b_hh`` (or None).
- GRU, gates ``r, z, n``: ``n = tanh(x_n + r * (h W_hn^T + b_hn))``, ``h' = (1 - z) * n + z * h``.
  ``b_hh`` is an input of the GRU op because ``b_hn`` sits inside ``r * (.)``; for the
  RNN the caller folds ``b_hh`` into ``x_proj``.

The fast backward works on arrays. Under ``create_graph=True`` (double
backward) it instead recomputes the layer with ordinary ember ops and
differentiates that, so higher derivatives are exact too.

>>> import ember
>>> from ember.ops.recurrent import lstm_layer
>>> x, w_ih = ember.zeros(5, 2, 4), ember.zeros(4 * 3, 4)  # [L, N, input], [4 * hidden, input]
>>> h0, c0 = ember.zeros(2, 3), ember.zeros(2, 3)
>>> out, h_n, c_n = lstm_layer(x, w_ih, None, ember.zeros(12, 3), h0, c0)
>>> out.shape, h_n.shape
(ember.Size([5, 2, 3]), ember.Size([2, 3]))
"""
from __future__ import annotations

from ..autograd import grad
from ..autograd.function import Op
from ..autograd.grad_mode import STATE
from ._common import Tensor
from .matmul import matmul
from .shape import stack

__all__ = ["rnn_layer", "lstm_layer", "gru_layer"]


# -- array helpers (array API only, so any backend runs them) -----------------------------------------------
def _sigmoid(xp, a):
    return 1 / (1 + xp.exp(-a))


def _steps(length, reverse):
    return range(length - 1, -1, -1) if reverse else range(length)


def _transpose(xp, w):
    return xp.permute_dims(w, (1, 0))


def _previous(xp, seq, first, reverse):
    """For every step, the state it started from: ``first`` then ``seq`` shifted by one (mirrored if reverse)."""
    first = xp.expand_dims(first, axis=0)
    if reverse:
        return xp.concat([seq[1:, ...], first], axis=0)
    return xp.concat([first, seq[:-1, ...]], axis=0)


def _contiguous_transpose(xp, w):
    """``w.T`` as a fresh row-major array (a matmul with it runs faster than with a transposed view)."""
    return xp.reshape(_transpose(xp, w), (w.shape[1], w.shape[0]), copy=True)


def _flat(xp, a):
    return xp.reshape(a, (a.shape[0] * a.shape[1], a.shape[2]))


def _weight_grad(xp, d_seq, input_seq):
    """``sum_t d_seq[t]^T @ input_seq[t]`` as one matmul."""
    return xp.matmul(_transpose(xp, _flat(xp, d_seq)), _flat(xp, input_seq))


def _xp_of(t):
    device = t._device
    return (device._backend or device.backend).xp


class _Layer(Op, abstract=True):
    """What the three layer ops share: saved inputs and outputs, and the double-backward path.

    Each subclass also defines ``composite``: the same layer written with ember
    ops, differentiable to any order (the forward keeps its attributes in ``ctx.attrs``).
    """
    multi_output = True
    saves_inputs = True
    saves_output = True

    @classmethod
    def higher_order_grads(cls, ctx, grads):
        """Gradients as differentiable ember expressions: recompute the layer with ember ops, then ``grad``.

        The inputs enter the recomputation through fresh ``clone`` nodes, so the
        inner ``grad`` stops there and never runs (or frees) the outer graph.
        """
        inputs = ctx.saved_tensors
        needs = ctx.needs_input_grad
        proxies = [t.clone() if need else t for t, need in zip(inputs, needs)]
        outputs = cls.composite(*proxies, **ctx.attrs)
        wanted = [p for p, need in zip(proxies, needs) if need]
        found = iter(grad(outputs, wanted, grads, create_graph=True, allow_unused=True))
        return tuple(next(found) if need else None for need in needs)


def _wrap(arrays, needs, device):
    return tuple(Tensor._make(a, device) if need and a is not None else None for a, need in zip(arrays, needs))


# -- Elman RNN ---------------------------------------------------------------------------------------------
class RNN(_Layer):
    """``h' = act(x_proj[t] + h @ W_hh^T)`` over the sequence; inputs ``x_proj, w_hh, h0``."""

    name_ = "rnn"

    @staticmethod
    def forward(ctx, xp, x_proj, w_hh, h0, nonlinearity="tanh", reverse=False):
        ctx.reverse, ctx.nonlinearity = reverse, nonlinearity
        ctx.attrs = {"nonlinearity": nonlinearity, "reverse": reverse}
        w_t = _contiguous_transpose(xp, w_hh)
        out = xp.empty(x_proj.shape, dtype=x_proj.dtype)
        h = h0
        for t in _steps(x_proj.shape[0], reverse):
            pre = x_proj[t, ...] + xp.matmul(h, w_t)
            h = xp.tanh(pre) if nonlinearity == "tanh" else xp.maximum(pre, xp.zeros_like(pre))
            out[t, ...] = h
        return out, h

    @staticmethod
    def backward(ctx, g_out, g_hn):
        if STATE.enabled:
            return RNN.higher_order_grads(ctx, (g_out, g_hn))
        x_proj, w_hh, h0 = ctx.saved_tensors
        out = ctx.saved_output[0]._data
        xp = _xp_of(g_out)
        g_out, w = g_out._data, w_hh._data
        d_pre = xp.empty(out.shape, dtype=out.dtype)
        dh = g_hn._data
        for t in _steps(out.shape[0], not ctx.reverse):
            dh = dh + g_out[t, ...]
            h = out[t, ...]
            if ctx.nonlinearity == "tanh":
                d = dh * (1 - h * h)
            else:
                d = xp.where(h > 0, dh, xp.zeros_like(dh))
            d_pre[t, ...] = d
            dh = xp.matmul(d, w)
        needs = ctx.needs_input_grad
        dw = _weight_grad(xp, d_pre, _previous(xp, out, h0._data, ctx.reverse)) if needs[1] else None
        return _wrap((d_pre, dw, dh), needs, ctx._out_device)

    @staticmethod
    def composite(x_proj, w_hh, h0, nonlinearity="tanh", reverse=False):
        h = h0
        outs = [None] * x_proj.shape[0]
        for t in _steps(x_proj.shape[0], reverse):
            pre = x_proj[t] + matmul(h, w_hh.mT)
            h = pre.tanh() if nonlinearity == "tanh" else pre.relu()
            outs[t] = h
        return stack(outs), h



# -- LSTM --------------------------------------------------------------------------------------------------
def input_projection(xp, x, w_ih, b):
    """``x @ w_ih^T + b`` for every step of ``x`` (``[L, N, input]``): ``[L, N, gates * hidden]`` in one matmul."""
    proj = xp.matmul(_flat(xp, x), _transpose(xp, w_ih))
    if b is not None:
        proj += b
    return xp.reshape(proj, (x.shape[0], x.shape[1], w_ih.shape[0]))


def input_grads(xp, d_proj, x, w_ih, needs):
    """The gradients of ``x``, ``w_ih`` and the bias from ``d_proj``, the gradient of :func:`input_projection`'s
    result (``needs``: which of the three are wanted; the others are None)."""
    d_flat = _flat(xp, d_proj)
    dx = xp.reshape(xp.matmul(d_flat, w_ih), x.shape) if needs[0] else None
    dw = xp.matmul(_transpose(xp, d_flat), _flat(xp, x)) if needs[1] else None
    return dx, dw, (xp.sum(d_flat, axis=0) if needs[2] else None)


class LSTM(_Layer):
    """The LSTM layer; inputs ``x, w_ih, b, w_hh, h0, c0, w_hr`` (``b`` None without biases, ``w_hr`` None
    without a projection)."""

    name_ = "lstm"

    @staticmethod
    def forward(ctx, xp, x, w_ih, b, w_hh, h0, c0, w_hr, reverse=False):
        ctx.reverse, ctx.attrs, ctx.bptt = reverse, {"reverse": reverse}, LSTM.bptt
        x_proj = input_projection(xp, x, w_ih, b)
        length, batch, gates = x_proj.shape
        hidden = gates // 4
        w_t = _contiguous_transpose(xp, w_hh)
        dtype = x_proj.dtype
        out = xp.empty((length, batch, h0.shape[-1]), dtype=dtype)
        acts = xp.empty(x_proj.shape, dtype=dtype)  # i, f, g, o after their nonlinearities
        cells = xp.empty((length, batch, hidden), dtype=dtype)
        tanh_cells = xp.empty((length, batch, hidden), dtype=dtype)
        unprojected = None
        if w_hr is not None:
            w_hr_t = _contiguous_transpose(xp, w_hr)
            unprojected = xp.empty((length, batch, hidden), dtype=dtype)
        h, c = h0, c0
        g_slice = slice(2 * hidden, 3 * hidden)
        for t in _steps(length, reverse):
            pre = x_proj[t, ...] + xp.matmul(h, w_t)
            s = _sigmoid(xp, pre)
            g = xp.tanh(pre[:, g_slice])
            c = s[:, hidden:2 * hidden] * c + s[:, :hidden] * g
            tc = xp.tanh(c)
            h = s[:, 3 * hidden:] * tc
            acts[t, ...] = s
            acts[t, :, g_slice] = g
            cells[t, ...] = c
            tanh_cells[t, ...] = tc
            if unprojected is not None:
                unprojected[t, ...] = h
                h = xp.matmul(h, w_hr_t)
            out[t, ...] = h
        ctx.acts, ctx.cells, ctx.tanh_cells, ctx.unprojected = acts, cells, tanh_cells, unprojected
        return out, h, c

    @staticmethod
    def backward(ctx, g_out, g_hn, g_cn):
        if STATE.enabled:
            return LSTM.higher_order_grads(ctx, (g_out, g_hn, g_cn))
        return ctx.bptt(ctx, g_out, g_hn, g_cn)

    @staticmethod
    def bptt(ctx, g_out, g_hn, g_cn):
        """Backward through time on arrays: what the forward set as ``ctx.bptt`` (a backend's kernel sets its own)."""
        x, w_ih, _, w_hh, h0, c0, w_hr = ctx.saved_tensors
        out = ctx.saved_output[0]._data
        xp = _xp_of(g_out)
        length, batch, gates = ctx.acts.shape
        hidden = gates // 4
        # everything that does not depend on the incoming gradient, for all steps at once:
        # d_pre[t] = coef[t] * (dc, dc, dc, dh) gate by gate, and dc gets dh * dc_dh from h = o * tanh(c)
        acts = xp.reshape(ctx.acts, (length, batch, 4, hidden))
        i, f, g, o = (acts[:, :, k, :] for k in range(4))
        tanh_cells = ctx.tanh_cells
        c_prev = _previous(xp, ctx.cells, c0._data, ctx.reverse)
        coef = xp.stack([i * (1 - i) * g, f * (1 - f) * c_prev, (1 - g * g) * i, o * (1 - o) * tanh_cells], axis=2)
        dc_dh = o * (1 - tanh_cells * tanh_cells)
        g_out, w = g_out._data, w_hh._data
        d_pre = xp.empty(acts.shape, dtype=acts.dtype)
        d_proj = None
        if w_hr is not None:
            w_r = w_hr._data
            d_proj = xp.empty(out.shape, dtype=out.dtype)
        dh, dc = g_hn._data, g_cn._data
        for t in _steps(length, not ctx.reverse):
            dh = dh + g_out[t, ...]
            if d_proj is not None:
                d_proj[t, ...] = dh
                dh = xp.matmul(dh, w_r)
            dc = dc + dh * dc_dh[t, ...]
            d_pre[t, :, :3, :] = coef[t, :, :3, :] * xp.reshape(dc, (batch, 1, hidden))
            d_pre[t, :, 3, :] = coef[t, :, 3, :] * dh
            dc = dc * f[t, ...]
            dh = xp.matmul(xp.reshape(d_pre[t, ...], (batch, gates)), w)
        d_pre = xp.reshape(d_pre, (length, batch, gates))
        needs = ctx.needs_input_grad
        dx, dw_ih, db = input_grads(xp, d_pre, x._data, w_ih._data, needs)
        dw = _weight_grad(xp, d_pre, _previous(xp, out, h0._data, ctx.reverse)) if needs[3] else None
        dw_r = _weight_grad(xp, d_proj, ctx.unprojected) if needs[6] else None
        return _wrap((dx, dw_ih, db, dw, dh, dc, dw_r), needs, ctx._out_device)

    @staticmethod
    def composite(x, w_ih, b, w_hh, h0, c0, w_hr, reverse=False):
        x_proj = matmul(x, w_ih.mT)
        if b is not None:
            x_proj = x_proj + b
        h, c = h0, c0
        outs = [None] * x_proj.shape[0]
        for t in _steps(x_proj.shape[0], reverse):
            i, f, g, o = (x_proj[t] + matmul(h, w_hh.mT)).chunk(4, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
            if w_hr is not None:
                h = matmul(h, w_hr.mT)
            outs[t] = h
        return stack(outs), h, c


# -- GRU ---------------------------------------------------------------------------------------------------
class GRU(_Layer):
    """The GRU recurrence; inputs ``x_proj, w_hh, b_hh, h0`` (``b_hh`` None without biases)."""

    name_ = "gru"

    @staticmethod
    def forward(ctx, xp, x_proj, w_hh, b_hh, h0, reverse=False):
        ctx.reverse, ctx.attrs = reverse, {"reverse": reverse}
        length, batch, gates = x_proj.shape
        hidden = gates // 3
        w_t = _contiguous_transpose(xp, w_hh)
        out = xp.empty((length, batch, hidden), dtype=x_proj.dtype)
        acts = xp.empty(x_proj.shape, dtype=x_proj.dtype)  # r, z, n after their nonlinearities
        hidden_n = xp.empty((length, batch, hidden), dtype=x_proj.dtype)  # h W_hn^T + b_hn
        h = h0
        for t in _steps(length, reverse):
            hh = xp.matmul(h, w_t)
            if b_hh is not None:
                hh = hh + b_hh
            x = x_proj[t, ...]
            rz = _sigmoid(xp, x[:, :2 * hidden] + hh[:, :2 * hidden])
            hn = hh[:, 2 * hidden:]
            n = xp.tanh(x[:, 2 * hidden:] + rz[:, :hidden] * hn)
            h = n + rz[:, hidden:] * (h - n)
            acts[t, :, :2 * hidden] = rz
            acts[t, :, 2 * hidden:] = n
            hidden_n[t, ...] = hn
            out[t, ...] = h
        ctx.acts, ctx.hidden_n = acts, hidden_n
        return out, h

    @staticmethod
    def backward(ctx, g_out, g_hn):
        if STATE.enabled:
            return GRU.higher_order_grads(ctx, (g_out, g_hn))
        x_proj, w_hh, b_hh, h0 = ctx.saved_tensors
        out = ctx.saved_output[0]._data
        xp = _xp_of(g_out)
        acts, hidden_n = ctx.acts, ctx.hidden_n
        hidden = out.shape[2]
        g_out, w = g_out._data, w_hh._data
        h_prev_seq = _previous(xp, out, h0._data, ctx.reverse)
        d_x = xp.empty(acts.shape, dtype=acts.dtype)
        d_hh = xp.empty(acts.shape, dtype=acts.dtype)
        dh = g_hn._data
        for t in _steps(out.shape[0], not ctx.reverse):
            dh = dh + g_out[t, ...]
            s = acts[t, ...]
            r, z, n = s[:, :hidden], s[:, hidden:2 * hidden], s[:, 2 * hidden:]
            d_n = dh * (1 - z) * (1 - n * n)
            d_r = d_n * hidden_n[t, ...] * r * (1 - r)
            d_z = dh * (h_prev_seq[t, ...] - n) * z * (1 - z)
            d_x[t, :, :hidden] = d_r
            d_x[t, :, hidden:2 * hidden] = d_z
            d_x[t, :, 2 * hidden:] = d_n
            d_hh[t, :, :hidden] = d_r
            d_hh[t, :, hidden:2 * hidden] = d_z
            d_hh[t, :, 2 * hidden:] = d_n * r
            dh = dh * z + xp.matmul(d_hh[t, ...], w)
        needs = ctx.needs_input_grad
        dw = _weight_grad(xp, d_hh, h_prev_seq) if needs[1] else None
        db = xp.sum(d_hh, axis=(0, 1)) if needs[2] else None
        return _wrap((d_x, dw, db, dh), needs, ctx._out_device)

    @staticmethod
    def composite(x_proj, w_hh, b_hh, h0, reverse=False):
        h = h0
        outs = [None] * x_proj.shape[0]
        for t in _steps(x_proj.shape[0], reverse):
            hh = matmul(h, w_hh.mT)
            if b_hh is not None:
                hh = hh + b_hh
            x_r, x_z, x_n = x_proj[t].chunk(3, 1)
            h_r, h_z, h_n = hh.chunk(3, 1)
            r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
            n = (x_n + r * h_n).tanh()
            h = (1 - z) * n + z * h
            outs[t] = h
        return stack(outs), h


# -- public functions --------------------------------------------------------------------------------------
def rnn_layer(x_proj, w_hh, h0, nonlinearity="tanh", reverse=False):
    """One Elman RNN layer and direction over a sequence: ``(output [L, N, H], h_n [N, H])``.

    ``x_proj`` is ``x @ W_ih^T + b_ih + b_hh`` for every step (``[L, N, H]``).

    >>> import ember
    >>> out, h_n = rnn_layer(ember.ones(3, 1, 2), ember.zeros(2, 2), ember.zeros(1, 2))
    >>> h_n
    tensor([[0.7616, 0.7616]])
    """
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
    return RNN.apply(x_proj, w_hh, h0, nonlinearity=nonlinearity, reverse=reverse)


def lstm_layer(x, w_ih, b, w_hh, h0, c0, w_hr=None, reverse=False):
    """One LSTM layer and direction: ``(output [L, N, H_out], h_n [N, H_out], c_n [N, H])``.

    ``x`` is the input sequence (``[L, N, input]``), ``w_ih`` (``[4 * H, input]``) and ``w_hh``
    (``[4 * H, H_out]``) the input and recurrent weights, ``b`` (``[4 * H]``) is ``b_ih + b_hh`` or None, and
    ``w_hr`` (``[H_out, H]``) the optional projection of the hidden state.

    >>> import ember
    >>> out, h_n, c_n = lstm_layer(ember.ones(3, 1, 1), ember.ones(4, 1), None, ember.zeros(4, 1),
    ...                            ember.zeros(1, 1), ember.zeros(1, 1))
    >>> c_n
    tensor([[1.2614]])
    """
    _check_lstm_shapes(x, w_ih, b, w_hh, h0, c0, w_hr)
    return LSTM.apply(x, w_ih, b, w_hh, h0, c0, w_hr, reverse=reverse)


def _check_lstm_shapes(x, w_ih, b, w_hh, h0, c0, w_hr) -> None:
    """A ValueError naming the first input whose shape does not fit the others (kernels read by these shapes)."""
    if x.ndim != 3 or w_ih.ndim != 2 or w_hh.ndim != 2 or w_hh.shape[0] % 4:
        raise ValueError(f"lstm_layer: expected x [L, N, input], w_ih [4*H, input] and w_hh [4*H, H_out], got "
                         f"{list(x.shape)}, {list(w_ih.shape)} and {list(w_hh.shape)}")
    gates, (_, batch, inputs) = w_hh.shape[0], x.shape
    hidden, out_size = gates // 4, w_hh.shape[1]
    expected = {"w_ih": (w_ih, (gates, inputs)), "b": (b, (gates,)), "h0": (h0, (batch, out_size)),
                "c0": (c0, (batch, hidden)), "w_hr": (w_hr, (out_size, hidden))}
    if w_hr is None and out_size != hidden:
        raise ValueError(f"lstm_layer: w_hh {list(w_hh.shape)} has {out_size} columns but the hidden size is "
                         f"{hidden}, and no projection w_hr is given")
    for name, (t, shape) in expected.items():
        if t is not None and tuple(t.shape) != shape:
            raise ValueError(f"lstm_layer: {name} has shape {list(t.shape)}, expected {list(shape)} (from x "
                             f"{list(x.shape)} and w_hh {list(w_hh.shape)})")


def gru_layer(x_proj, w_hh, b_hh, h0, reverse=False):
    """One GRU layer and direction: ``(output [L, N, H], h_n [N, H])``.

    ``x_proj`` is ``x @ W_ih^T + b_ih`` for every step (``[L, N, 3 * H]``); ``b_hh``
    (``[3 * H]`` or None) is added to ``h @ W_hh^T``, as PyTorch's GRU does.

    >>> import ember
    >>> out, h_n = gru_layer(ember.zeros(2, 1, 3), ember.zeros(3, 1), None, ember.ones(1, 1))
    >>> h_n
    tensor([[0.2500]])
    """
    return GRU.apply(x_proj, w_hh, b_hh, h0, reverse=reverse)
