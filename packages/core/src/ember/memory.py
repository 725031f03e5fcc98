"""Memory statistics per device: bytes held by live tensors, the peak, what the backend reserves; limits, the
memory history and the out-of-memory report.

Every tensor that owns its data counts its ``nbytes`` on its device while it
lives; views share their base's memory and add nothing. ``'cpu'`` and
``'cpu:0'`` are the same device here. ``device=None`` means the CPU.

A device can be capped (:func:`set_memory_limit`, :func:`set_per_process_memory_fraction`): an allocation past
the cap raises :class:`ember.OutOfMemoryError`, as a backend's own allocation failure does, with a report of
what the device holds. :func:`record_memory_history` records every allocation and free with its op and Python
line, so that the memory's earlier state can be seen (:func:`memory_snapshot`, :func:`dump_snapshot`,
:func:`plot_timeline`) and an OutOfMemoryError names the op and line that made each large tensor.

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

from . import _alloc
from ._device import as_device
from ._memory_history import (  # noqa: F401  (public as ember.memory.*, not at ember's top level)
    dump_snapshot,
    memory_snapshot,
    record_memory_history,
)
from ._memory_history import record_memory_history as _record_memory_history  # noqa: F401  (PyTorch's spelling)
from ._memory_report import memory_summary, plot_timeline  # noqa: F401  (public as ember.memory.*)
from ._plugins import backends
from .backends.backend import Backend

__all__ = ["memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "memory_reserved",
           "memory_stats", "empty_cache", "synchronize"]
# also public, under ember.memory only (as PyTorch keeps them under torch.cuda): set_memory_limit,
# get_memory_limit, set_per_process_memory_fraction, record_memory_history (and PyTorch's _record_memory_history),
# memory_snapshot, dump_snapshot, plot_timeline, memory_summary, can_pin_memory


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
    dev = as_device(device)
    dev.mem[1] = dev.mem[0]
    _alloc.refresh(dev.key)


def memory_reserved(device=None) -> int:
    """Bytes the backend holds for ``device``, in use or cached (at least :func:`memory_allocated`)."""
    dev = as_device(device)
    return dev.backend.memory_reserved(dev)


def memory_stats(device=None) -> dict:
    """The statistics of ``device`` in one dict, under PyTorch's key names.

    Always: ``allocated_bytes.all.current`` and ``.peak``, the same for ``active_bytes`` and ``requested_bytes``
    (ember asks the backend for exactly a tensor's bytes and caches nothing itself, so the three agree),
    ``reserved_bytes.all.current``, ``num_ooms`` (OutOfMemoryErrors raised for the device) and
    ``num_alloc_retries`` (0: no allocator here frees its cache and retries). While :func:`record_memory_history`
    records, also the totals since it started: ``allocated_bytes.all.allocated`` and ``.freed``,
    ``allocation.all.allocated``, ``.freed`` and ``.current`` (allocations, not bytes).

    >>> import ember
    >>> stats = ember.memory_stats()
    >>> stats["allocated_bytes.all.current"] == ember.memory_allocated(), stats["num_ooms"] >= 0
    (True, True)
    """
    dev = as_device(device)
    cur, peak = dev.mem[0], dev.mem[1]
    stats = {"allocated_bytes.all.current": cur, "allocated_bytes.all.peak": peak,
             "active_bytes.all.current": cur, "active_bytes.all.peak": peak,
             "requested_bytes.all.current": cur, "requested_bytes.all.peak": peak,
             "reserved_bytes.all.current": dev.backend.memory_reserved(dev),
             "num_ooms": _alloc.OOMS[dev.key], "num_alloc_retries": 0}
    history = _alloc.HISTORY
    if history is not None:
        allocated, freed, allocs, frees = history.totals[dev.key]
        stats.update({"allocated_bytes.all.allocated": allocated, "allocated_bytes.all.freed": freed,
                      "allocation.all.allocated": allocs, "allocation.all.freed": frees,
                      "allocation.all.current": history.counts.get(dev.key, 0) + allocs - frees})
    return stats


def empty_cache(device=None) -> None:
    """Give memory the backend caches but no tensor uses back to the system."""
    dev = as_device(device)
    dev.backend.empty_cache(dev)


def set_memory_limit(nbytes: int | None, device=None) -> None:
    """Cap the bytes ``device``'s tensors may hold at once; ``None`` or 0 removes the cap.

    An allocation that would take :func:`memory_allocated` past the cap raises :class:`ember.OutOfMemoryError`
    and leaves the count where it was. The cap is ember's own, so it works on every backend, the CPU's
    included (a program can be tested for what happens when memory runs out). A cap below what is already
    allocated refuses every further allocation until enough is freed.

    >>> import ember
    >>> ember.memory.set_memory_limit(ember.memory_allocated() + 4000)
    >>> x = ember.zeros(1000)   # exactly fits
    >>> ember.memory.get_memory_limit() - ember.memory_allocated()
    0
    >>> ember.memory.set_memory_limit(None); del x
    """
    if nbytes is not None and (isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0):
        raise ValueError(f"set_memory_limit expects a number of bytes (an int >= 0) or None, got {nbytes!r}")
    dev = as_device(device)
    if nbytes:
        _alloc.LIMITS[dev.key] = nbytes
    else:
        _alloc.LIMITS.pop(dev.key, None)
    _alloc.refresh(dev.key)


def get_memory_limit(device=None) -> int | None:
    """The cap set on ``device`` by :func:`set_memory_limit` or :func:`set_per_process_memory_fraction`, or None.

    >>> import ember
    >>> ember.memory.get_memory_limit("cpu:0") is None
    True
    """
    return _alloc.LIMITS.get(as_device(device).key)


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap ``device``'s tensors at ``fraction`` (0 to 1) of its total memory, as PyTorch's function of this name.

    The CPU's total is the machine's physical memory; another backend reports its own
    (``Backend.total_memory``). See :func:`set_memory_limit` for what the cap does.

    >>> import ember
    >>> ember.memory.set_per_process_memory_fraction(0.5)
    >>> ember.memory.get_memory_limit() == ember.device("cpu").backend.total_memory(ember.device("cpu")) // 2
    True
    >>> ember.memory.set_memory_limit(None)
    """
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
        raise ValueError(f"set_per_process_memory_fraction expects a fraction between 0 and 1, got {fraction!r}")
    dev = as_device(device)
    total = dev.backend.total_memory(dev)
    if total is None:
        raise RuntimeError(f"backend {dev.backend.name!r} does not report the total memory of {dev}; "
                           "cap it in bytes with ember.memory.set_memory_limit(nbytes, device) instead")
    limit = int(total * fraction)
    if limit == 0:
        raise ValueError(f"a fraction of {fraction!r} of {dev}'s {total} bytes allows no memory at all")
    set_memory_limit(limit, dev)


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
