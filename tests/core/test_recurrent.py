"""The recurrent layer ops (ember.ops.recurrent) against NumPy step loops; gradchecks on both backends."""
import numpy as np
import pytest

import ember
from ember.ops.recurrent import gru_layer, lstm_layer, rnn_layer

from .helpers import check_grads, rand64

L, N, H = 3, 2, 2


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def _order(reverse):
    return list(reversed(range(L))) if reverse else list(range(L))


def ref_rnn(x_proj, w_hh, h0, nonlinearity, reverse):
    act = np.tanh if nonlinearity == "tanh" else (lambda a: np.maximum(a, 0))
    out = np.zeros((L, N, w_hh.shape[0]))
    h = h0
    for t in _order(reverse):
        h = act(x_proj[t] + h @ w_hh.T)
        out[t] = h
    return out, h


def ref_lstm(x, w_ih, b, w_hh, h0, c0, w_hr, reverse):
    out = np.zeros((L, N, h0.shape[1]))
    h, c = h0, c0
    for t in _order(reverse):
        gates = x[t] @ w_ih.T + (0 if b is None else b) + h @ w_hh.T
        i, f, g, o = np.split(gates, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        if w_hr is not None:
            h = h @ w_hr.T
        out[t] = h
    return out, h, c


def ref_gru(x_proj, w_hh, b_hh, h0, reverse):
    out = np.zeros((L, N, h0.shape[1]))
    h = h0
    for t in _order(reverse):
        gh = h @ w_hh.T + (0 if b_hh is None else b_hh)
        x_r, x_z, x_n = np.split(x_proj[t], 3, axis=1)
        h_r, h_z, h_n = np.split(gh, 3, axis=1)
        r, z = _sigmoid(x_r + h_r), _sigmoid(x_z + h_z)
        n = np.tanh(x_n + r * h_n)
        h = (1 - z) * n + z * h
        out[t] = h
    return out, h


def _np(*tensors):
    return [None if t is None else t.detach().cpu().numpy() for t in tensors]


def _close(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().cpu().numpy(), w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_layer(device, nonlinearity, reverse):
    x_proj, w_hh, h0 = rand64(L, N, H, device=device), rand64(H, H, seed=1, device=device), rand64(N, H, seed=2,
                                                                                                    device=device)
    _close(rnn_layer(x_proj, w_hh, h0, nonlinearity, reverse), ref_rnn(*_np(x_proj, w_hh, h0), nonlinearity,
                                                                         reverse))
    check_grads(lambda *a: rnn_layer(*a, nonlinearity, reverse), x_proj, w_hh, h0)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("proj", [None, 1])
def test_lstm_layer(device, proj, bias, reverse):
    out_size, inp = proj or H, 3
    x = rand64(L, N, inp, device=device)
    w_ih = rand64(4 * H, inp, seed=5, device=device)
    b = rand64(4 * H, seed=6, device=device) if bias else None
    w_hh = rand64(4 * H, out_size, seed=1, device=device)
    h0, c0 = rand64(N, out_size, seed=2, device=device), rand64(N, H, seed=3, device=device)
    w_hr = rand64(proj, H, seed=4, device=device) if proj else None
    got = lstm_layer(x, w_ih, b, w_hh, h0, c0, w_hr, reverse)
    assert [tuple(t.shape) for t in got] == [(L, N, out_size), (N, out_size), (N, H)]
    _close(got, ref_lstm(*_np(x, w_ih, b, w_hh, h0, c0, w_hr), reverse))
    inputs = [x, w_ih, b, w_hh, h0, c0, w_hr]
    given = [t for t in inputs if t is not None]

    def layer(*args):
        it = iter(args)
        return lstm_layer(*[None if t is None else next(it) for t in inputs], reverse)
    check_grads(layer, *given)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_gru_layer(device, bias, reverse):
    x_proj, w_hh = rand64(L, N, 3 * H, device=device), rand64(3 * H, H, seed=1, device=device)
    b_hh = rand64(3 * H, seed=2, device=device) if bias else None
    h0 = rand64(N, H, seed=3, device=device)
    _close(gru_layer(x_proj, w_hh, b_hh, h0, reverse), ref_gru(*_np(x_proj, w_hh, b_hh, h0), reverse))
    if bias:
        check_grads(lambda *a: gru_layer(*a, reverse=reverse), x_proj, w_hh, b_hh, h0)
    else:
        check_grads(lambda x, w, h: gru_layer(x, w, None, h, reverse=reverse), x_proj, w_hh, h0)


def test_gradient_of_only_some_outputs_and_inputs():
    """Unused outputs get zero gradients; inputs that need none get none (and the rest stay right)."""
    x, w_hh = rand64(L, N, 3), rand64(4 * H, H, seed=1, requires_grad=False)
    w_ih, b = rand64(4 * H, 3, seed=4, requires_grad=False), rand64(4 * H, seed=5)
    h0, c0 = rand64(N, H, seed=2, requires_grad=False), rand64(N, H, seed=3)
    check_grads(lambda x, b, c: lstm_layer(x, w_ih, b, w_hh, h0, c)[2], x, b, c0)
    check_grads(lambda x, b, c: lstm_layer(x, w_ih, b, w_hh, h0, c)[0], x, b, c0)


def test_double_backward_through_the_composite_path():
    x_proj, w_hh, h0 = rand64(2, 1, 2), rand64(2, 2, seed=1), rand64(1, 2, seed=2)
    assert ember.autograd.gradgradcheck(lambda *a: rnn_layer(*a), (x_proj, w_hh, h0))
    x4, w_ih, b = rand64(2, 1, 3), rand64(8, 3, seed=7), rand64(8, seed=8)
    w4, c0 = rand64(8, 2, seed=3), rand64(1, 2, seed=4)
    assert ember.autograd.gradgradcheck(lambda *a: lstm_layer(*a)[0], (x4, w_ih, b, w4, h0, c0))
    x3, w3, b3 = rand64(2, 1, 6), rand64(6, 2, seed=5), rand64(6, seed=6)
    assert ember.autograd.gradgradcheck(lambda *a: gru_layer(*a)[1], (x3, w3, b3, h0))


def test_double_backward_leaves_the_outer_graph_usable():
    """create_graph=True recomputes inside backward; the outer graph's other nodes still run once, correctly."""
    w_hh = rand64(H, H, seed=1)
    x = rand64(L, N, H, seed=2)
    h0 = rand64(N, H, seed=3)
    out, h_n = rnn_layer(x * 2, w_hh, h0)
    g, = ember.autograd.grad(out.sum(), w_hh, create_graph=True)
    (g * g).sum().backward()
    # reference: the same penalty through the composite (op-free) formulation
    w2, x2, h2 = (t.detach().requires_grad_() for t in (w_hh, x, h0))
    from ember.ops.recurrent import RNN
    out2, _ = RNN.composite(x2 * 2, w2, h2)
    g2, = ember.autograd.grad(out2.sum(), w2, create_graph=True)
    (g2 * g2).sum().backward()
    for a, b in ((w_hh, w2), (x, x2), (h0, h2)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10)


def test_float32_stays_float32():
    x = ember.randn(3, 2, 5, requires_grad=True)
    out, h_n, c_n = lstm_layer(x, ember.randn(8, 5), ember.randn(8), ember.randn(8, 2), ember.zeros(2, 2),
                               ember.zeros(2, 2))
    assert out.dtype == h_n.dtype == c_n.dtype == ember.float32
    out.sum().backward()
    assert x.grad.dtype == ember.float32


def test_unknown_nonlinearity():
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'. Select from 'tanh' or 'relu'"):
        rnn_layer(ember.zeros(1, 1, 1), ember.zeros(1, 1), ember.zeros(1, 1), "sigmoid")


@pytest.mark.parametrize("bad, message", [
    (dict(w_ih=(8, 4)), "w_ih has shape \\[8, 4\\], expected \\[8, 3\\]"),
    (dict(b=(7,)), "b has shape \\[7\\], expected \\[8\\]"),
    (dict(h0=(3, 2)), "h0 has shape \\[3, 2\\], expected \\[2, 2\\]"),
    (dict(c0=(2, 5)), "c0 has shape \\[2, 5\\], expected \\[2, 2\\]"),
    (dict(w_hh=(8, 3)), "w_hh \\[8, 3\\] has 3 columns but the hidden size is 2"),
    (dict(x=(3, 2)), "expected x \\[L, N, input\\]"),
])
def test_lstm_layer_names_the_input_whose_shape_does_not_fit(bad, message):
    shapes = dict(x=(4, 2, 3), w_ih=(8, 3), b=(8,), w_hh=(8, 2), h0=(2, 2), c0=(2, 2))
    shapes.update(bad)
    inputs = {name: ember.zeros(*shape) for name, shape in shapes.items()}
    with pytest.raises(ValueError, match=message):
        lstm_layer(**inputs)
