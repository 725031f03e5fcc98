"""ember-numba's float16 conversions give the bits of ember's NumPy conversions (and of NumPy's casts)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _plugins
from ember.backends import reduced_casts
from ember_numba import plugin
from ember_numba.float16 import float16_to_float32, float32_to_float16

ALL_HALF = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)  # every float16 bit pattern


def test_widening_every_float16_pattern_is_numpys_cast():
    out = np.empty((1, ALL_HALF.size), np.uint32)
    float16_to_float32(ALL_HALF.reshape(1, -1), out)
    np.testing.assert_array_equal(out[0], ALL_HALF.view(np.float16).astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("shape, index", [((256, 256), np.s_[:, 3:200]), ((1024, 200), np.s_[::2, ::-3]),
                                          ((64, 64, 16), np.s_[...]), ((1 << 15,), np.s_[::1])])
def test_widen_uses_the_kernel_on_strided_blocks_with_numpys_result(shape, index, monkeypatch):
    half = np.random.default_rng(0).integers(0, 1 << 16, shape).astype(np.uint16).view(np.float16)[index]
    calls = []
    kernel = _plugins.cpu_kernels()["float16_to_float32"]
    spy = {"float16_to_float32": lambda *args: calls.append(1) or kernel(*args)}
    monkeypatch.setattr(_plugins, "cpu_kernels", lambda: spy)
    wide = reduced_casts.widen(half)
    assert calls == [1]
    assert wide.shape == half.shape and wide.dtype == np.float32
    np.testing.assert_array_equal(wide.view(np.uint32), half.astype(np.float32).view(np.uint32))


def _float32_cases(seed: int) -> np.ndarray:
    """float32 patterns around every float16 boundary: ties, subnormals, overflow, infinities, NaNs."""
    rng = np.random.default_rng(seed)
    widened = ALL_HALF.view(np.float16).astype(np.float32).view(np.uint32)
    near = (widened[:, None] + np.arange(-4097, 4098, 1024, dtype=np.int64)[None, :]) % (1 << 32)
    ties = widened + np.uint32(1 << 12)  # half-way to the next float16 (for normals)
    special = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x477FEFFF, 0x477FF000,
                        0x47800000, 0x33000000, 0x33000001, 0x32FFFFFF, 0x387FE000, 0x387FF000], np.uint64)
    random = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64)
    return np.concatenate([near.ravel(), ties, special, random]).astype(np.uint32)


@pytest.mark.parametrize("seed", [0, 1])
def test_narrowing_is_the_numpy_code_bit_for_bit(seed, monkeypatch):
    bits = _float32_cases(seed)
    out = np.empty(bits.size, np.uint16)
    float32_to_float16(bits, out)
    monkeypatch.setattr(reduced_casts, "KERNEL_MIN_SIZE", 1 << 62)  # ember's NumPy code
    ref = reduced_casts.narrow(bits.copy().view(np.float32), np.dtype(np.float16), scratch=True).view(np.uint16)
    np.testing.assert_array_equal(out, ref)
    numbers = ~np.isnan(bits.view(np.float32))  # NumPy's cast keeps NaN payloads; ember makes them quiet NaNs
    with np.errstate(over="ignore"):
        cast = bits.view(np.float32)[numbers].astype(np.float16)
    np.testing.assert_array_equal(out[numbers], cast.view(np.uint16))
    assert np.all((out[~numbers] & 0x7FFF) == 0x7E00)


def test_float16_ops_use_the_kernels_above_the_threshold(monkeypatch):
    calls = []
    kernels = _plugins.cpu_kernels()

    def spy(name, kernel):
        return lambda *args: calls.append(name) or kernel(*args)

    monkeypatch.setattr(_plugins, "cpu_kernels", lambda: {name: spy(name, k) for name, k in kernels.items()})
    n = reduced_casts.KERNEL_MIN_SIZE
    a = ember.linspace(-3, 3, n).to(ember.float16)
    b = (a * 2).exp()
    assert b.dtype == ember.float16
    assert calls.count("float16_to_float32") >= 1 and calls.count("float32_to_float16") >= 1
    monkeypatch.undo()
    ember.unregister_plugin("numba")
    try:
        ref = (a * 2).exp()
    finally:
        ember.register_plugin(plugin, "numba")
    np.testing.assert_array_equal(b.numpy().view(np.uint16), ref.numpy().view(np.uint16))
