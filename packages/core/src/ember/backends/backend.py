"""The backend contract: what a device backend provides to ember.

A backend owns one device type (``name``). Ops are written once against the
array API namespace ``xp``; everything that is not in the array API (moving
data, random numbers, memory, dtype support) goes through these methods.
Subclass :class:`Backend` in a plugin and return an instance from the
``ember_backends`` hook (see ``ember/hookspecs.py``).

>>> import ember
>>> ember.device("cpu").backend.name
'cpu'
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._dtype import numpy_dtype
from ..errors import UnsupportedOpError


class Backend:
    """Base class of device backends; override what your device does differently."""

    #: device type served, e.g. ``"cpu"``
    name: str = ""
    #: the array-API namespace ops run on (a module, or an object standing in for one)
    xp: Any = None
    #: ``{ember dtype: native dtype}`` of the dtypes this backend can hold
    dtypes: dict = {}

    # -- devices ------------------------------------------------------------
    def device_count(self) -> int:
        return 1

    def is_available(self) -> bool:
        return True

    def check_device(self, device) -> None:
        """Raise a clear error if ``device`` does not exist on this backend."""
        n = self.device_count()
        if (device.index or 0) >= n:
            raise RuntimeError(f"device {device} does not exist: backend {self.name!r} has {n} device(s) "
                               f"({', '.join(f'{self.name}:{i}' for i in range(n))})")

    def synchronize(self, device) -> None:
        """Wait for all work queued on ``device`` (a no-op for synchronous backends)."""

    # -- dtypes -------------------------------------------------------------
    def native_dtype(self, dtype):
        try:
            return self.dtypes[dtype]
        except KeyError:
            raise UnsupportedOpError(
                f"backend {self.name!r} does not support dtype {dtype!r}; "
                f"supported: {', '.join(repr(d) for d in self.dtypes)}") from None

    @functools.cached_property
    def from_native(self) -> dict:
        """``{native dtype: ember dtype}``, the inverse of :attr:`dtypes`."""
        return {nat: d for d, nat in self.dtypes.items()}

    def ember_dtype(self, native):
        try:
            return self.from_native[native]
        except KeyError:
            raise TypeError(f"backend {self.name!r} has no ember dtype for native dtype {native!r}") from None

    # -- data in and out ------------------------------------------------------
    def asarray(self, data, dtype, device):
        """A new array holding ``data`` (nested lists, scalars, NumPy arrays) as ``dtype``."""
        return self.from_numpy(np.array(data, dtype=None if dtype is None else numpy_dtype(dtype), copy=True), device)

    def from_numpy(self, array: np.ndarray, device):
        """``array`` on ``device``; shares memory where the device can."""
        raise NotImplementedError

    def to_numpy(self, array) -> np.ndarray:
        """A NumPy array of ``array``; shares memory where the device can."""
        raise NotImplementedError

    def copy_to(self, array, src, dst):
        """``array`` (on device ``src``) copied to device ``dst`` of this backend."""
        return self.from_numpy(np.array(self.to_numpy(array), copy=True), dst)

    def data_ptr(self, array) -> int:
        """Address of ``array``'s first element (identifies shared memory)."""
        return self.to_numpy(array).__array_interface__["data"][0]

    # -- random numbers ------------------------------------------------------
    def rng_array(self, array: np.ndarray, device):
        """Turn the generator's draws (NumPy arrays made on the host by ``ember.random``) into an array on
        ``device``."""
        return self.from_numpy(array, device)

    # -- memory --------------------------------------------------------------
    def memory_reserved(self, device) -> int:
        """Bytes the backend holds for ``device`` (cached or in use); default: what tensors hold."""
        return device.mem[0]

    def empty_cache(self, device) -> None:
        """Give cached, unused memory back to the system."""

    def pin_memory(self, array):
        """A copy of the host (NumPy) ``array`` in this backend's page-locked host memory, as a NumPy array.

        Override it where the device has such memory (CUDA's pinned memory):
        ``Tensor.pin_memory()`` then uses it and ``ember.memory.can_pin_memory()``
        is True. This default, which has none, is never called for pinning.
        """
        return array

    def describe(self) -> str:
        """One line for ``python -m ember info``."""
        return f"{self.device_count()} device(s)"
