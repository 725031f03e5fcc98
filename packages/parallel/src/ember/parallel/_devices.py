"""Which devices DataParallel and Pipe run on: ``device_ids`` read as PyTorch reads them, and checked.

A bare int is an index of the default accelerator type: ``cuda`` when CUDA is available, else the CPU
backend's logical devices (``cpu:0`` ... ``cpu:N-1``, ``EMBER_CPU_DEVICES=N`` or
``ember.backends.cpu.set_device_count(N)``). Strings (``'cpu:1'``) and ``ember.device`` objects are taken as they
are.

>>> import ember
>>> from ember.parallel._devices import resolve_devices
>>> ember.backends.cpu.set_device_count(2)
>>> resolve_devices(["cpu:0", 1], "device_ids")
[device(type='cpu', index=0), device(type='cpu', index=1)]
"""
from __future__ import annotations

import ember

__all__ = ["default_device_type", "device_count", "resolve_device", "resolve_devices", "same_device"]


def default_device_type() -> str:
    """``'cuda'`` when a CUDA device is available, else ``'cpu'`` (its logical devices)."""
    return "cuda" if ember.cuda.is_available() else "cpu"


def device_count(device_type: str) -> int:
    """How many devices of ``device_type`` (``'cpu'`` or ``'cuda'``) exist."""
    return ember.cuda.device_count() if device_type == "cuda" else ember.backends.cpu.device_count()


def _how_many(device_type: str) -> str:
    if device_type == "cpu":
        return (f"there are {device_count('cpu')} logical CPU device(s); set EMBER_CPU_DEVICES=N or call "
                "ember.backends.cpu.set_device_count(N) for more")
    return f"there are {device_count(device_type)} {device_type} device(s)"


def resolve_device(d, what: str) -> ember.device:
    """``d`` (an int index of the default device type, a string such as ``'cpu:1'`` or an ``ember.device``) as an
    indexed ``ember.device`` that exists; ``what`` names the argument in errors.

    >>> from ember.parallel._devices import resolve_device
    >>> resolve_device("cpu", "output_device")
    device(type='cpu', index=0)
    """
    if isinstance(d, bool) or not isinstance(d, (int, str, ember.device)):
        raise TypeError(f"{what} must be an int device index, a device string such as 'cpu:1' or an ember.device, "
                        f"got {type(d).__name__} {d!r}")
    if isinstance(d, int):
        if d < 0:
            raise ValueError(f"{what} = {d}: a device index must be non-negative")
        dev = ember.device(default_device_type(), d)
    else:
        dev = ember.device(d)
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"{what} = {d!r}: only 'cpu' and 'cuda' devices can hold replicas or stages")
    if dev.type == "cuda" and not ember.cuda.is_available():
        raise ValueError(f"{what} = {d!r}: CUDA is not available (pip install ember-core[cuda] on a machine with "
                         "a GPU), use the CPU backend's logical devices 'cpu:0', 'cpu:1', ... instead")
    index = dev.index or 0
    if index >= device_count(dev.type):
        raise ValueError(f"{what} = {d!r}: device {dev.type}:{index} does not exist; {_how_many(dev.type)}")
    return ember.device(dev.type, index)


def resolve_devices(ids, what: str) -> list[ember.device]:
    """Every entry of ``ids`` resolved by :func:`resolve_device`; they must be distinct and of one device type."""
    if isinstance(ids, (str, int, ember.device)) or not hasattr(ids, "__iter__"):
        raise TypeError(f"{what} must be a list of devices (e.g. [0, 1] or ['cpu:0', 'cpu:1']), got {ids!r}")
    devices = [resolve_device(d, f"{what}[{i}]") for i, d in enumerate(ids)]
    if not devices:
        raise ValueError(f"{what} is empty: give at least one device, or None for all of them")
    if len({d.type for d in devices}) > 1:
        raise ValueError(f"{what} mixes device types ({', '.join(str(d) for d in devices)}): use one type")
    seen = set()
    for i, d in enumerate(devices):
        if d in seen:
            raise ValueError(f"{what}[{i}] = {d} appears twice in {what}: each device can be used once")
        seen.add(d)
    return devices


def same_device(a: ember.device, b: ember.device) -> bool:
    """Whether ``a`` and ``b`` address the same memory (``'cpu'`` and ``'cpu:0'`` do)."""
    return a.type == b.type and (a.index or 0) == (b.index or 0)
