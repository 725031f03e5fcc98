"""ember-numba's compiled random transforms give the bits of ember's NumPy transforms and continue their stream."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _plugins
from ember._mt19937 import MT19937Engine
from ember.ops import _cpu_distributions as dist
from ember_numba import plugin, random_kernels

#: around PyTorch's switch at 16 values, around a word buffer's end, and large; the kernels are used from 16 values
#: up here (``CPU_KERNEL_MIN`` lowered), to check them where PyTorch's stored output is checked against NumPy's
SIZES = [16, 17, 1000, 4096, 4097, 4111, 100_003]


@pytest.fixture
def numpy_only():
    """The NumPy transforms alone for the test's duration (the plugin unregistered, then registered again)."""
    ember.unregister_plugin("numba")
    try:
        yield
    finally:
        ember.register_plugin(plugin, "numba")


def _draws(call, seed):
    """``call(engine)`` then 10 more words, from a fresh engine: the values and where the stream stands after."""
    engine = MT19937Engine(seed)
    return call(engine), engine.words(10)


CASES = {
    "uniform float32": lambda e, n: dist.uniform(e, n, "float32"),
    "uniform float32 (-2, 3)": lambda e, n: dist.uniform(e, n, "float32", -2.0, 3.0),
    "uniform float32 (0.1, 0.7)": lambda e, n: dist.uniform(e, n, "float32", 0.1, 0.7),
    "uniform float64": lambda e, n: dist.uniform(e, n, "float64"),
    "uniform float64 (-2, 3.5)": lambda e, n: dist.uniform(e, n, "float64", -2.0, 3.5),
    "normal float32": lambda e, n: dist.normal(e, n, "float32"),
    "normal float32 (0.5, 2)": lambda e, n: dist.normal(e, n, "float32", 0.5, 2.0),
    "normal float32 (-1.3, 0.37)": lambda e, n: dist.normal(e, n, "float32", -1.3, 0.37),
    "normal float64": lambda e, n: dist.normal(e, n, "float64"),
    "normal float64 (0.5, 0.3)": lambda e, n: dist.normal(e, n, "float64", 0.5, 0.3),
    "integers [0, 1000)": lambda e, n: dist.integers(e, n, 0, 1000),
    "integers [-5, 2**40)": lambda e, n: dist.integers(e, n, -5, 1 << 40),
    "bernoulli 0.3": lambda e, n: dist.bernoulli_scalar(e, n, 0.3),
    "permutation": lambda e, n: dist.permutation(e, n),
}


@pytest.mark.parametrize("seed", [0, 2**40 + 7])
@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_gives_the_numpy_transform_bits(case, seed, request, monkeypatch):
    monkeypatch.setattr(ember._plugins, "CPU_KERNEL_MIN", 16)
    compiled = [_draws(lambda e: CASES[case](e, n), seed) for n in SIZES]
    request.getfixturevalue("numpy_only")
    assert not set(plugin.ember_cpu_kernels()) & set(_plugins.cpu_kernels())
    for n, (values, after) in zip(SIZES, compiled):
        ref_values, ref_after = _draws(lambda e: CASES[case](e, n), seed)
        assert values.dtype == ref_values.dtype and values.shape == ref_values.shape == (n,)
        np.testing.assert_array_equal(values.view(np.uint8), ref_values.view(np.uint8), err_msg=f"{case}, n={n}")
        np.testing.assert_array_equal(after, ref_after, err_msg=f"{case}, n={n}: the stream after differs")


def test_public_functions_route_to_the_kernels(monkeypatch):
    calls = []
    kernels = _plugins.cpu_kernels()

    def spy(name, kernel):
        return lambda *args: calls.append(name) or kernel(*args)

    monkeypatch.setattr(ember._plugins, "cpu_kernels", lambda: {name: spy(name, k) for name, k in kernels.items()})
    n = _plugins.CPU_KERNEL_MIN
    ember.manual_seed(0)
    ember.rand(n), ember.randn(n), ember.randint(0, 9, (n,)), ember.randperm(n)
    ember.empty(n).bernoulli_(0.5)
    ember.rand(n - 1), ember.randn(n - 1)  # below the threshold: NumPy's transforms
    assert calls == [f"random_{name}" for name in ("uniform", "normal", "integers", "permutation", "bernoulli")]


def test_many_words_cross_regenerations_like_numpy():
    engine, key = MT19937Engine(3), MT19937Engine(3)._bits.state["state"]["key"].copy()
    out = np.empty(5 * 624 + 7, np.float32)
    pos = random_kernels.uniform(key, 624, out, 0.0, 1.0)
    np.testing.assert_array_equal(out, (engine.words(out.size) & 0xFFFFFF).astype(np.float32) / (1 << 24))
    assert pos == engine._bits.state["state"]["pos"]
    np.testing.assert_array_equal(key, engine._bits.state["state"]["key"])
