"""The one place ember imports CuPy: on first use of a ``cuda`` device or of ``ember.cuda``, never on
``import ember``. It remembers why CuPy is unusable (not installed, no driver, no GPU) for the error messages
and ``python -m ember info``."""
from __future__ import annotations

from typing import Any

_state: dict[str, Any] = {}


def load():
    """The ``cupy`` module when it imports and sees at least one GPU, else None (see :func:`reason`)."""
    if "cupy" not in _state:
        _state["cupy"], _state["count"], _state["reason"] = _probe()
    return _state["cupy"]


def device_count() -> int:
    return _state["count"] if load() is not None else 0


def reason() -> str:
    """Why :func:`load` gave None ("" when CuPy is usable)."""
    load()
    return _state["reason"]


def forget() -> None:
    """Probe again on next use (tests that swap in the CuPy stand-in)."""
    _state.clear()


def _probe():
    try:
        import cupy  # type: ignore[import-not-found]
    except Exception as exc:  # ImportError, or a broken CUDA installation failing at import
        return None, 0, f"CuPy does not import ({type(exc).__name__}: {exc}); install ember-core[cuda12] or [cuda13]"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError: no driver, driver too old, no device
        return None, 0, f"CuPy {cupy.__version__} sees no usable GPU ({exc})"
    if n == 0:
        return None, 0, f"CuPy {cupy.__version__} sees no GPU"
    return cupy, n, ""
