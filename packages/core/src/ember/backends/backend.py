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

import contextlib
import functools
from typing import Any

import numpy as np

from .._dtype import float32, numpy_dtype
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
    #: ``device_guard(device)``: a context manager inside which new arrays are made on ``device`` (a backend
    #: whose library allocates on a "current device", as CuPy does on several GPUs); None: nothing to switch.
    #: Ops run their kernels inside it, factory functions make their arrays inside it (:func:`on_device`).
    device_guard: Any = None

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

    # -- float16 and bfloat16 ------------------------------------------------
    #: the dtype in which ops on float16/bfloat16 arrays compute, their floating results rounded back to the
    #: input's dtype (PyTorch's CPU kernels accumulate in float32 too); ``None``: kernels run on those dtypes
    reduced_float_compute: Any = float32
    #: ``{op name: kernel}`` run instead of the widening below for float16/bfloat16 inputs (same contract as an
    #: op's forward; returning ``NotImplemented`` falls back to the widening); the CPU's matrix products
    reduced_float_kernels: dict = {}

    def run_reduced_float(self, kernel, ctx, xp, arrays, attrs):
        """Run an op's ``kernel`` whose inputs include float16/bfloat16 arrays: with those arrays cast to
        :attr:`reduced_float_compute`, and each result in that dtype rounded back to the reduced dtype.

        One rounding per op, as PyTorch's CPU does: a sum over many bfloat16 values does not lose the small
        terms, and matmul and convolution run in the fast float32 BLAS, not in NumPy's slow float16 loops.
        A kernel given an explicit ``dtype`` attribute (``sum(..., dtype=...)``) returns what was asked. An op
        named in :attr:`reduced_float_kernels` runs that kernel instead, on the float16/bfloat16 arrays.
        """
        compute = self.reduced_float_compute
        if compute is None:
            return kernel(ctx, xp, *arrays, **attrs)
        special = self.reduced_float_kernels.get(getattr(type(ctx), "name_", None))
        if special is not None:
            out = special(ctx, xp, *arrays, **attrs)
            if out is not NotImplemented:
                return out
        wide = self.native_dtype(compute)
        from_native = self.from_native
        reduced = next((from_native[a.dtype] for a in arrays if _is_reduced(from_native, a)), None)
        up = [self.widen_reduced(a, wide) if _is_reduced(from_native, a) else a for a in arrays]
        out = kernel(ctx, xp, *up, **attrs)
        del up  # the widened inputs go before the result is rounded: less memory held at once
        if reduced is None or attrs.get("dtype") is not None:
            return out
        narrow = self.native_dtype(reduced)
        if isinstance(out, (tuple, list)):
            return tuple(self.narrow_reduced(o, narrow) if o.dtype == wide else o for o in out)
        return self.narrow_reduced(out, narrow) if out.dtype == wide else out

    def widen_reduced(self, array, wide):
        """A float16/bfloat16 ``array`` converted (exactly) to the native dtype ``wide``."""
        return self.xp.astype(array, wide)

    def narrow_reduced(self, array, narrow):
        """``array`` rounded to the native float16/bfloat16 dtype ``narrow`` (to nearest, ties to even).

        ``array`` is a kernel's result; when no one else holds it, an override may use its memory as scratch.
        """
        return self.xp.astype(array, narrow)

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

    def total_memory(self, device) -> int | None:
        """Bytes of memory ``device`` has in all (``ember.memory.set_per_process_memory_fraction`` takes a
        fraction of it), or None where the backend cannot tell."""
        return None

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


_NO_GUARD = contextlib.nullcontext()


def on_device(device):
    """The context in which arrays for ``device`` are made: its backend's :attr:`Backend.device_guard`, if any."""
    guard = (device._backend or device.backend).device_guard
    return _NO_GUARD if guard is None else guard(device)


def _is_reduced(from_native, a) -> bool:
    """Whether ``a`` is an array (not a Python scalar or ``None``) of float16 or bfloat16."""
    try:
        return from_native[a.dtype].is_reduced_float
    except (AttributeError, KeyError, TypeError):
        return False
