"""Memory statistics per device: bytes held by live tensors, the peak, what the backend reserves.

Every tensor that owns its data counts its ``nbytes`` on its device while it
lives; views share their base's memory and add nothing. ``'cpu'`` and
``'cpu:0'`` are the same device here. ``device=None`` means the CPU.

Pinned (page-locked) host memory, which an accelerator copies from quickly
and asynchronously, exists only where a non-CPU backend provides it:
:func:`can_pin_memory` says whether one does, and ``Tensor.pin_memory()`` is
a no-op without one.

>>> import ember
>>> before = ember.memory_allocated()
>>> x = ember.zeros(1000)
>>> grown = ember.memory_allocated() - before
>>> del x
>>> grown, ember.memory_allocated() - before
(4000, 0)
"""
from __future__ import annotations

from ._device import as_device
from ._plugins import backends
from .backends.backend import Backend

__all__ = ["memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "memory_reserved",
           "memory_stats", "empty_cache", "synchronize"]


def memory_allocated(device=None) -> int:
    """Bytes held by live tensors on ``device``."""
    return as_device(device).mem[0]


def max_memory_allocated(device=None) -> int:
    """The most bytes live tensors held on ``device`` at once since start or :func:`reset_peak_memory_stats`.

    >>> import ember
    >>> ember.reset_peak_memory_stats()
    >>> x = ember.zeros(1000); del x
    >>> ember.max_memory_allocated() - ember.memory_allocated()
    4000
    """
    return as_device(device).mem[1]


def reset_peak_memory_stats(device=None) -> None:
    """Start tracking the peak afresh from what is allocated now."""
    mem = as_device(device).mem
    mem[1] = mem[0]


def memory_reserved(device=None) -> int:
    """Bytes the backend holds for ``device``, in use or cached (at least :func:`memory_allocated`)."""
    dev = as_device(device)
    return dev.backend.memory_reserved(dev)


def memory_stats(device=None) -> dict:
    """The statistics above in one dict, under PyTorch's key names.

    >>> import ember
    >>> sorted(ember.memory_stats())
    ['allocated_bytes.all.current', 'allocated_bytes.all.peak', 'reserved_bytes.all.current']
    """
    dev = as_device(device)
    return {"allocated_bytes.all.current": dev.mem[0], "allocated_bytes.all.peak": dev.mem[1],
            "reserved_bytes.all.current": dev.backend.memory_reserved(dev)}


def empty_cache(device=None) -> None:
    """Give memory the backend caches but no tensor uses back to the system."""
    dev = as_device(device)
    dev.backend.empty_cache(dev)


def synchronize(device=None) -> None:
    """Wait until all work queued on ``device`` has finished (immediate on the CPU)."""
    dev = as_device(device)
    dev.backend.synchronize(dev)


def can_pin_memory() -> bool:
    """Whether ``Tensor.pin_memory()`` can pin here: an available non-CPU backend provides pinned host memory.

    On a machine with only the CPU backend this is False and ``pin_memory()``
    returns the tensor unchanged (the DataLoader's ``pin_memory=True`` is then a no-op).

    >>> import ember
    >>> ember.memory.can_pin_memory() == (ember.memory.pinning_backend() is not None)
    True
    """
    return pinning_backend() is not None


def pinning_backend():
    """The first available non-CPU backend that overrides ``Backend.pin_memory``, or None."""
    for name, (backend, _plugin) in backends().items():
        if (name != "cpu" and type(backend).pin_memory is not Backend.pin_memory and backend.is_available()
                and backend.device_count() > 0):
            return backend
    return None
