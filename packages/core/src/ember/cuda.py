"""``ember.cuda``: PyTorch's CUDA helper names, answered by the ``cuda`` backend plugin (``ember.backends.cuda``,
on CuPy).

Without CuPy (``pip install ember-core[cuda12]`` or ``[cuda13]``) or without an NVIDIA GPU ``is_available()``
is False and ``device_count()`` is 0, so the usual
``device = 'cuda' if ember.cuda.is_available() else 'cpu'`` works anywhere. Streams, events, the current
device and its properties, per-device random generators and the memory statistics of CuPy's pool are here.

>>> import ember
>>> device = "cuda" if ember.cuda.is_available() else "cpu"
>>> ember.cuda.device_count() >= 0
True
"""
from __future__ import annotations

import ember.memory as _memory  # not ``from . import``: that would look the name up on ember first

from ._device import device as _device
from ._plugins import backends as _backends
from .backends.cuda.streams import Event, Stream, current_stream, default_stream, stream
from .errors import OutOfMemoryError
from .random import default_generator_for

__all__ = ["is_available", "device_count", "current_device", "set_device", "device", "get_device_name",
           "get_device_properties", "synchronize", "empty_cache", "Stream", "Event", "stream", "current_stream",
           "default_stream", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
           "memory_reserved", "memory_stats", "memory_summary", "memory_snapshot", "set_per_process_memory_fraction",
           "OutOfMemoryError", "manual_seed", "manual_seed_all"]


def _backend():
    entry = _backends().get("cuda")
    return None if entry is None else entry[0]


def _require():
    b = _backend()
    if b is None or not b.is_available() or b.device_count() == 0:
        found = "" if b is None else f" (the cuda backend: {b.describe()})"
        raise RuntimeError(f"CUDA is not available{found}: install ember-core[cuda12] or [cuda13] on a machine "
                           "with an NVIDIA GPU and driver; `python -m ember info` shows what ember found")
    return b


def is_available() -> bool:
    """Whether a ``cuda`` backend is installed and sees at least one GPU."""
    b = _backend()
    return bool(b is not None and b.is_available() and b.device_count() > 0)


def device_count() -> int:
    """Number of CUDA devices (0 without a usable ``cuda`` backend)."""
    return _backend().device_count() if is_available() else 0


def current_device() -> int:
    """Index of the current CUDA device (where ``'cuda'`` work runs; 0 until :func:`set_device`)."""
    return _require().current_device()


def set_device(device) -> None:
    """Make ``device`` (an index, ``'cuda:N'`` or an ember device) the current CUDA device.

    >>> import ember
    >>> if ember.cuda.is_available():
    ...     ember.cuda.set_device(0)
    """
    _require().set_device(_cuda(device).index)


class device:  # noqa: N801 - PyTorch's name
    """``with ember.cuda.device(1):`` makes CUDA device 1 current inside the block (``None`` changes nothing).

    >>> import ember
    >>> if ember.cuda.is_available():
    ...     with ember.cuda.device(0):
    ...         i = ember.cuda.current_device()
    """

    def __init__(self, device):
        self.idx = None if device is None else _cuda(device).index
        self._native = None

    def __enter__(self):
        if self.idx is not None:
            self._native = _require().cp.cuda.Device(self.idx)
            self._native.__enter__()
        return self

    def __exit__(self, *exc):
        if self._native is not None:
            self._native.__exit__(*exc)
            self._native = None
        return False


def get_device_name(device=None) -> str:
    """The GPU's name, e.g. ``'NVIDIA H200'``."""
    return _require().device_name(_cuda(device))


class CudaDeviceProperties:
    """What :func:`get_device_properties` answers: ``name``, ``total_memory`` (bytes), ``major``, ``minor``
    (the compute capability) and ``multi_processor_count``."""

    def __init__(self, name: str, total_memory: int, major: int, minor: int, multi_processor_count: int):
        self.name, self.total_memory = name, total_memory
        self.major, self.minor, self.multi_processor_count = major, minor, multi_processor_count

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None) -> CudaDeviceProperties:
    """The GPU's name, memory, compute capability and number of multiprocessors.

    >>> import ember
    >>> if ember.cuda.is_available():
    ...     props = ember.cuda.get_device_properties(0)
    ...     gib = props.total_memory / 2**30
    """
    b = _require()
    dev = _cuda(device)
    p = b.properties(dev)
    return CudaDeviceProperties(b.device_name(dev), int(p["totalGlobalMem"]), int(p["major"]), int(p["minor"]),
                                int(p["multiProcessorCount"]))


def _cuda(device):
    """An ember ``cuda:N`` device from None (the current device), an index, a string or a device."""
    if device is None:
        return _device("cuda", current_device())
    if isinstance(device, int):
        if device < 0:
            raise ValueError(f"a CUDA device index must be >= 0, got {device}")
        d = _device("cuda", device)
    else:
        d = _device(device)
        if d.type != "cuda":
            raise ValueError(f"expected a CUDA device, got {d}")
        if d.index is None:
            d = _device("cuda", current_device())
    _require().check_device(d)
    return d


def synchronize(device=None) -> None:
    """Wait until all work queued on the GPU (the current one when None) has finished."""
    _require()
    _memory.synchronize(_cuda(device))


def empty_cache() -> None:
    """Give the GPU memory CuPy's pools cache back to the driver (a no-op without CUDA, as in PyTorch)."""
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
    """Seed the generator of every CUDA device (silently ignored without CUDA, as in PyTorch)."""
    if is_available():
        for i in range(device_count()):
            default_generator_for(_cuda(i)).manual_seed(seed)
