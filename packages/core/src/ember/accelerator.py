"""``ember.accelerator``: PyTorch's device-agnostic accelerator API, answered by whichever non-CPU backend is
installed and sees a device (``cuda`` once ``ember-core[cuda]`` is installed on a machine with a GPU, or a third
party's backend plugin).

Without one, ``is_available()`` is False, ``current_accelerator()`` is None and ``device_count()`` is 0, so
device-agnostic code runs anywhere; the functions that need a device raise PyTorch's error.

>>> import ember
>>> device = ember.accelerator.current_accelerator() or ember.device("cpu")
>>> ember.accelerator.device_count() >= 0
True
"""
from __future__ import annotations

import contextlib

import ember.memory as _memory  # not ``from . import``: that would look the name up on ember first

from ._device import device as _device
from ._plugins import backends as _backends

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "current_device_idx",
           "set_device_index", "set_device_idx", "device_index", "synchronize", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "memory_stats", "reset_peak_memory_stats"]

_NONE = "Cannot access accelerator device when none is available."
_current: dict[str, int] = {}  # the current device index per accelerator type, where the backend keeps none


def _accelerator():
    """``(name, backend)`` of the first non-CPU backend that is available and sees a device, or None."""
    for name, (backend, _plugin) in sorted(_backends().items()):
        if name != "cpu" and backend.is_available() and backend.device_count() > 0:
            return name, backend
    return None


def _require():
    found = _accelerator()
    if found is None:
        raise RuntimeError(_NONE)
    return found


def is_available() -> bool:
    """Whether an accelerator backend is installed and sees at least one device."""
    return _accelerator() is not None


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as an ``ember.device`` (``device(type='cuda')``), or None without one."""
    found = _accelerator()
    return None if found is None else _device(found[0])


def device_count() -> int:
    """The number of accelerator devices (0 without an accelerator)."""
    found = _accelerator()
    return 0 if found is None else found[1].device_count()


def current_device_index() -> int:
    """The index of the current accelerator device."""
    name, backend = _require()
    getter = getattr(backend, "current_device", None)
    return getter() if getter is not None else _current.get(name, 0)


current_device_idx = current_device_index  # PyTorch's older name


def set_device_index(device) -> None:
    """Make ``device`` (an index, or a device of the accelerator's type) the current accelerator device."""
    name, backend = _require()
    index = device if isinstance(device, int) else _device(device).index or 0
    if not 0 <= index < backend.device_count():
        raise RuntimeError(f"Invalid device index {index}: the {name} accelerator has {backend.device_count()} "
                           "device(s)")
    setter = getattr(backend, "set_device", None)
    if setter is not None:
        setter(index)
    else:
        _current[name] = index


set_device_idx = set_device_index  # PyTorch's older name


@contextlib.contextmanager
def device_index(device):
    """Within the block, ``device`` (an index; None: no change) is the current accelerator device."""
    if device is None:
        yield
        return
    before = current_device_index()
    set_device_index(device)
    try:
        yield
    finally:
        set_device_index(before)


def _dev(device):
    name, _backend = _require()
    if device is None:
        return _device(name, current_device_index())
    return _device(name, device) if isinstance(device, int) else _device(device)


def synchronize(device=None) -> None:
    """Wait for all work queued on the accelerator device (default: the current one)."""
    _memory.synchronize(_dev(device))


def empty_cache() -> None:
    """Give the accelerator's cached memory back to the system."""
    _memory.empty_cache(_dev(None))


def memory_allocated(device_index=None) -> int:
    """Bytes held by live tensors on the accelerator device."""
    return _memory.memory_allocated(_dev(device_index))


def max_memory_allocated(device_index=None) -> int:
    """The peak of :func:`memory_allocated` since start or :func:`reset_peak_memory_stats`."""
    return _memory.max_memory_allocated(_dev(device_index))


def memory_reserved(device_index=None) -> int:
    """Bytes the backend holds for the accelerator device, in use or cached."""
    return _memory.memory_reserved(_dev(device_index))


def memory_stats(device_index=None) -> dict:
    """The accelerator device's memory statistics, under PyTorch's key names."""
    return _memory.memory_stats(_dev(device_index))


def reset_peak_memory_stats(device_index=None) -> None:
    """Start tracking the accelerator device's peak afresh."""
    _memory.reset_peak_memory_stats(_dev(device_index))
