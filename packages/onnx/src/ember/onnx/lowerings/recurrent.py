"""ONNX lowerings of the recurrent layer ops (RNN, LSTM, GRU), with ember's gate order mapped to ONNX's.

ember's recurrent ops run one layer and direction over a sequence. Each
becomes the standard ONNX ``RNN`` / ``LSTM`` / ``GRU`` node, with the gate
blocks of the weights reordered from PyTorch's order into ONNX's (LSTM
``i, f, g, o`` -> ``i, o, f, c``; GRU ``r, z, n`` -> ``z, r, h``) by a
``Gather`` of their rows. The LSTM op receives the sequence ``x`` and ``W_ih``
itself: they are ONNX's ``X`` and ``W``, and its bias ``b_ih + b_hh`` is the
input half of ``B``. The RNN and GRU ops receive the input projection
``x_proj = x @ W_ih^T + b`` (``[L, N, gates * H]``), already computed by a
``linear`` op: it is their ``X``, and ``W`` is the constant permutation matrix
that reorders its gate blocks, a product that is exact, so the node computes
what ember's op computes. The recurrent weights ``R`` are ``W_hh`` reordered,
and GRU's ``b_hh`` (which PyTorch applies inside ``r * (.)``, ONNX's
``linear_before_reset=1``) goes to the recurrent half of ``B``. An LSTM with
``proj_size`` (a projection ONNX's LSTM lacks) becomes a ``Scan`` over
PyTorch's cell, after one ``MatMul`` for the input projection of all steps.
"""
from __future__ import annotations

import numpy as np

from ember._sibling_api import numpy_dtype
from onnx import numpy_helper

#: for each ONNX gate block, the ember (PyTorch) block it comes from
_LSTM_ORDER = (0, 3, 1, 2)  # i, o, f, c  <-  i, f, g, o
_GRU_ORDER = (1, 0, 2)  # z, r, h  <-  r, z, n
_RNN_ORDER = (0,)


def _ints(g, values):
    return g.const(np.asarray(values, dtype=np.int64))


def _rows(order, hidden):
    """The row indices that put the gate blocks of a ``[gates * hidden, ...]`` matrix in ONNX's ``order``."""
    return np.concatenate([np.arange(k * hidden, (k + 1) * hidden) for k in order])


def _hidden(node):
    """The hidden size ``H``: the size of the op's last output, the final state (``h_n``; ``c_n`` for the LSTM)."""
    return node.output_shapes[-1][-1]


def _zero_constant(g, name):
    """Whether ``name`` is a constant of zeros: the initial states a layer makes itself when none are given
    (they are constants of the traced batch size, so they are left to ONNX's default of zeros instead)."""
    for proto in getattr(g, "initializers", ()):
        if proto.name == name:
            return not numpy_helper.to_array(proto).any()
    return False


def _weight(g, w, order, hidden):
    """ember's weight ``w`` (``[gates * H, in]``) as an ONNX ``W`` or ``R``: ``[1, gates * H, in]``, gates reordered."""
    return g.op("Unsqueeze", g.op("Gather", w, _ints(g, _rows(order, hidden)), axis=0), _ints(g, [0]))


def _permutation(g, node, order):
    """ONNX's ``W`` for an input that is already ``x_proj``: the constant matrix whose gate row ``j`` reads
    column ``rows[j]`` of ``x_proj``, so the product only reorders the gate blocks."""
    rows = _rows(order, _hidden(node))
    return g.const(np.eye(len(rows), dtype=numpy_dtype(node.input_dtypes[0]))[rows][None])


def _recurrence(g, node, op_type, order, x, w, w_hh, biases=(None, None), initial=(), **attributes):
    """The ONNX node for one layer and direction; returns ``[output, h_n, (c_n)]`` in ember's shapes.

    ``x`` is the node's input ``X`` and ``w`` its ``W`` (ONNX's layout and gate order); ``w_hh`` is ember's
    recurrent weight, ``biases`` are ember's input and recurrent bias (each ``[gates * H]`` or ``None``, the
    halves of ``B``), ``initial`` the values of the initial states (``[N, H]`` each).
    """
    hidden = _hidden(node)
    gates = len(order) * hidden
    b = ""
    if any(bias is not None for bias in biases):
        zeros = g.const(np.zeros(gates, dtype=numpy_dtype(node.input_dtypes[0])))
        rows = _ints(g, _rows(order, hidden))
        halves = [zeros if bias is None else g.op("Gather", bias, rows, axis=0) for bias in biases]
        b = g.op("Unsqueeze", g.op("Concat", *halves, axis=0), _ints(g, [0]))
    states = ["" if _zero_constant(g, s) else g.op("Unsqueeze", s, _ints(g, [0])) for s in initial]
    direction = "reverse" if node.attrs.get("reverse", False) else "forward"
    outs = g.op(op_type, x, w, _weight(g, w_hh, order, hidden), b, "", *states, outputs=1 + len(initial),
                hidden_size=hidden, direction=direction, **attributes)
    y, *finals = outs
    return [g.op("Squeeze", y, _ints(g, [1]))] + [g.op("Squeeze", s, _ints(g, [0])) for s in finals]


def rnn(g, node):
    """Elman RNN (``tanh`` or ``relu``) as ONNX ``RNN``."""
    x_proj, w_hh, h0 = node.inputs
    activation = {"tanh": "Tanh", "relu": "Relu"}[node.attrs.get("nonlinearity", "tanh")]
    return _recurrence(g, node, "RNN", _RNN_ORDER, x_proj, _permutation(g, node, _RNN_ORDER), w_hh,
                       initial=(h0,), activations=[activation])


def lstm(g, node):
    """LSTM as ONNX ``LSTM``; with ``proj_size`` (which ONNX's LSTM lacks) as a ``Scan`` over the cell."""
    x, w_ih, b, w_hh, h0, c0, w_hr = node.inputs
    if w_hr is not None:
        return _projected_lstm(g, node)
    w = _weight(g, w_ih, _LSTM_ORDER, _hidden(node))
    return _recurrence(g, node, "LSTM", _LSTM_ORDER, x, w, w_hh, biases=(b, None), initial=(h0, c0))


def _state(g, node, name, size):
    """An initial state for ``Scan``: the given one, or zeros sized by ``x``'s (possibly dynamic) batch."""
    if not _zero_constant(g, name):
        return name
    shape = g.op("Concat", g.op("Shape", node.inputs[0], start=1, end=2), _ints(g, [size]), axis=0)
    zero = numpy_helper.from_array(np.zeros(1, dtype=numpy_dtype(node.input_dtypes[0])), "")
    return g.op("ConstantOfShape", shape, value=zero)


def _projected_lstm(g, node):
    """``Scan`` over time of PyTorch's LSTM cell with the projection ``h' = (o * tanh(c')) W_hr^T``, over the
    input projection ``x @ W_ih^T + b`` of all steps."""
    from onnx import helper
    x, w_ih, b, w_hh, h0, c0, w_hr = node.inputs
    hidden, projected = _hidden(node), node.input_shapes[6][0]
    elem = helper.np_dtype_to_tensor_dtype(numpy_dtype(node.input_dtypes[0]))
    w_ih_t, w_t, w_hr_t = (g.op("Transpose", w, perm=[1, 0]) for w in (w_ih, w_hh, w_hr))
    x_proj = g.op("MatMul", x, w_ih_t)
    if b is not None:
        x_proj = g.op("Add", x_proj, b)
    names = {k: g.fresh(f"lstm_cell_{k}") for k in ("h", "c", "x", "h_next", "c_next", "h_out")}
    nodes = []

    def op(op_type, *inputs, **attrs):
        out = g.fresh(f"lstm_cell_{op_type}")
        nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    pre = op("Add", names["x"], op("MatMul", names["h"], w_t))
    split = [g.fresh("lstm_cell_gate") for _ in range(4)]
    nodes.append(helper.make_node("Split", [pre], split, axis=1, **({"num_outputs": 4} if g.opset >= 18 else {})))
    i, f, c_in, o = split
    c_next = op("Add", op("Mul", op("Sigmoid", f), names["c"]), op("Mul", op("Sigmoid", i), op("Tanh", c_in)))
    h_next = op("MatMul", op("Mul", op("Sigmoid", o), op("Tanh", c_next)), w_hr_t)
    nodes += [helper.make_node("Identity", [c_next], [names["c_next"]]),
              helper.make_node("Identity", [h_next], [names["h_next"]]),
              helper.make_node("Identity", [h_next], [names["h_out"]])]

    def info(key, size):
        return helper.make_tensor_value_info(names[key], elem, ["batch", size])

    body = helper.make_graph(nodes, g.fresh("lstm_cell"),
                             [info("h", projected), info("c", hidden), info("x", 4 * hidden)],
                             [info("h_next", projected), info("c_next", hidden), info("h_out", projected)])
    direction = [1 if node.attrs.get("reverse", False) else 0]
    h_n, c_n, out = g.op("Scan", _state(g, node, h0, projected), _state(g, node, c0, hidden), x_proj,
                         outputs=3, body=body, num_scan_inputs=1, scan_input_directions=direction,
                         scan_output_directions=direction)
    return [out, h_n, c_n]


def gru(g, node):
    """GRU as ONNX ``GRU`` with ``linear_before_reset=1`` (PyTorch's ``r * (h W_hn^T + b_hn)``)."""
    x_proj, w_hh, b_hh, h0 = node.inputs
    return _recurrence(g, node, "GRU", _GRU_ORDER, x_proj, _permutation(g, node, _GRU_ORDER), w_hh,
                       biases=(None, b_hh), initial=(h0,), linear_before_reset=1)


LOWERINGS = {"rnn": rnn, "lstm": lstm, "gru": gru}
