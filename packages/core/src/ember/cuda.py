"""``ember.cuda``: PyTorch's CUDA helper names, answered by the ``cuda`` backend plugin when one is installed.

Without a ``cuda`` backend (no ``pip install ember-core[cuda]``, or no NVIDIA
GPU) ``is_available()`` is False and ``device_count()`` is 0, so the usual
``device = 'cuda' if ember.cuda.is_available() else 'cpu'`` works anywhere.

>>> import ember
>>> device = "cuda" if ember.cuda.is_available() else "cpu"
>>> ember.cuda.device_count() >= 0
True
"""
from __future__ import annotations

import ember.memory as _memory  # not ``from . import``: that would look the name up on ember first

from ._device import device as _device
from ._plugins import backends as _backends
from .errors import OutOfMemoryError
from .random import default_generator_for

__all__ = ["is_available", "device_count", "current_device", "get_device_name", "synchronize", "empty_cache",
           "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "memory_reserved",
           "memory_stats", "memory_summary", "memory_snapshot", "set_per_process_memory_fraction",
           "OutOfMemoryError", "manual_seed", "manual_seed_all"]


def _backend():
    entry = _backends().get("cuda")
    return None if entry is None else entry[0]


def _require():
    b = _backend()
    if b is None or not b.is_available() or b.device_count() == 0:
        raise RuntimeError("CUDA is not available: no usable 'cuda' backend (install ember-core[cuda] on a machine "
                           "with an NVIDIA GPU and driver; `python -m ember info` shows what ember found)")
    return b


def is_available() -> bool:
    """Whether a ``cuda`` backend is installed and sees at least one GPU."""
    b = _backend()
    return bool(b is not None and b.is_available() and b.device_count() > 0)


def device_count() -> int:
    """Number of CUDA devices (0 without a usable ``cuda`` backend)."""
    return _backend().device_count() if is_available() else 0


def current_device() -> int:
    _require()
    return 0


def get_device_name(device=None) -> str:
    b = _require()
    return b.device_name(_cuda(device)) if hasattr(b, "device_name") else str(_cuda(device))


def _cuda(device):
    if device is None:
        return _device("cuda", 0)
    if isinstance(device, int):
        return _device("cuda", device)
    return _device(device)


def synchronize(device=None) -> None:
    _require()
    _memory.synchronize(_cuda(device))


def empty_cache() -> None:
    """Give cached GPU memory back to the driver (a no-op without CUDA, as in PyTorch)."""
    if is_available():
        _memory.empty_cache(_cuda(None))


def memory_allocated(device=None) -> int:
    _require()
    return _memory.memory_allocated(_cuda(device))


def max_memory_allocated(device=None) -> int:
    _require()
    return _memory.max_memory_allocated(_cuda(device))


def reset_peak_memory_stats(device=None) -> None:
    _require()
    _memory.reset_peak_memory_stats(_cuda(device))


def memory_reserved(device=None) -> int:
    _require()
    return _memory.memory_reserved(_cuda(device))


def memory_stats(device=None) -> dict:
    """``ember.memory.memory_stats`` of a CUDA device (PyTorch's key names)."""
    _require()
    return _memory.memory_stats(_cuda(device))


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """``ember.memory.memory_summary`` of a CUDA device: PyTorch's table, to print."""
    _require()
    return _memory.memory_summary(_cuda(device), abbreviated)


def memory_snapshot() -> dict:
    """``ember.memory.memory_snapshot``: the memory history of every device."""
    return _memory.memory_snapshot()


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """``ember.memory.set_per_process_memory_fraction`` for a CUDA device."""
    _require()
    _memory.set_per_process_memory_fraction(fraction, _cuda(device))


def manual_seed(seed) -> None:
    """Seed the current CUDA device's generator (silently ignored without CUDA, as in PyTorch)."""
    if is_available():
        default_generator_for(_cuda(None)).manual_seed(seed)


def manual_seed_all(seed) -> None:
    if is_available():
        for i in range(device_count()):
            default_generator_for(_cuda(i)).manual_seed(seed)
