"""ember-onednn's convolution kernels give what ember's built-in kernels give: forward (plain and transposed), input
gradient and weight gradient, float32, over strides, paddings, dilations, groups, batch sizes and odd shapes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from ember.backends.cpu_kernels import convolution as built_in
from ember.ops.convolution import ConvGeometry
from ember_onednn import plugin
from ember_onednn._conv import FEW_CHANNELS

pytestmark = pytest.mark.skipif(plugin.convolutions() is None, reason=f"oneDNN is not usable: {plugin.status()}")


class Ctx:
    """What an op's context is to a kernel: attributes set on it."""


def _close(got, ref):
    """Equal to float32 rounding: 1e-5 relative to the result's scale (sums are ordered differently)."""
    assert got.shape == ref.shape and got.dtype == ref.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(ref).max())))


@st.composite
def geometries(draw):
    """A 1-D or 2-D convolution: input, weight, bias, and ember's tight geometry (as ``F.conv2d`` normalises it)."""
    nd = draw(st.sampled_from([1, 2]))
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    c_in, c_out = groups * draw(st.integers(1, 9)), groups * draw(st.integers(1, 4))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(nd))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dilation = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    padding = tuple(draw(st.integers(0, 3)) for _ in range(nd))
    extent = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel))
    size = tuple(draw(st.integers(max(1, e - 2 * p), e + 9)) for e, p in zip(extent, padding))
    batch = draw(st.integers(1, 5))
    small = tuple((n + 2 * p - e) // s + 1 for n, p, e, s in zip(size, padding, extent, stride))
    pads = tuple((p, (m - 1) * s + e - n - p) for p, m, s, e, n in zip(padding, small, stride, extent, size))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((batch, c_in) + size, dtype=np.float32)
    w = rng.standard_normal((c_out, c_in // groups) + kernel, dtype=np.float32)
    b = rng.standard_normal(c_out, dtype=np.float32) if draw(st.booleans()) else None
    g = rng.standard_normal((batch, c_out) + small, dtype=np.float32)
    return x, w, b, g, ConvGeometry(stride, pads, dilation, groups)


@settings(max_examples=150, deadline=None)
@given(geometries())
def test_every_pass_equals_the_built_in_kernels(case):
    x, w, b, g, geometry = case
    kernels = plugin.convolutions()
    before = kernels.calls.copy()
    conv = dict(geometry=geometry, transposed=False)
    _close(kernels.convolution(Ctx(), np, x, w, b, **conv), built_in.convolution(Ctx(), np, x, w, b, **conv))
    adjoint = dict(geometry=geometry, transposed=True)  # the input gradient, and conv_transpose's forward
    _close(kernels.convolution(Ctx(), np, g, w, None, **adjoint),
           built_in.convolution(Ctx(), np, g, w, None, **adjoint))
    bias = None if b is None else np.ones(w.shape[1] * geometry.groups, np.float32)
    _close(kernels.convolution(Ctx(), np, g, w, bias, **adjoint),
           built_in.convolution(Ctx(), np, g, w, bias, **adjoint))
    grad = dict(geometry=geometry, kernel_size=w.shape[2:])
    _close(kernels.weight_grad(Ctx(), np, x, g, **grad), built_in.convolution_weight_grad(Ctx(), np, x, g, **grad))
    ran = kernels.calls - before  # counted by the ctx's op name: "convolution" for a Ctx, which has none
    if geometry.groups == 1 and x.shape[1] < FEW_CHANNELS:  # the transposed passes: ember's kernel is faster
        assert ran == {"convolution": 1, "fallback": 2, "convolutionweightgrad": 1}, ran
    else:
        assert ran == {"convolution": 3, "convolutionweightgrad": 1}, ran


def test_non_contiguous_inputs_are_copied_not_misread():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 9, 4), dtype=np.float32).transpose(0, 1, 3, 2)
    w = rng.standard_normal((6, 5, 3, 3), dtype=np.float32)[:, :, ::-1]
    geometry = ConvGeometry((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    conv = dict(geometry=geometry, transposed=False)
    _close(plugin.convolutions().convolution(Ctx(), np, x, w, None, **conv),
           built_in.convolution(Ctx(), np, x, w, None, **conv))


@pytest.mark.parametrize("transposed", [False, True])
def test_a_model_s_gradients_through_ember_equal_the_built_in_ones(transposed):
    """conv2d / conv_transpose2d with bias, stride, padding, dilation and groups, as autograd runs them."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 24, 11, 10), dtype=np.float32)
    w = rng.standard_normal((24, 8, 3, 2), dtype=np.float32)
    b = rng.standard_normal(24, dtype=np.float32)

    def run():
        xs, ws, bs = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
        if transposed:
            y = F.conv_transpose2d(xs, ws, bs, stride=2, padding=1, output_padding=1, groups=3, dilation=2)
        else:
            y = F.conv2d(xs, ws, bs, stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=3)
        (y * y).sum().backward()
        return [t.detach().numpy() for t in (y, xs.grad, ws.grad, bs.grad)]

    kernels = plugin.convolutions()
    before = kernels.calls.copy()
    fast = run()
    assert sum((kernels.calls - before).values()) == 3 and not (kernels.calls - before)["fallback"]
    ember.unregister_plugin("onednn")
    try:
        reference = run()
    finally:
        ember.register_plugin(plugin, "onednn")
    for got, ref in zip(fast, reference):
        _close(got, ref)


def test_an_empty_batch_goes_to_the_built_in_kernels():
    kernels = plugin.convolutions()
    before = kernels.calls.copy()
    x = ember.randn(0, 16, 8, 8, requires_grad=True)
    w = ember.randn(32, 16, 3, 3, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    y.sum().backward()
    assert y.shape == (0, 32, 8, 8) and x.grad.shape == x.shape and not w.grad.abs().sum().item()
    assert (kernels.calls - before) == {"fallback": 3}


def test_float64_goes_to_the_built_in_kernels_and_gradcheck_passes():
    kernels = plugin.convolutions()
    before = kernels.calls.copy()
    x = ember.randn(2, 4, 6, 5, dtype=ember.float64, requires_grad=True)
    w = ember.randn(6, 2, 3, 2, dtype=ember.float64, requires_grad=True)
    b = ember.randn(6, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2), (x, w, b))
    ran = kernels.calls - before
    assert ran["fallback"] > 0 and set(ran) == {"fallback"}, ran


def test_threads_running_the_same_shape_at_once_get_their_own_results():
    """A plan's memories are shared (one execution at a time); the scratch buffers are per thread."""
    import concurrent.futures

    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 8, 3, 3), dtype=np.float32)
    inputs = [rng.standard_normal((2, 8, 12, 12), dtype=np.float32) for _ in range(16)]
    conv = dict(geometry=ConvGeometry((1, 1), ((1, 1), (1, 1)), (1, 1), 1), transposed=False)
    kernels = plugin.convolutions()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda x: kernels.convolution(Ctx(), np, x, w, None, **conv), inputs * 4))
    for x, got in zip(inputs * 4, results):
        _close(got, built_in.convolution(Ctx(), np, x, w, None, **conv))
