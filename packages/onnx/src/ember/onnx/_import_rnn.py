"""ONNX RNN, LSTM and GRU as ember's recurrent layer ops, with the weights' gate blocks reordered.

ONNX stacks the gates as ``i, o, f, c`` (LSTM) and ``z, r, h`` (GRU); ember's
layer ops (:mod:`ember.ops.recurrent`) use PyTorch's ``i, f, g, o`` and
``r, z, n``. The reordering is done with ember ops, so gradients reach the
ONNX-layout parameters. A GRU with ``linear_before_reset=0`` (ONNX's default,
which PyTorch has no layer for) runs as a loop over time of ember ops.
"""
from __future__ import annotations

import ember

from ..ops.recurrent import gru_layer, lstm_layer, rnn_layer
from ._import_node import checked_at_load, handles, ints

_LSTM_ORDER = (0, 2, 3, 1)  # ONNX i, o, f, c -> i, f, c(g), o
_GRU_ORDER = (1, 0, 2)      # ONNX z, r, h -> r, z, n
_DIRECTIONS = {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}


def _reorder(t, order, hidden):
    """The gate blocks of ``t`` (stacked along axis 0, ``hidden`` rows each) in ``order``."""
    blocks = ember.split(t, hidden, dim=0)
    return ember.cat([blocks[i] for i in order], dim=0)


# the activations each op supports (the default first), per direction
_ACTIVATIONS = {"RNN": (["tanh"], ["relu"]), "LSTM": (["sigmoid", "tanh", "tanh"],), "GRU": (["sigmoid", "tanh"],)}


@checked_at_load("RNN", "LSTM", "GRU")
def _check_recurrent(node):
    directions = _DIRECTIONS[node.attr("direction", "forward")]  # the load refuses other directions
    activations = [a.lower() for a in node.attr("activations") or []]
    if activations and activations not in [a * len(directions) for a in _ACTIVATIONS[node.op_type]]:
        raise node.unsupported(f"activations {node.attr('activations')}")
    if node.attr("clip") is not None:
        raise node.unsupported("clip")
    if node.op_type == "LSTM" and len(node.inputs) > 7 and node.inputs[7]:
        raise node.unsupported("peepholes (input P)")
    if node.op_type == "LSTM" and node.attr("input_forget", 0):
        raise node.unsupported("input_forget=1")


def _check(node, x, sequence_lens):
    """Directions (reverse flags) and the input as ``[L, N, in]``; rejects sequence_lens shorter than ``x``."""
    directions = _DIRECTIONS[node.attr("direction", "forward")]
    if node.attr("layout", 0):
        x = x.transpose(0, 1)
    if sequence_lens is not None and any(n != x.shape[0] for n in ints(sequence_lens)):
        raise node.unsupported(f"sequence_lens {ints(sequence_lens)} shorter than the sequence ({x.shape[0]})")
    return directions, x


def _initial(node, state, direction, x, hidden):
    if state is None:
        return ember.zeros(x.shape[1], hidden, dtype=x.dtype, device=x.device)
    return (state.transpose(0, 1) if node.attr("layout", 0) else state)[direction]


def _outputs(node, ys, finals):
    """``Y`` ``[L, D, N, H]`` and the final states ``[D, N, H]`` (batch first when ``layout=1``)."""
    y = ember.stack(ys, dim=1)
    finals = [ember.stack(states, dim=0) for states in finals]
    if node.attr("layout", 0):
        return (y.permute(2, 0, 1, 3),) + tuple(s.transpose(0, 1) for s in finals)
    return (y,) + tuple(finals)


@handles("RNN")
def _rnn(node, x, w, r, b=None, sequence_lens=None, initial_h=None):
    directions, x = _check(node, x, sequence_lens)
    nonlinearity = (node.attr("activations") or ["tanh"])[0].lower()
    hidden = r.shape[-1]
    ys, hs = [], []
    for d, reverse in enumerate(directions):
        proj = ember.matmul(x, w[d].t())
        if b is not None:
            proj = proj + b[d, :hidden] + b[d, hidden:]
        y, h = rnn_layer(proj, r[d], _initial(node, initial_h, d, x, hidden), nonlinearity=nonlinearity,
                         reverse=reverse)
        ys.append(y), hs.append(h)
    return _outputs(node, ys, (hs,))


@handles("LSTM")
def _lstm(node, x, w, r, b=None, sequence_lens=None, initial_h=None, initial_c=None, peepholes=None):
    directions, x = _check(node, x, sequence_lens)  # peepholes: refused at load
    hidden = r.shape[-1]
    ys, hs, cs = [], [], []
    for d, reverse in enumerate(directions):
        bias = None if b is None else _reorder(b[d, :4 * hidden] + b[d, 4 * hidden:], _LSTM_ORDER, hidden)
        y, h, c = lstm_layer(x, _reorder(w[d], _LSTM_ORDER, hidden), bias, _reorder(r[d], _LSTM_ORDER, hidden),
                             _initial(node, initial_h, d, x, hidden), _initial(node, initial_c, d, x, hidden),
                             reverse=reverse)
        ys.append(y), hs.append(h), cs.append(c)
    return _outputs(node, ys, (hs, cs))


def _gru_reset_before_linear(proj, r, rb, h, reverse):
    """ONNX's default GRU: ``h~ = tanh(x W_h^T + (r * h) R_h^T + Rb_h + Wb_h)``, gates z, r, h as in ONNX."""
    hidden = h.shape[-1]
    r_z, r_r, r_h = ember.split(r, hidden, dim=0)
    b_z, b_r, b_h = ember.split(rb, hidden, dim=0) if rb is not None else (0, 0, 0)
    steps = range(proj.shape[0] - 1, -1, -1) if reverse else range(proj.shape[0])
    outs = [None] * proj.shape[0]
    for t in steps:
        p_z, p_r, p_h = ember.split(proj[t], hidden, dim=-1)
        z = ember.sigmoid(p_z + ember.matmul(h, r_z.t()) + b_z)
        reset = ember.sigmoid(p_r + ember.matmul(h, r_r.t()) + b_r)
        candidate = ember.tanh(p_h + ember.matmul(reset * h, r_h.t()) + b_h)
        h = (1 - z) * candidate + z * h
        outs[t] = h
    return ember.stack(outs, dim=0), h


@handles("GRU")
def _gru(node, x, w, r, b=None, sequence_lens=None, initial_h=None):
    directions, x = _check(node, x, sequence_lens)
    hidden = r.shape[-1]
    ys, hs = [], []
    for d, reverse in enumerate(directions):
        h0 = _initial(node, initial_h, d, x, hidden)
        wb, rb = (b[d, :3 * hidden], b[d, 3 * hidden:]) if b is not None else (None, None)
        if node.attr("linear_before_reset", 0):
            proj = ember.matmul(x, _reorder(w[d], _GRU_ORDER, hidden).t())
            if wb is not None:
                proj = proj + _reorder(wb, _GRU_ORDER, hidden)
            b_hh = None if rb is None else _reorder(rb, _GRU_ORDER, hidden)
            y, h = gru_layer(proj, _reorder(r[d], _GRU_ORDER, hidden), b_hh, h0, reverse=reverse)
        else:
            proj = ember.matmul(x, w[d].t())
            if wb is not None:
                proj = proj + wb
            y, h = _gru_reset_before_linear(proj, r[d], rb, h0, reverse)
        ys.append(y), hs.append(h)
    return _outputs(node, ys, (hs,))
