"""The CPU backend's ``relu`` kernel and the backward's arrays rule give, bit for bit, what NumPy's
``maximum(0, a)`` and ``g * (out != 0)`` give (NaN, infinities, -0.0 included): through a plugin's compiled pass
(ember-numba) for large C-contiguous float32/float64 arrays, through NumPy otherwise."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.backends.cpu_kernels import activation

SPECIAL = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45, -1e-45]


def _array(n, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n).astype(dtype)
    a[: len(SPECIAL)] = np.array(SPECIAL[:n], dtype)
    return a


def _same_bits(got, ref):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(got.view(np.uint8), ref.view(np.uint8))


@settings(max_examples=40, deadline=None)
@given(n=st.sampled_from([7, 1000, 1 << 16, 70000, 200001]), dtype=st.sampled_from([np.float32, np.float64]),
       shape=st.sampled_from(["flat", "rows", "image"]), seed=st.integers(0, 2**16))
def test_forward_and_backward_give_numpys_bits(n, dtype, shape, seed):
    a = _array(n, dtype, seed)
    g = _array(n, dtype, seed + 1)
    if shape != "flat" and n % 7 == 0:
        a, g = a.reshape(7, -1), g.reshape(7, -1)
    elif shape == "image" and n == 1 << 16:
        a, g = a.reshape(4, 16, 32, 32), g.reshape(4, 16, 32, 32)
    out = activation.relu(None, np, a)
    _same_bits(out, np.maximum(0, a))
    with np.errstate(invalid="ignore"):
        _same_bits(activation.relu_backward_arrays(g, out), g * (out != 0).astype(dtype))


def test_the_compiled_passes_serve_large_arrays():
    pytest.importorskip("ember_numba")
    for name in ("relu", "relu_backward"):
        assert ember._plugins.cpu_kernel(name, 1 << 16) is not None  # the sizes above reach them


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_and_mixed_inputs_take_numpys_path(dtype):
    a = _array(1 << 17, dtype, 3).reshape(256, 512)
    view = a[:, ::2]
    _same_bits(activation.relu(None, np, view), np.maximum(0, view))
    g = _array(1 << 16, dtype, 4).reshape(256, 256)
    out = np.maximum(0, view)  # strided
    with np.errstate(invalid="ignore"):
        _same_bits(activation.relu_backward_arrays(g, out), g * (out != 0).astype(dtype))
        other = np.ascontiguousarray(out).astype(np.float32 if dtype is np.float64 else np.float64)
        _same_bits(activation.relu_backward_arrays(g, other), g * (other != 0).astype(dtype))  # another dtype


def test_relu_module_trains_through_the_kernels():
    x = ember.randn(128, 512, requires_grad=True)
    y = ember.relu(x)
    np.testing.assert_array_equal(y.detach().numpy(), np.maximum(0, x.detach().numpy()))
    g = ember.randn(128, 512)
    y.backward(g)
    np.testing.assert_array_equal(x.grad.numpy(), g.numpy() * (y.detach().numpy() != 0))
