"""RNN, LSTM, GRU and their cells against NumPy step loops; parameters, init, dropout, gradients, errors."""
import math
import warnings

import numpy as np
import pytest

import ember
from ember import nn

F64 = ember.float64


# -- NumPy references: one cell step each, with the documented equations ----------------------------------
def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def ref_rnn_cell(x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity="tanh"):
    pre = x @ w_ih.T + h @ w_hh.T
    if b_ih is not None:
        pre = pre + b_ih + b_hh
    return np.tanh(pre) if nonlinearity == "tanh" else np.maximum(pre, 0)


def ref_lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr=None):
    gates = x @ w_ih.T + h @ w_hh.T
    if b_ih is not None:
        gates = gates + b_ih + b_hh
    hidden = c.shape[-1]
    i, f, g, o = (gates[..., k * hidden:(k + 1) * hidden] for k in range(4))
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    h = _sigmoid(o) * np.tanh(c)
    return (h if w_hr is None else h @ w_hr.T), c


def ref_gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    hidden = h.shape[-1]
    gi, gh = x @ w_ih.T, h @ w_hh.T
    if b_ih is not None:
        gi, gh = gi + b_ih, gh + b_hh
    part = [(gi[..., k * hidden:(k + 1) * hidden], gh[..., k * hidden:(k + 1) * hidden]) for k in range(3)]
    r = _sigmoid(part[0][0] + part[0][1])
    z = _sigmoid(part[1][0] + part[1][1])
    n = np.tanh(part[2][0] + r * part[2][1])
    return (1 - z) * n + z * h


def ref_module(m, x, h0=None, c0=None):
    """What ``m`` (RNN/LSTM/GRU) computes for ``x`` of shape (L, N, H_in): a loop over layers, directions, steps."""
    p = {name: t.detach().numpy() for name, t in m.named_parameters()}
    dirs = 2 if m.bidirectional else 1
    out_size = m.proj_size or m.hidden_size
    length, batch = x.shape[:2]
    if h0 is None:
        h0 = np.zeros((m.num_layers * dirs, batch, out_size))
        c0 = np.zeros((m.num_layers * dirs, batch, m.hidden_size))
    layer_in, h_n, c_n = x, [], []
    for layer in range(m.num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w = [p.get(f"{stem}{sfx}") for stem in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            k = layer * dirs + d
            h, c = h0[k], (c0[k] if m.mode == "LSTM" else None)
            out = np.zeros((length, batch, out_size))
            for t in (reversed(range(length)) if d else range(length)):
                if m.mode == "LSTM":
                    h, c = ref_lstm_cell(layer_in[t], h, c, *w, p.get(f"weight_hr{sfx}"))
                elif m.mode == "GRU":
                    h = ref_gru_cell(layer_in[t], h, *w)
                else:
                    h = ref_rnn_cell(layer_in[t], h, *w, "tanh" if m.mode == "RNN_TANH" else "relu")
                out[t] = h
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        layer_in = np.concatenate(outs, axis=2)
    return layer_in, np.stack(h_n), (np.stack(c_n) if m.mode == "LSTM" else None)


def _make(kind, *args, **kw):
    ember.manual_seed(0)
    return getattr(nn, kind)(*args, dtype=F64, **kw)


def _close(got, want, tol=1e-10):
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=tol, atol=tol)


# -- parameters, init, repr --------------------------------------------------------------------------------
# written down by hand from PyTorch 2.13: [(name, tuple(p.shape)) for name, p in m.named_parameters()]
TORCH_PARAMETERS = {
    ("LSTM", (3, 4), (("num_layers", 2), ("bidirectional", True), ("proj_size", 2))): [
        ("weight_ih_l0", (16, 3)), ("weight_hh_l0", (16, 2)), ("bias_ih_l0", (16,)), ("bias_hh_l0", (16,)),
        ("weight_hr_l0", (2, 4)), ("weight_ih_l0_reverse", (16, 3)), ("weight_hh_l0_reverse", (16, 2)),
        ("bias_ih_l0_reverse", (16,)), ("bias_hh_l0_reverse", (16,)), ("weight_hr_l0_reverse", (2, 4)),
        ("weight_ih_l1", (16, 4)), ("weight_hh_l1", (16, 2)), ("bias_ih_l1", (16,)), ("bias_hh_l1", (16,)),
        ("weight_hr_l1", (2, 4)), ("weight_ih_l1_reverse", (16, 4)), ("weight_hh_l1_reverse", (16, 2)),
        ("bias_ih_l1_reverse", (16,)), ("bias_hh_l1_reverse", (16,)), ("weight_hr_l1_reverse", (2, 4))],
    ("GRU", (3, 4), (("num_layers", 2),)): [
        ("weight_ih_l0", (12, 3)), ("weight_hh_l0", (12, 4)), ("bias_ih_l0", (12,)), ("bias_hh_l0", (12,)),
        ("weight_ih_l1", (12, 4)), ("weight_hh_l1", (12, 4)), ("bias_ih_l1", (12,)), ("bias_hh_l1", (12,))],
    ("RNN", (3, 4), (("bidirectional", True),)): [
        ("weight_ih_l0", (4, 3)), ("weight_hh_l0", (4, 4)), ("bias_ih_l0", (4,)), ("bias_hh_l0", (4,)),
        ("weight_ih_l0_reverse", (4, 3)), ("weight_hh_l0_reverse", (4, 4)), ("bias_ih_l0_reverse", (4,)),
        ("bias_hh_l0_reverse", (4,))],
    ("GRU", (3, 4), (("bias", False),)): [("weight_ih_l0", (12, 3)), ("weight_hh_l0", (12, 4))],
    ("LSTMCell", (3, 4), ()): [("weight_ih", (16, 3)), ("weight_hh", (16, 4)), ("bias_ih", (16,)),
                               ("bias_hh", (16,))],
    ("GRUCell", (3, 4), (("bias", False),)): [("weight_ih", (12, 3)), ("weight_hh", (12, 4))],
    ("RNNCell", (3, 4), ()): [("weight_ih", (4, 3)), ("weight_hh", (4, 4)), ("bias_ih", (4,)), ("bias_hh", (4,))],
}


@pytest.mark.parametrize("key", list(TORCH_PARAMETERS), ids=lambda k: k[0] + str(dict(k[2])))
def test_parameter_names_and_shapes_match_pytorch(key):
    kind, args, kwargs = key
    m = getattr(nn, kind)(*args, **dict(kwargs))
    assert [(name, tuple(p.shape)) for name, p in m.named_parameters()] == TORCH_PARAMETERS[key]
    assert list(m.state_dict()) == [name for name, _ in TORCH_PARAMETERS[key]]


def test_all_weights_groups_by_layer_and_direction():
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    groups = m.all_weights
    assert [len(g) for g in groups] == [5, 5, 5, 5]
    assert groups[1][0] is m.weight_ih_l0_reverse and groups[3][4] is m.weight_hr_l1_reverse


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_init_is_uniform_in_one_over_sqrt_hidden(kind):
    ember.manual_seed(0)
    m = getattr(nn, kind)(30, 25)
    bound = 1 / math.sqrt(25)
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert values.min() < -0.95 * bound and values.max() > 0.95 * bound  # spread over the whole interval
    assert abs(values.mean()) < 0.05 * bound


# reprs written down by hand from PyTorch 2.13
@pytest.mark.parametrize("make, text", [
    (lambda: nn.LSTM(10, 20, num_layers=2, batch_first=True), "LSTM(10, 20, num_layers=2, batch_first=True)"),
    (lambda: nn.LSTM(10, 20, 1, bias=False, bidirectional=True, proj_size=5),
     "LSTM(10, 20, proj_size=5, bias=False, bidirectional=True)"),
    (lambda: nn.GRU(10, 20, dropout=0.5, num_layers=2), "GRU(10, 20, num_layers=2, dropout=0.5)"),
    (lambda: nn.RNN(10, 20, nonlinearity="relu"), "RNN(10, 20)"),
    (lambda: nn.RNNCell(10, 20), "RNNCell(10, 20)"),
    (lambda: nn.RNNCell(10, 20, nonlinearity="relu"), "RNNCell(10, 20, nonlinearity=relu)"),
    (lambda: nn.LSTMCell(10, 20, bias=False), "LSTMCell(10, 20, bias=False)"),
    (lambda: nn.GRUCell(10, 20), "GRUCell(10, 20)"),
])
def test_repr(make, text):
    assert repr(make()) == text


# -- outputs against the NumPy loops -----------------------------------------------------------------------
CONFIGS = [
    dict(),
    dict(num_layers=2),
    dict(bidirectional=True),
    dict(num_layers=2, bidirectional=True, batch_first=True),
    dict(bias=False, batch_first=True),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_outputs_and_final_states_match_numpy(kind, config):
    m = _make(kind, 3, 4, **config)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 2, 3))  # (L, N, H_in)
    out_ref, h_ref, c_ref = ref_module(m, x)
    x_in = ember.tensor(x.transpose(1, 0, 2) if m.batch_first else x)
    out, state = m(x_in)
    if kind == "LSTM":
        state, c_n = state
        _close(c_n, c_ref)
    _close(out, out_ref.transpose(1, 0, 2) if m.batch_first else out_ref)
    _close(state, h_ref)
    assert out.dtype == F64


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_given_initial_states(kind):
    m = _make(kind, 3, 4, num_layers=2, bidirectional=True)
    rng = np.random.default_rng(2)
    x, h0, c0 = rng.standard_normal((4, 3, 3)), rng.standard_normal((4, 3, 4)), rng.standard_normal((4, 3, 4))
    out_ref, h_ref, c_ref = ref_module(m, x, h0, c0)
    hx = (ember.tensor(h0), ember.tensor(c0)) if kind == "LSTM" else ember.tensor(h0)
    out, state = m(ember.tensor(x), hx)
    _close(out, out_ref)
    _close(state[0] if kind == "LSTM" else state, h_ref)
    if kind == "LSTM":
        _close(state[1], c_ref)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_unbatched_input_is_a_batch_of_one(kind):
    m = _make(kind, 3, 4, num_layers=2, batch_first=True)
    x = np.random.default_rng(3).standard_normal((5, 3))
    out_ref, h_ref, c_ref = ref_module(m, x[:, None, :])
    out, state = m(ember.tensor(x))
    assert tuple(out.shape) == (5, 4)
    _close(out, out_ref[:, 0])
    _close(state[0] if kind == "LSTM" else state, h_ref[:, 0])
    if kind == "LSTM":
        _close(state[1], c_ref[:, 0])
        h0, c0 = np.ones((2, 4)), np.full((2, 4), 0.5)
        out, (h_n, c_n) = m(ember.tensor(x), (ember.tensor(h0), ember.tensor(c0)))
        out_ref, h_ref, c_ref = ref_module(m, x[:, None, :], h0[:, None], c0[:, None])
        _close(out, out_ref[:, 0])
        _close(c_n, c_ref[:, 0])


def test_lstm_projection():
    m = _make("LSTM", 3, 5, num_layers=2, bidirectional=True, proj_size=2)
    rng = np.random.default_rng(4)
    x, h0, c0 = rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 2, 2)), rng.standard_normal((4, 2, 5))
    out_ref, h_ref, c_ref = ref_module(m, x, h0, c0)
    out, (h_n, c_n) = m(ember.tensor(x), (ember.tensor(h0), ember.tensor(c0)))
    assert (tuple(out.shape), tuple(h_n.shape), tuple(c_n.shape)) == ((4, 2, 4), (4, 2, 2), (4, 2, 5))
    _close(out, out_ref)
    _close(h_n, h_ref)
    _close(c_n, c_ref)


def test_float32_module_keeps_float32():
    ember.manual_seed(0)
    m = nn.LSTM(3, 4, num_layers=2)
    out, (h_n, c_n) = m(ember.randn(5, 2, 3))
    assert out.dtype == h_n.dtype == c_n.dtype == ember.float32
    out.sum().backward()
    assert m.weight_hh_l1.grad.dtype == ember.float32


# -- cells -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell", "RNNCell-relu"])
def test_cells_match_numpy(kind, bias):
    kind, _, act = kind.partition("-")
    m = _make(kind, 3, 4, bias=bias, **({"nonlinearity": act} if act else {}))
    p = [None if t is None else t.detach().numpy() for t in (m.weight_ih, m.weight_hh, m.bias_ih, m.bias_hh)]
    rng = np.random.default_rng(5)
    x, h, c = rng.standard_normal((2, 3)), rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    if kind == "LSTMCell":
        h_ref, c_ref = ref_lstm_cell(x, h, c, *p)
        h1, c1 = m(ember.tensor(x), (ember.tensor(h), ember.tensor(c)))
        _close(h1, h_ref)
        _close(c1, c_ref)
        h0, c0 = m(ember.tensor(x[0]))  # unbatched, zero state
        h_ref, c_ref = ref_lstm_cell(x[0], np.zeros(4), np.zeros(4), *p)
        _close(h0, h_ref)
        _close(c0, c_ref)
        return
    step = ref_gru_cell if kind == "GRUCell" else (lambda *a: ref_rnn_cell(*a, act or "tanh"))
    _close(m(ember.tensor(x), ember.tensor(h)), step(x, h, *p))
    _close(m(ember.tensor(x[1])), step(x[1], np.zeros(4), *p))


# -- gradients ---------------------------------------------------------------------------------------------
def _with_parameter(module, name, fn):
    """``fn`` of a stand-in tensor for parameter ``name`` (so gradcheck can perturb it)."""
    # ember has no functional_call yet: the registry entry is swapped so forward reads the stand-in
    def call(x, w):
        saved = module._parameters[name]
        module._parameters[name] = w
        try:
            return fn(x)
        finally:
            module._parameters[name] = saved
    return call


@pytest.mark.parametrize("kind, kw", [("RNN", dict(bidirectional=True)), ("LSTM", dict(num_layers=2)),
                                      ("GRU", dict(bidirectional=True)), ("LSTM", dict(proj_size=1))])
def test_gradcheck_through_layers(kind, kw):
    m = _make(kind, 2, 2, **kw)
    x = ember.tensor(np.random.default_rng(6).standard_normal((3, 2, 2)), requires_grad=True)
    name = "weight_hh_l0_reverse" if kw.get("bidirectional") else "weight_hh_l0"

    def outputs(inp):
        out, state = m(inp)
        return (out,) + (tuple(state) if kind == "LSTM" else (state,))
    assert ember.autograd.gradcheck(_with_parameter(m, name, outputs), (x, getattr(m, name)))


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_gradcheck_through_cells(kind):
    m = _make(kind, 2, 3)
    x = ember.tensor(np.random.default_rng(7).standard_normal((2, 2)), requires_grad=True)
    h = ember.tensor(np.random.default_rng(8).standard_normal((2, 3)), requires_grad=True)
    hx = (h, h * 0.5) if kind == "LSTMCell" else h
    assert ember.autograd.gradcheck(_with_parameter(m, "weight_ih", lambda inp: m(inp, hx)), (x, m.weight_ih))
    assert ember.autograd.gradcheck(lambda state: m(x, (state, state) if kind == "LSTMCell" else state), (h,))


def test_double_backward_through_an_lstm():
    m = _make("LSTM", 2, 2)
    x = ember.tensor(np.random.default_rng(9).standard_normal((2, 1, 2)), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda inp: m(inp)[0], (x,))


# -- dropout between layers --------------------------------------------------------------------------------
def test_dropout_between_layers_only_in_training():
    m = _make("LSTM", 3, 4, num_layers=2, dropout=0.5)
    x = np.random.default_rng(10).standard_normal((5, 2, 3))
    out_ref = ref_module(m, x)[0]
    m.eval()
    _close(m(ember.tensor(x))[0], out_ref)
    m.train()
    ember.manual_seed(1)
    first = m(ember.tensor(x))[0].detach().numpy()
    assert not np.allclose(first, out_ref)
    ember.manual_seed(1)
    np.testing.assert_array_equal(m(ember.tensor(x))[0].detach().numpy(), first)  # follows ember.manual_seed


def test_dropout_one_feeds_zeros_to_the_next_layer():
    """With p=1 the second layer sees only zeros: its output is a one-layer GRU run on a zero sequence."""
    m = _make("GRU", 3, 4, num_layers=2, dropout=1.0)
    x = np.random.default_rng(11).standard_normal((5, 2, 3))
    out, h_n = m(ember.tensor(x))
    top = _make("GRU", 4, 4)
    for stem in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        getattr(top, f"{stem}_l0").data = getattr(m, f"{stem}_l1").detach().clone()
    _close(out, ref_module(top, np.zeros((5, 2, 4)))[0])
    _close(h_n[0], ref_module(m, x)[1][0])  # the first layer is untouched


def test_dropout_with_one_layer_warns():
    # message written down from PyTorch 2.13
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1, but got "
                                         "dropout=0.5 and num_layers=1"):
        nn.LSTM(3, 4, dropout=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.LSTM(3, 4, num_layers=2, dropout=0.5)


# -- errors (messages from PyTorch 2.13) ---------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, error, message", [
    (dict(dropout=1.5), ValueError, "dropout should be a number in range [0, 1]"),
    (dict(dropout=-0.1), ValueError, "dropout should be a number in range [0, 1]"),
    (dict(hidden_size=0), ValueError, "hidden_size must be greater than zero"),
    (dict(hidden_size=4.0), TypeError, "hidden_size should be of type int, got: float"),
    (dict(num_layers=0), ValueError, "num_layers must be greater than zero"),
    (dict(proj_size=-1), ValueError, "proj_size should be a positive integer or zero to disable projections"),
    (dict(proj_size=4), ValueError, "proj_size has to be smaller than hidden_size"),
])
def test_constructor_errors(kwargs, error, message):
    args = dict(input_size=3, hidden_size=4)
    args.update(kwargs)
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        nn.LSTM(**args)


def test_constructor_errors_of_rnn_and_gru():
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'. Select from 'tanh' or 'relu'."):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM, not RNN or GRU"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        nn.RNN(3, 4, foo=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity: x"):
        nn.RNNCell(3, 4, nonlinearity="x")


@pytest.mark.parametrize("kind, x_shape, hx, error, message", [
    ("LSTM", (5, 2, 6), None, RuntimeError, "input.size(-1) must be equal to input_size. Expected 3, got 6"),
    ("LSTM", (5, 2, 3, 1), None, ValueError, "LSTM: Expected input to be 2D or 3D, got 4D instead"),
    ("LSTM", (5, 2, 3), ((1, 2, 4), (2, 2, 4)), RuntimeError, "Expected hidden[0] size (2, 2, 4), got [1, 2, 4]"),
    ("LSTM", (5, 2, 3), ((2, 2, 4), (2, 3, 4)), RuntimeError, "Expected hidden[1] size (2, 2, 4), got [2, 3, 4]"),
    ("LSTM", (5, 3), ((2, 1, 4), (2, 1, 4)), RuntimeError,
     "For unbatched 2-D input, hx and cx should also be 2-D but got (3-D, 3-D) tensors"),
    ("LSTM", (5, 2, 3), ((2, 4), (2, 4)), RuntimeError,
     "For batched 3-D input, hx and cx should also be 3-D but got (2-D, 2-D) tensors"),
    ("GRU", (5, 2, 6), None, RuntimeError, "input.size(-1) must be equal to input_size. Expected 3, got 6"),
    ("GRU", (5, 2, 3), (1, 2, 4), RuntimeError, "Expected hidden size (2, 2, 4), got [1, 2, 4]"),
    ("GRU", (5, 3), (2, 1, 4), RuntimeError, "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    ("RNN", (5, 2, 3), (2, 4), RuntimeError, "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
])
def test_forward_errors(kind, x_shape, hx, error, message):
    m = getattr(nn, kind)(3, 4, num_layers=2)
    if hx is not None:
        hx = tuple(ember.zeros(s) for s in hx) if kind == "LSTM" else ember.zeros(hx)
    with pytest.raises(error) as info:
        m(ember.zeros(x_shape), hx)
    assert message in str(info.value)


@pytest.mark.parametrize("kind, x_shape, hx, error, message", [
    ("LSTMCell", (2, 6), None, RuntimeError, "input has inconsistent input_size: got 6 expected 3"),
    ("LSTMCell", (2, 3, 1), None, ValueError, "LSTMCell: Expected input to be 1D or 2D, got 3D instead"),
    ("LSTMCell", (2, 3), ((3, 4), (3, 4)), RuntimeError, "Input batch size 2 doesn't match hidden0 batch size 3"),
    ("LSTMCell", (2, 3), ((2, 4), (2, 5)), RuntimeError, "hidden1 has inconsistent hidden_size: got 5, expected 4"),
    ("GRUCell", (2, 3, 1), None, ValueError, "GRUCell: Expected input to be 1D or 2D, got 3D instead"),
    ("RNNCell", (2, 3), (2, 4, 1), ValueError, "RNNCell: Expected hidden to be 1D or 2D, got 3D instead"),
    ("RNNCell", (2, 3), (4,), RuntimeError, "Input batch size 2 doesn't match hidden0 batch size 4"),
])
def test_cell_errors(kind, x_shape, hx, error, message):
    m = getattr(nn, kind)(3, 4)
    if hx is not None:
        hx = tuple(ember.zeros(s) for s in hx) if kind == "LSTMCell" else ember.zeros(hx)
    with pytest.raises(error) as info:
        m(ember.zeros(x_shape), hx)
    assert message in str(info.value)
