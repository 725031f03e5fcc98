"""Recurrent layers: RNN, LSTM, GRU and their single-step cells RNNCell, LSTMCell, GRUCell.

Parameter names, shapes, gate order (LSTM ``i, f, g, o``; GRU ``r, z, n``),
initialisation and input/output shapes are PyTorch's, so state dicts move
between the two. Each layer and direction computes the input projection for
all time steps in one matmul and runs the recurrence as one op
(``ember.ops.recurrent``). Packed sequences (``nn.utils.rnn.PackedSequence``)
are not supported: pad the batch and pass the full sequences.

>>> import ember
>>> from ember import nn
>>> _ = ember.manual_seed(0)
>>> lstm = nn.LSTM(10, 20, num_layers=2, batch_first=True)
>>> lstm
LSTM(10, 20, num_layers=2, batch_first=True)
>>> output, (h_n, c_n) = lstm(ember.randn(3, 5, 10))
>>> output.shape, h_n.shape, c_n.shape
(ember.Size([3, 5, 20]), ember.Size([2, 3, 20]), ember.Size([2, 3, 20]))
"""
from __future__ import annotations

import math
import numbers
import warnings

from ember import Tensor, cat, empty, stack, zeros
from ember.ops.recurrent import gru_layer, lstm_layer, rnn_layer

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _input_projection(mode, x, w_ih, b_ih, b_hh):
    """``x @ w_ih.T`` plus the biases the recurrence op does not add itself (all of them but GRU's ``b_hh``)."""
    if b_ih is None:
        return F.linear(x, w_ih)
    return F.linear(x, w_ih, b_ih if mode == "GRU" else b_ih + b_hh)


def _run_direction(mode, x, weights, h0, c0, reverse):
    """One layer and direction over ``x`` ([L, N, H_in]): ``(output, h_n, c_n or None)``."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    if mode == "LSTM":  # the op projects the input itself (a backend may run the whole layer as one kernel)
        b = None if b_ih is None else b_ih + b_hh
        return lstm_layer(x, w_ih, b, w_hh, h0, c0, w_hr, reverse=reverse)
    x_proj = _input_projection(mode, x, w_ih, b_ih, b_hh)
    if mode == "GRU":
        out, h_n = gru_layer(x_proj, w_hh, b_hh, h0, reverse=reverse)
    else:
        out, h_n = rnn_layer(x_proj, w_hh, h0, "tanh" if mode == "RNN_TANH" else "relu", reverse=reverse)
    return out, h_n, None


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters per layer and direction, shape checks, the layer loop."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=3)
        for name, value in (("hidden_size", hidden_size), ("num_layers", num_layers)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * num_directions
            for direction in range(num_directions):
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for stem, shape in shapes:
                    setattr(self, stem + suffix, Parameter(empty(shape, device=device, dtype=dtype)))
                    names.append(stem + suffix)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias uniform in ``(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``, as in PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def flatten_parameters(self) -> None:
        """Does nothing: PyTorch packs the weights into one buffer for cuDNN here; ember's ops need no packing."""

    @property
    def all_weights(self) -> list:
        """The parameters, one list per layer and direction (``[w_ih, w_hh, b_ih, b_hh, w_hr]`` as present)."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _layer_weights(self, index):
        """``(w_ih, w_hh, b_ih, b_hh, w_hr)`` of layer-direction ``index`` (None where absent)."""
        names = self._all_weights[index]
        suffix = names[0][len("weight_ih"):]
        return tuple(getattr(self, stem + suffix) if stem + suffix in names else None
                     for stem in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"))

    # -- checks ---------------------------------------------------------------------------------------------
    def _check_input_dim(self, input):
        if not isinstance(input, Tensor):
            raise TypeError(f"{self._get_name()}: expected input to be a Tensor, got {type(input).__name__}")
        if input.dim() not in (2, 3):
            raise ValueError(f"{self._get_name()}: Expected input to be 2D or 3D, got {input.dim()}D instead")

    def _check_input_size(self, input):
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{self._get_name()}: input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]} (input of size {list(input.shape)})")

    def _check_hidden(self, hx, expected, label="hidden"):
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"Expected {label} size {expected}, got {list(hx.shape)}")

    def _states_shape(self, batch, size):
        return ((2 if self.bidirectional else 1) * self.num_layers, batch, size)

    # -- the computation ------------------------------------------------------------------------------------
    def _run(self, input, h0, c0):
        """All layers over ``input`` ([L, N, H_in]): ``(output, h_n, c_n or None)``."""
        num_directions = 2 if self.bidirectional else 1
        layer_input = input
        h_finals, c_finals = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                out, h_n, c_n = _run_direction(self.mode, layer_input, self._layer_weights(k), h0[k],
                                               None if c0 is None else c0[k], reverse=direction == 1)
                outputs.append(out)
                h_finals.append(h_n)
                c_finals.append(c_n)
            layer_input = outputs[0] if num_directions == 1 else cat(outputs, dim=2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        return layer_input, stack(h_finals), (stack(c_finals) if c0 is not None else None)

    def _forward(self, input, hx, cx):
        """The shared body of forward (after the rank checks): batching, default states, checks, the run."""
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1)
            hx = None if hx is None else hx.unsqueeze(1)
            cx = None if cx is None else cx.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        self._check_input_size(input)
        batch = input.shape[1]
        out_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        h_shape, c_shape = self._states_shape(batch, out_size), self._states_shape(batch, self.hidden_size)
        if hx is None:
            hx = zeros(h_shape, dtype=input.dtype, device=input.device)
            if self.mode == "LSTM":
                cx = zeros(c_shape, dtype=input.dtype, device=input.device)
        if self.mode == "LSTM":
            self._check_hidden(hx, h_shape, "hidden[0]")
            self._check_hidden(cx, c_shape, "hidden[1]")
        else:
            self._check_hidden(hx, h_shape)
        output, h_n, c_n = self._run(input, hx, cx)
        if not batched:
            return output.squeeze(1), h_n.squeeze(1), (None if c_n is None else c_n.squeeze(1))
        if self.batch_first:
            output = output.transpose(0, 1)
        return output, h_n, c_n

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


def _no_projection(kwargs):
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
    if kwargs:
        raise TypeError(f"RNNBase.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")


def _check_hx_rank(input, hx):
    if hx is None:
        return
    if input.dim() == 3 and hx.dim() != 3:
        raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
    if input.dim() == 2 and hx.dim() != 2:
        raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu), per layer.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)``. ``forward(input, hx=None)``
    takes ``(L, N, H_in)`` (``(N, L, H_in)`` with ``batch_first``, or unbatched
    ``(L, H_in)``) and returns ``(output, h_n)``; ``h_n`` is
    ``(num_layers * num_directions, N, hidden_size)``.

    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> rnn = ember.nn.RNN(4, 3, nonlinearity="relu", bidirectional=True)
    >>> output, h_n = rnn(ember.randn(6, 2, 4))
    >>> output.shape, h_n.shape
    (ember.Size([6, 2, 6]), ember.Size([2, 2, 3]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None, **kwargs):
        _no_projection(kwargs)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size,
                         num_layers, bias, batch_first, dropout, bidirectional, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        self._check_input_dim(input)
        _check_hx_rank(input, hx)
        output, h_n, _ = self._forward(input, hx, None)
        return output, h_n


class GRU(RNNBase):
    """Gated recurrent unit, gates ``r, z, n`` with PyTorch's equations.

    ``n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_{t-1} + b_hn))`` and
    ``h_t = (1 - z_t) * n_t + z_t * h_{t-1}``. Arguments, inputs and outputs as :class:`RNN`.

    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> gru = ember.nn.GRU(4, 3, num_layers=2, batch_first=True)
    >>> output, h_n = gru(ember.randn(2, 6, 4))
    >>> output.shape, h_n.shape
    (ember.Size([2, 6, 3]), ember.Size([2, 2, 3]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None, **kwargs):
        _no_projection(kwargs)
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)

    def forward(self, input, hx=None):
        self._check_input_dim(input)
        _check_hx_rank(input, hx)
        output, h_n, _ = self._forward(input, hx, None)
        return output, h_n


class LSTM(RNNBase):
    """Long short-term memory, gates ``i, f, g, o``: ``c_t = f * c_{t-1} + i * g``, ``h_t = o * tanh(c_t)``.

    With ``proj_size > 0`` the hidden state is projected, ``h_t = W_hr (o * tanh(c_t))``, and
    ``h_n`` / the output have ``proj_size`` features. ``forward(input, (h_0, c_0)=None)``
    returns ``(output, (h_n, c_n))``.

    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> lstm = ember.nn.LSTM(4, 3, proj_size=2)
    >>> output, (h_n, c_n) = lstm(ember.randn(6, 4))   # unbatched
    >>> output.shape, h_n.shape, c_n.shape
    (ember.Size([6, 2]), ember.Size([1, 2]), ember.Size([1, 3]))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        self._check_input_dim(input)
        h0 = c0 = None
        if hx is not None:
            h0, c0 = hx
            want = input.dim()
            if h0.dim() != want or c0.dim() != want:
                kind = "batched 3-D" if want == 3 else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({h0.dim()}-D, {c0.dim()}-D) tensors")
        output, h_n, c_n = self._forward(input, h0, c0)
        return output, (h_n, c_n)


# -- cells -------------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """What the cells share: ``weight_ih`` ``[chunks * hidden, input]``, ``weight_hh``, biases, checks."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias uniform in ``(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``, as in PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input, states):
        """Batch an unbatched input and its states, zero-fill missing states, check every shape."""
        name = self._get_name()
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected input to be a Tensor, got {type(input).__name__}")
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for s in states:
            if s is not None and s.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {s.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            states = [None if s is None else s.unsqueeze(0) for s in states]
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                               f"{self.input_size}")
        batch = input.shape[0]
        states = [zeros(batch, self.hidden_size, dtype=input.dtype, device=input.device) if s is None else s
                  for s in states]
        for k, s in enumerate(states):
            if s.shape[0] != batch:
                raise RuntimeError(f"Input batch size {batch} doesn't match hidden{k} batch size {s.shape[0]}")
            if s.shape[-1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {s.shape[-1]}, expected "
                                   f"{self.hidden_size}")
        return batched, input, states

    def _step(self, mode, input, states):
        """One step of the recurrence op over a length-1 sequence."""
        batched, input, states = self._prepare(input, states)
        weights = (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, None)
        _, h, c = _run_direction(mode, input.unsqueeze(0), weights, states[0],
                                 states[1] if len(states) > 1 else None, reverse=False)
        out = (h,) if c is None else (h, c)
        return out if batched else tuple(t.squeeze(0) for t in out)


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu); ``hx`` defaults to zeros.

    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> cell = ember.nn.RNNCell(4, 3, nonlinearity="relu")
    >>> cell
    RNNCell(4, 3, nonlinearity=relu)
    >>> cell(ember.randn(2, 4)).shape
    ember.Size([2, 3])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        return self._step(mode, input, [hx])[0]


class LSTMCell(RNNCellBase):
    """One LSTM step: ``(h', c')`` from ``input`` and ``hx = (h, c)`` (zeros when omitted).

    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> h, c = ember.nn.LSTMCell(4, 3)(ember.randn(2, 4))
    >>> h.shape, c.shape
    (ember.Size([2, 3]), ember.Size([2, 3]))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        h, c = (None, None) if hx is None else hx
        return self._step("LSTM", input, [h, c])


class GRUCell(RNNCellBase):
    """One GRU step (gates ``r, z, n``, PyTorch's equations); ``hx`` defaults to zeros.

    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> ember.nn.GRUCell(4, 3)(ember.randn(4)).shape
    ember.Size([3])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._step("GRU", input, [hx])[0]
