"""ember-onednn's LSTM kernel gives what ember's built-in kernel gives: outputs, final states and the gradients of
every input, forward and reverse, with and without bias and initial states; other cases run the built-in kernel."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.backends.cpu_kernels import recurrent as built_in
from ember.ops.recurrent import LSTM, lstm_layer
from ember_onednn import plugin

pytestmark = pytest.mark.skipif(plugin.lstms() is None, reason=f"oneDNN is not usable: {plugin.status()}")


def _close(got, ref):
    """Equal to float32 rounding: 1e-5 relative to the result's scale (sums are ordered differently)."""
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=2e-5 * max(1.0, float(np.abs(ref).max())))


def _layer(kernel, inputs, reverse, seeds):
    """Outputs and input gradients of one ``lstm_layer`` call on ``kernel``, for a weighted sum of the outputs."""
    LSTM._kernels["cpu"] = kernel  # the resolved kernel, swapped: the only way to run both on one backend
    try:
        leaves = [None if a is None else ember.tensor(a, requires_grad=True) for a in inputs]
        outs = lstm_layer(*leaves, reverse=reverse)
        sum(((o * ember.tensor(s)).sum() for o, s in zip(outs, seeds)), ember.tensor(0.0)).backward()
    finally:
        LSTM._kernels.pop("cpu", None)
    return [o.detach().numpy() for o in outs] + [t.grad.numpy() for t in leaves if t is not None]


@st.composite
def layers(draw):
    length, batch, inputs, hidden = (draw(st.integers(1, n)) for n in (7, 5, 6, 9))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def a(*shape):
        return rng.uniform(-1, 1, shape).astype(np.float32)
    bias = a(4 * hidden) if draw(st.booleans()) else None
    inputs = [a(length, batch, inputs), a(4 * hidden, inputs), bias, a(4 * hidden, hidden), a(batch, hidden),
              a(batch, hidden), None]
    seeds = [a(length, batch, hidden), a(batch, hidden), a(batch, hidden)]
    return inputs, draw(st.booleans()), seeds


@settings(max_examples=40, deadline=None)
@given(layers())
def test_outputs_and_every_gradient_equal_the_built_in_kernel(case):
    inputs, reverse, seeds = case
    lstms = plugin.lstms()
    before = lstms.calls["lstm"]
    got = _layer(plugin.KERNELS["lstm"], inputs, reverse, seeds)
    assert lstms.calls["lstm"] == before + 1
    for g, r in zip(got, _layer(built_in.lstm, inputs, reverse, seeds)):
        _close(g, r)


def test_the_module_runs_on_onednn_and_trains_like_the_built_in_kernel():
    """nn.LSTM (two layers, bidirectional, batch_first: non-contiguous inputs to the op) through the plugin, and its
    parameters' gradients against the built-in kernel's."""
    ember.manual_seed(0)
    model = ember.nn.LSTM(5, 6, num_layers=2, bidirectional=True, batch_first=True)
    x = ember.randn(3, 4, 5)
    grads = {}
    for name, kernel in (("onednn", plugin.KERNELS["lstm"]), ("built-in", built_in.lstm)):
        LSTM._kernels["cpu"] = kernel
        try:
            model.zero_grad()
            out, (h_n, c_n) = model(x)
            (out.sum() + h_n.sum() * 2 + c_n.sum() * 3).backward()
        finally:
            LSTM._kernels.pop("cpu", None)
        grads[name] = [out.detach().numpy()] + [p.grad.numpy() for p in model.parameters()]
    assert plugin.lstms().calls["lstm"] >= 4  # two layers, two directions
    for g, r in zip(grads["onednn"], grads["built-in"]):
        _close(g, r)


def test_what_onednn_does_not_run_goes_to_the_built_in_kernel():
    """float64 and a projection (proj_size) run ember's kernel, with the same results as without the plugin."""
    lstms = plugin.lstms()
    for model, x in ((ember.nn.LSTM(3, 4).double(), ember.randn(2, 1, 3, dtype=ember.float64)),
                     (ember.nn.LSTM(3, 4, proj_size=2), ember.randn(2, 1, 3))):
        before = lstms.calls.copy()
        out, _ = model(x)
        out.sum().backward()
        assert lstms.calls["fallback"] == before["fallback"] + 1 and lstms.calls["lstm"] == before["lstm"]
        assert out.grad_fn.bptt != lstms.backward


def test_retained_graph_and_double_backward():
    """A second backward through a retained graph gives the same gradients; create_graph recomputes with ember ops
    (the composite), so a gradient penalty works on an LSTM run by oneDNN."""
    ember.manual_seed(1)
    model = ember.nn.LSTM(3, 4)
    x = ember.randn(5, 2, 3, requires_grad=True)
    out, _ = model(x)
    assert out.grad_fn.bptt == plugin.lstms().backward
    (g1,) = ember.autograd.grad(out.sum(), [x], retain_graph=True)
    (g2,) = ember.autograd.grad(out.sum(), [x])
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())
    out, _ = model(x)
    (g,) = ember.autograd.grad(out.sum(), [x], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), g1.numpy(), rtol=1e-5, atol=1e-6)
    (g * g).sum().backward()
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()


def test_shapes_the_primitive_would_misread_go_to_the_built_in_kernel():
    """Called with a w_ih that does not fit x (lstm_layer refuses this first), the kernel never lets oneDNN read
    past an array: ember's kernel runs, and NumPy's matmul raises."""
    class Ctx:
        pass
    lstms = plugin.lstms()
    before = lstms.calls["fallback"]
    a = np.zeros
    with pytest.raises(ValueError):
        lstms.forward(Ctx(), np, a((4, 2, 3), np.float32), a((8, 2), np.float32), None, a((8, 2), np.float32),
                      a((2, 2), np.float32), a((2, 2), np.float32), None)
    assert lstms.calls["fallback"] == before + 1
