"""The built-in CPU backend on NumPy, registered as an ordinary plugin.

It can present several logical devices (``cpu:0`` ... ``cpu:N-1``) so that
multi-device code runs on a machine without GPUs. N comes from the
``EMBER_CPU_DEVICES`` environment variable or :func:`set_device_count`.

>>> import ember
>>> ember.backends.cpu.set_device_count(2)
>>> ember.zeros(2, device="cpu:1").device
device(type='cpu', index=1)
"""
from __future__ import annotations

import os
import sys

import numpy as np

from .. import _dtype as dt
from .._device import forget_backends
from .._plugins import hookimpl
from . import cpu_kernels, cpu_malloc, cpu_reduced, reduced_casts
from .backend import Backend
from .numpy_namespace import xp


class _NativeDtypes(dict):
    """``{ember dtype: NumPy dtype}``; bfloat16's NumPy dtype is made (ml_dtypes imported) on first use."""

    def __missing__(self, key):
        if key is not dt.bfloat16:
            raise KeyError(key)
        native = self[key] = dt.numpy_dtype(key)
        return native


#: references to a kernel's result inside ``narrow_reduced``: the caller's local, the argument, getrefcount's own
_CALLER_REFS = 3
_DTYPES = _NativeDtypes({d: dt.numpy_dtype(d) for d in dt.ALL_DTYPES if d is not dt.bfloat16})


class CPUBackend(Backend):
    """NumPy arrays in host memory; ``xp`` is NumPy with a few faster functions (``numpy_namespace``)."""

    name = "cpu"
    xp = xp
    dtypes = _DTYPES
    reduced_float_kernels = cpu_reduced.KERNELS

    def __init__(self):
        self._count = None

    def device_count(self) -> int:
        if self._count is None:
            raw = os.environ.get("EMBER_CPU_DEVICES", "1")
            if not raw.isdigit() or int(raw) < 1:
                raise ValueError(f"EMBER_CPU_DEVICES must be a positive integer, got {raw!r}")
            self._count = int(raw)
        return self._count

    def set_device_count(self, n: int) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"the number of logical CPU devices must be a positive int, got {n!r}")
        self._count = n
        forget_backends(self.name)  # devices re-check that they exist on next use

    def native_dtype(self, dtype):
        return _DTYPES[dtype]

    @property
    def from_native(self):
        return dt.ALL_BY_NUMPY

    def from_numpy(self, array, device):
        return array

    def to_numpy(self, array):
        return array

    def copy_to(self, array, src, dst):
        return array.copy()

    def total_memory(self, device) -> int | None:
        """The machine's physical memory (every logical CPU device shares it)."""
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):  # no sysconf (Windows) or no such name
            return None

    def widen_reduced(self, array, wide):
        return reduced_casts.widen(array) if wide == np.float32 else array.astype(wide)

    def narrow_reduced(self, array, narrow):
        # an array that owns its memory and that only the caller (run_reduced_float) and this call hold is a
        # kernel's fresh result, free to round in place
        owned = array.flags.owndata and array.flags.writeable and sys.getrefcount(array) <= _CALLER_REFS
        return reduced_casts.narrow(array, narrow, scratch=owned)

    def describe(self) -> str:
        return f"NumPy {np.__version__}, {self.device_count()} logical device(s)"


BACKEND = CPUBackend()
cpu_malloc.tune()  # a step's freed arrays stay with the process for the next step (see cpu_malloc)


def set_device_count(n: int) -> None:
    """Present ``n`` logical CPU devices (``cpu:0`` ... ``cpu:{n-1}``)."""
    BACKEND.set_device_count(n)


def device_count() -> int:
    return BACKEND.device_count()


@hookimpl
def ember_backends():
    return [BACKEND]


@hookimpl
def ember_op_kernels(backend):
    """The NumPy kernels that beat an op's array-API forward (strided windows for convolution and pooling)."""
    if backend.name != "cpu":
        return {}
    return cpu_kernels.kernels()


@hookimpl
def ember_status():
    """What the CPU backend did to glibc's malloc (:mod:`ember.backends.cpu_malloc`)."""
    return {"CPU memory allocator": cpu_malloc.describe}
