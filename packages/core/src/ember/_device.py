"""``ember.device``: where a tensor lives.

>>> import ember
>>> ember.device("cpu")
device(type='cpu')
>>> ember.device("cpu", 1)
device(type='cpu', index=1)
"""
from __future__ import annotations

from . import _plugins

__all__ = ["device"]

_INTERNED: dict = {}
_KEYS: dict = {}


class device:
    """A device type and optional index; ``device('cpu')`` and ``'cpu:0'`` address the same memory.

    Like PyTorch, ``device('cpu') != device('cpu', 0)`` as values, yet ops
    accept mixing them: both name logical CPU device 0.
    """

    __slots__ = ("type", "index", "key", "_backend", "mem")

    def __new__(cls, type, index=None):  # noqa: A002 - PyTorch's argument name
        if isinstance(type, device):
            if index is not None:
                raise ValueError("device(device, index): give the index inside the device, not twice")
            return type
        cached = _INTERNED.get((type, index))
        if cached is not None:
            return cached
        if not isinstance(type, str):
            raise TypeError(f"device() expects a string like 'cpu' or 'cpu:1', got {type!r}")
        name, idx = type, index
        if ":" in type:
            if index is not None:
                raise ValueError(f"device string {type!r} already has an index; do not also pass index={index}")
            name, _, num = type.partition(":")
            if not num.isdigit():
                raise ValueError(f"invalid device string {type!r}: expected 'type' or 'type:index', e.g. 'cpu:1'")
            idx = int(num)
        if idx is not None and (not isinstance(idx, int) or idx < 0):
            raise ValueError(f"device index must be a non-negative int, got {idx!r}")
        if not name or not name.replace("_", "").isalnum():
            raise ValueError(f"invalid device string {type!r}: expected 'type' or 'type:index', e.g. 'cpu:1'")
        obj = object.__new__(cls)
        obj.type, obj.index = name, idx
        obj.key = (name, idx or 0)
        obj._backend = None
        # bytes held by live tensors, shared by 'cpu' and 'cpu:0': [allocated, peak, threshold] (see ember._alloc)
        obj.mem = _KEYS.setdefault(obj.key, [0, 0, 0])
        _INTERNED[(type, index)] = obj
        return obj

    @property
    def backend(self):
        """The backend object that runs this device's arrays."""
        b = self._backend
        if b is None:
            b = self._backend = _plugins.get_backend(self.type)
            b.check_device(self)
        return b

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))


def as_device(d) -> device:
    """Normalise ``None``/str/int/device to a device (``None`` means the default CPU)."""
    if d is None:
        return _CPU
    if isinstance(d, device):
        return d
    if isinstance(d, int):
        raise ValueError(f"a bare device index ({d}) is ambiguous here; write 'cpu:{d}' or 'cuda:{d}'")
    return device(d)


_CPU = device("cpu")


def forget_backends(device_type: str | None = None) -> None:
    """Make the devices (of ``device_type``, or all) look their backend up again on next use: plugins or the
    number of devices changed."""
    for dev in _INTERNED.values():
        if device_type is None or dev.type == device_type:
            dev._backend = None


_plugins.on_registry_change(forget_backends)
