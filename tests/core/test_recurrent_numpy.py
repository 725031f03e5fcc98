"""The CPU backend's NumPy LSTM kernel (ember.backends.cpu_kernels.recurrent) against the generic array-API op."""
import numpy as np
import pytest

import ember
from ember.backends.cpu_kernels import recurrent as _recurrent_numpy
from ember.ops.recurrent import LSTM, lstm_layer

from .helpers import check_grads, rand64


@pytest.fixture(params=["kernel", "generic"])
def forward(request, monkeypatch):
    """Run the LSTM op on the CPU with the NumPy kernel, or with the generic forward."""
    # a plugin may not claim a kernel the CPU backend already gives, so the op's resolved kernel is swapped directly
    kernel = _recurrent_numpy.lstm if request.param == "kernel" else LSTM.forward
    monkeypatch.setitem(LSTM._kernels, "cpu", kernel)
    return request.param


def _run(dtype, proj, reverse, seed=0):
    rng = np.random.default_rng(seed)
    L, N, H, inp = 5, 3, 4, 3
    out_size = proj or H

    def t(*shape):
        return ember.tensor(rng.uniform(-1, 1, shape), dtype=dtype, requires_grad=True)
    inputs = [t(L, N, inp), t(4 * H, inp), t(4 * H), t(4 * H, out_size), t(N, out_size), t(N, H),
              t(proj, H) if proj else None]
    outs = lstm_layer(*inputs, reverse=reverse)
    (outs[0].sum() + (outs[1] * 2).sum() + (outs[2] * 3).sum()).backward()
    assert outs[0].grad_fn.bptt is (_recurrent_numpy.lstm_backward if LSTM._kernels["cpu"] is _recurrent_numpy.lstm
                                    else LSTM.bptt)
    return [o.detach().numpy() for o in outs] + [a.grad.numpy() for a in inputs if a is not None]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("proj", [None, 2])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_kernel_matches_the_generic_op(monkeypatch, dtype, proj, reverse):
    got = {}
    for name, kernel in (("kernel", _recurrent_numpy.lstm), ("generic", LSTM.forward)):
        # swapped directly, as in the fixture above: the only way to run both paths on one backend
        monkeypatch.setitem(LSTM._kernels, "cpu", kernel)
        got[name] = _run(dtype, proj, reverse)
    tol = 1e-5 if dtype == ember.float32 else 1e-12
    for a, b in zip(got["kernel"], got["generic"]):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("reverse", [False, True])
def test_gradcheck(forward, reverse):
    x, w_ih, b, w = rand64(3, 2, 3), rand64(8, 3, seed=4), rand64(8, seed=5), rand64(8, 2, seed=1)
    h0, c0 = rand64(2, 2, seed=2), rand64(2, 2, seed=3)
    check_grads(lambda *a: lstm_layer(*a, reverse=reverse), x, w_ih, b, w, h0, c0)


def test_outputs_do_not_share_memory_with_saved_state(forward):
    x = ember.randn(4, 2, 3, requires_grad=True)
    out, h_n, c_n = lstm_layer(x, ember.randn(8, 3), None, ember.randn(8, 2), ember.zeros(2, 2), ember.zeros(2, 2))
    before = out.detach().numpy().copy()
    h_n.data.add_(1)
    c_n.data.add_(1)
    np.testing.assert_array_equal(out.detach().numpy(), before)


def test_mixed_dtypes_run_the_generic_forward(forward):
    x = ember.randn(3, 2, 3, requires_grad=True)
    h0 = ember.zeros(2, 2, dtype=ember.float64)
    out, h_n, _ = lstm_layer(x, ember.randn(8, 3), ember.randn(8), ember.randn(8, 2), h0, h0)
    assert out.grad_fn.bptt is LSTM.bptt
    out.sum().backward()
    assert x.grad.dtype == ember.float32
