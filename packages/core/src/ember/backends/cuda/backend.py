"""``CUDABackend``: ember's ``cuda`` devices on CuPy arrays.

Arrays live on the GPU of their device (``cuda:N`` is CuPy's device N; ``cuda`` is ``cuda:0``); data moves
with ``with cupy.cuda.Device(N)`` around the copy. On a machine with several GPUs, ops and factory functions
run inside ``cupy.cuda.Device(N)`` of their tensors' device (``Backend.device_guard``); with one GPU nothing
is switched. Memory statistics come from CuPy's memory pool,
pinned host memory from its pinned memory pool, and CuPy's ``OutOfMemoryError`` becomes
``ember.OutOfMemoryError`` with ember's report.
"""
from __future__ import annotations

import numpy as np

from ... import _alloc
from ... import _dtype as dt
from ..backend import Backend
from . import _cupy, namespace


class CUDABackend(Backend):
    """CuPy arrays on NVIDIA GPUs; ``xp`` (CuPy plus a few array-API names) is set on first use."""

    name = "cuda"

    def __init__(self):
        self._reset()

    def _reset(self) -> None:
        #: ember dtype -> NumPy dtype (CuPy's dtypes are NumPy's); bfloat16 joins when CuPy holds it
        self.dtypes = {d: dt.numpy_dtype(d) for d in dt.ALL_DTYPES if d is not dt.bfloat16}
        self._from_native = {nat: d for d, nat in self.dtypes.items()}
        self.xp = None
        self._cp = None
        self.device_guard = None

    # -- CuPy, loaded on first use ---------------------------------------------------------------
    @property
    def cp(self):
        """The ``cupy`` module; a clear error when there is none or it sees no GPU."""
        cp = self._cp
        if cp is None:
            cp = _cupy.load()
            if cp is None:
                raise RuntimeError(f"CUDA is not available: {_cupy.reason()}")
            self._cp = cp
            self.xp = namespace.make(cp)
            if _cupy.device_count() > 1:  # CuPy allocates on its current device: switch to the tensors' GPU
                self.device_guard = self._guard
            if _holds_bfloat16(cp):
                self.dtypes[dt.bfloat16] = dt.numpy_dtype(dt.bfloat16)
                self._from_native[self.dtypes[dt.bfloat16]] = dt.bfloat16
        return cp

    def forget(self) -> None:
        """Probe CuPy again on next use (tests swapping the stand-in in and out)."""
        _cupy.forget()
        self._reset()

    def native_dtype(self, dtype):
        if dtype is dt.bfloat16 and dtype not in self.dtypes:
            self.cp  # noqa: B018 - loading CuPy decides whether it holds bfloat16
        if dtype is dt.bfloat16 and dtype not in self.dtypes:
            raise TypeError("the cuda backend cannot hold bfloat16 here: CuPy supports it only with the ml_dtypes "
                            "package installed (pip install ml_dtypes); use float16 or float32")
        return super().native_dtype(dtype)

    @property
    def from_native(self):
        return self._from_native

    # -- devices ------------------------------------------------------------------------------
    def is_available(self) -> bool:
        return _cupy.load() is not None

    def device_count(self) -> int:
        return _cupy.device_count()

    def check_device(self, device) -> None:
        self.cp  # noqa: B018 - raises when CUDA is not available
        super().check_device(device)

    def current_device(self) -> int:
        """CuPy's current device (``ember.accelerator.current_device_index`` asks this)."""
        return self.cp.cuda.runtime.getDevice()

    def set_device(self, index: int) -> None:
        """Make GPU ``index`` CuPy's current device (``ember.accelerator.set_device_index``)."""
        self.cp.cuda.Device(index).use()

    def _guard(self, device):
        """CuPy's ``Device`` context of ``device``: work inside allocates there (``device_guard``)."""
        return self._cp.cuda.Device(device.index or 0)

    def synchronize(self, device) -> None:
        self.cp.cuda.Device(device.index or 0).synchronize()

    def device_name(self, device) -> str:
        name = self.cp.cuda.runtime.getDeviceProperties(device.index or 0)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def properties(self, device) -> dict:
        """The device's CUDA properties (``cudaDeviceProp`` names) as CuPy gives them."""
        return self.cp.cuda.runtime.getDeviceProperties(device.index or 0)

    # -- data in and out ----------------------------------------------------------------------
    def asarray(self, data, dtype, device):
        return self.copy_from_host(np.asarray(data, dtype=None if dtype is None else dt.numpy_dtype(dtype)), device)

    def from_numpy(self, array, device):
        return self.copy_from_host(array, device)

    def copy_from_host(self, array, device, non_blocking: bool = False):
        """A new array on ``device`` holding the host ``array``. With ``non_blocking`` the copy is queued on
        the current stream and the call returns at once (truly asynchronous from pinned memory: the caller
        keeps ``array`` unchanged until the stream reaches the copy)."""
        cp = self.cp
        try:
            with cp.cuda.Device(device.index or 0):
                return cp.asarray(array, blocking=not non_blocking)
        except MemoryError as exc:
            raise _alloc.from_memory_error(exc, device, array.shape, dt.from_numpy_dtype(array.dtype)) from exc

    def to_numpy(self, array) -> np.ndarray:
        """A host copy of ``array`` (waits for the work that makes it)."""
        return self.cp.asnumpy(array)

    def copy_to_host(self, array) -> np.ndarray:
        return self.cp.asnumpy(array)

    def copy_to(self, array, src, dst):
        """``array`` copied to GPU ``dst`` (``ndarray.copy`` copies onto the current device)."""
        cp = self.cp
        try:
            with cp.cuda.Device(dst.index or 0):
                return array.copy()
        except MemoryError as exc:
            raise _alloc.from_memory_error(exc, dst, array.shape, self._from_native.get(array.dtype)) from exc

    def data_ptr(self, array) -> int:
        return array.data.ptr

    # -- random numbers -----------------------------------------------------------------------
    def rng_array(self, array, device):
        """The generator's host draws (``ember.random``'s per-device generators) copied to ``device``."""
        return self.copy_from_host(array, device)

    # -- memory -------------------------------------------------------------------------------
    def memory_reserved(self, device) -> int:
        cp = self.cp
        with cp.cuda.Device(device.index or 0):
            return int(cp.get_default_memory_pool().total_bytes())

    def empty_cache(self, device) -> None:
        """Give the cached blocks of CuPy's memory pool (every GPU) and of its pinned pool back to the driver."""
        cp = self.cp
        pool = cp.get_default_memory_pool()
        for i in range(self.device_count()):
            with cp.cuda.Device(i):
                pool.free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()

    def total_memory(self, device) -> int | None:
        return int(self.properties(device)["totalGlobalMem"])

    def pin_memory(self, array):
        """A copy of the host ``array`` in page-locked memory from CuPy's pinned memory pool."""
        import cupyx  # type: ignore[import-not-found]

        self.cp  # noqa: B018 - a clear error without CUDA
        out = cupyx.empty_pinned(array.shape, dtype=array.dtype)
        out[...] = array
        return out

    def describe(self) -> str:
        cp = _cupy.load()
        if cp is None:
            return f"not available: {_cupy.reason()}"
        self.cp  # noqa: B018
        from ..._device import device
        names = ", ".join(f"cuda:{i} {self.device_name(device('cuda', i))}" for i in range(self.device_count()))
        bf16 = "bfloat16" if dt.bfloat16 in self.dtypes else "no bfloat16 (install ml_dtypes)"
        return f"CuPy {cp.__version__}, {self.device_count()} device(s): {names}; {bf16}"


def _holds_bfloat16(cp) -> bool:
    """Whether CuPy makes arrays of ml_dtypes' bfloat16 (CuPy 14 does when ml_dtypes imports)."""
    try:
        cp.empty((0,), dtype=dt.numpy_dtype(dt.bfloat16))
    except Exception:  # ml_dtypes missing, or a CuPy without bfloat16
        return False
    return True


BACKEND = CUDABackend()
