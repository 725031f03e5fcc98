"""Shared fixtures: the backends every core op test runs on, and the CuPy stand-in."""
import os
import sys
from pathlib import Path

import pytest

import ember

#: device types the core op tests run on: the built-in NumPy backend, the third-party example plugin
#: (examples/plugins/ember-array-api-strict) and, on a machine with an NVIDIA GPU, the CUDA backend
BACKENDS = ["cpu", "strict", pytest.param("cuda", marks=pytest.mark.cuda)]
if os.environ.get("EMBER_TEST_CUDA_STANDIN") == "1":  # the op suite on the CuPy stand-in too (slow; opt-in)
    BACKENDS.append("cuda-standin")
#: the reason GPU tests give when skipped
NO_GPU = "no CUDA GPU (ember.cuda.is_available() is False)"
#: the CuPy stand-in on NumPy (tests only): see tests/cuda_standin/cupy/__init__.py
STANDIN = Path(__file__).parent / "cuda_standin"


def require_gpu():
    """Skip the calling test unless a real GPU is here (never the stand-in)."""
    if not ember.cuda.is_available() or getattr(sys.modules.get("cupy"), "STANDIN", False):
        pytest.skip(NO_GPU)


def _forget_cupy():
    """Drop every imported ``cupy``/``cupyx`` module and make the CUDA backend probe CuPy again."""
    for name in [m for m in sys.modules if m.split(".")[0] in ("cupy", "cupyx", "cupy_backends")]:
        del sys.modules[name]
    from ember.backends.cuda.backend import BACKEND
    BACKEND.forget()
    ember._device.forget_backends("cuda")


@pytest.fixture
def cuda_standin(monkeypatch):
    """The CUDA backend on the CuPy stand-in (``EMBER_STANDIN_GPUS`` GPUs, 2 unless the test sets it first);
    everything is undone after the test. Never the real GPU: tests of the plugin's own logic, in CI."""
    real = sys.modules.get("cupy")
    if real is not None and not getattr(real, "STANDIN", False):
        # CuPy's compiled modules cannot be unloaded and loaded again: a process that uses the GPU keeps it
        pytest.skip("the real CuPy is in use in this process (the stand-in tests run in CI, without a GPU)")
    monkeypatch.setenv("EMBER_STANDIN_GPUS", os.environ.get("EMBER_STANDIN_GPUS", "2"))
    monkeypatch.syspath_prepend(str(STANDIN))
    _forget_cupy()
    try:
        import cupy
        assert cupy.STANDIN, "the CuPy stand-in did not shadow the real CuPy"
        yield cupy
    finally:
        _forget_cupy()  # monkeypatch then takes the stand-in off sys.path


@pytest.fixture(params=["standin", pytest.param("gpu", marks=pytest.mark.cuda)])
def cuda_device(request):
    """``'cuda'`` twice: on the CuPy stand-in (always) and on the real GPU (marker ``cuda``; skipped without one)."""
    if request.param == "standin":
        request.getfixturevalue("cuda_standin")
    else:
        require_gpu()
    return "cuda"


@pytest.fixture(params=BACKENDS)
def device(request):
    """A device string; tests using it run once per backend (``cuda`` only where a GPU is)."""
    if request.param == "cuda":
        require_gpu()
    if request.param == "cuda-standin":
        request.getfixturevalue("cuda_standin")
        return "cuda"
    if request.param not in ember.list_backends():
        pytest.fail(f"backend {request.param!r} is not installed: run "
                    "`pip install -e examples/plugins/ember-array-api-strict` (the README's test command does)")
    return request.param


@pytest.fixture
def two_cpus():
    """Two logical CPU devices (cpu:0, cpu:1) for the test; the previous count is restored after."""
    before = ember.backends.cpu.device_count()
    ember.backends.cpu.set_device_count(2)
    yield
    ember.backends.cpu.set_device_count(before)
