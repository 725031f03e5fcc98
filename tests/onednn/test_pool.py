"""ember-onednn's max pooling (grad mode off) gives what ember's kernel gives, over strides, paddings, dilations and
ceil mode; with grad mode on, or NaN in the input, ember's kernel runs."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from ember.backends.cpu_kernels import pooling as built_in
from ember.ops.pooling import MaxPool2d
from ember_onednn import plugin

pytestmark = pytest.mark.skipif(plugin.convolutions() is None, reason=f"oneDNN is not usable: {plugin.status()}")


def _pools():
    return plugin._kernel_sets()["pools"]


@st.composite
def pools(draw):
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(2))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(2))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(2))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    extent = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel))
    size = tuple(draw(st.integers(max(1, e - 2 * p), e + 9)) for e, p in zip(extent, padding))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((draw(st.integers(1, 3)), draw(st.integers(1, 5))) + size).astype(np.float32)
    return x, dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                   ceil_mode=draw(st.booleans()))


@settings(max_examples=120, deadline=None)
@given(pools())
def test_without_grad_the_maxima_equal_the_built_in_kernel(case):
    x, geometry = case
    with ember.no_grad():
        got = F.max_pool2d(ember.tensor(x), **geometry)
        MaxPool2d._kernels["cpu"] = built_in.max_pool  # the resolved kernel swapped: both on one backend
        try:
            want = F.max_pool2d(ember.tensor(x), **geometry)
        finally:
            MaxPool2d._kernels.pop("cpu", None)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_the_resnet_stem_pool_runs_on_onednn_and_grad_mode_runs_ember_s_kernel():
    x = ember.randn(2, 8, 32, 32)
    before = _pools().calls.copy()
    with ember.no_grad():
        F.max_pool2d(x, 3, 2, 1)
    assert _pools().calls["max_pool2d"] == before["max_pool2d"] + 1
    x.requires_grad_()
    out = F.max_pool2d(x, 3, 2, 1)
    assert _pools().calls["fallback"] == before["fallback"] + 1
    out.sum().backward()
    assert x.grad.sum().item() == out.numel()  # each output's gradient reached one input


def test_nan_propagates_as_in_pytorch():
    x = ember.zeros(1, 1, 4, 4)
    x[0, 0, 1, 1] = float("nan")
    with ember.no_grad():
        out = F.max_pool2d(x, 2)
    assert np.isnan(out.numpy()[0, 0, 0, 0]) and not np.isnan(out.numpy()[0, 0, 1, 1])


def test_a_window_over_padding_only_gives_minus_infinity_as_pytorch():
    """Taps 2 apart around a 1x1 input: the window reads two padded rows. oneDNN would give the lowest finite
    float; this geometry runs ember's kernel instead."""
    before = _pools().calls["fallback"]
    with ember.no_grad():
        out = F.max_pool2d(ember.tensor([[[[0.5]]]]), (2, 1), stride=1, padding=(1, 0), dilation=(2, 1))
    assert out.numpy().ravel().tolist() == [-np.inf] and _pools().calls["fallback"] == before + 1
