"""STAND-IN for CuPy, on NumPy: for ember's tests on machines without a GPU. Never shipped (it lives in tests/).

It imitates only what ember calls: arrays that know their (simulated) GPU (``a.device.id``) and whose
``a.data.ptr`` is the host address of their first element, ``asarray``/``asnumpy`` moving data, every NumPy
function under CuPy's name returning such arrays on the current device, the memory pools of ``cupy.cuda``
(which count live arrays' bytes per device and raise ``OutOfMemoryError`` past ``EMBER_STANDIN_GPU_MEMORY``),
and synchronous streams and events. ``EMBER_STANDIN_GPUS`` sets how many GPUs it simulates (default 2).

Activate it by putting ``tests/cuda_standin`` first on ``sys.path`` (the ``cuda_standin`` fixture of
``tests/conftest.py``, or ``PYTHONPATH=tests/cuda_standin`` for a subprocess).
"""
from __future__ import annotations

import types
import weakref

import numpy as _np

from . import cuda
from .cuda import memory as _memory
from .cuda import runtime as _runtime

__version__ = "14.2.0+standin"
STANDIN = True


class _Pointer:
    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr


class ndarray(_np.ndarray):  # noqa: N801 - CuPy's name
    """A NumPy array that lives on a stand-in GPU: fresh memory counts in that device's pool."""

    _device_id = 0

    def __array_finalize__(self, obj):
        owner = self
        while isinstance(owner.base, _np.ndarray):
            owner = owner.base
        dev = _OWNERS.get(id(owner))
        if dev is None:  # fresh memory (NumPy made a result): on the current device, counted by its pool
            dev = _runtime.getDevice()
            _track(owner, dev)
        self._device_id = dev

    @property
    def device(self):
        return cuda.Device(self._device_id)

    @property
    def data(self):
        return _Pointer(self.__array_interface__["data"][0])

    def get(self, stream=None, order="C", out=None, blocking=True):
        return asnumpy(self, stream, order, out, blocking=blocking)

    def set(self, arr, stream=None) -> None:
        self[...] = arr

    def __repr__(self):
        return _np.array_repr(self.view(_np.ndarray)).replace("array", "standin_array", 1)


#: id(array owning memory) -> the stand-in GPU it is on
_OWNERS: dict = {}


def _track(owner, dev: int) -> None:
    n = owner.nbytes
    _memory._DEVICE_POOL._alloc(dev, n)
    _OWNERS[id(owner)] = dev
    weakref.finalize(owner, _release, id(owner), dev, n)


def _release(key, dev, n) -> None:
    _OWNERS.pop(key, None)
    _memory._DEVICE_POOL._free(dev, n)


def _wrap(x):
    """NumPy results as stand-in arrays: fresh plain arrays move onto the current device."""
    if isinstance(x, ndarray):
        return x
    if isinstance(x, _np.ndarray):
        out = _np.empty(x.shape, x.dtype).view(ndarray)  # a fresh, counted array (raises OutOfMemoryError)
        out[...] = x
        return out
    if isinstance(x, tuple):
        return type(x)(*map(_wrap, x)) if hasattr(x, "_fields") else tuple(map(_wrap, x))
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


class _Func:
    """A NumPy function or ufunc whose results become stand-in arrays (``.at``/``.reduce`` ... too)."""

    def __init__(self, fn):
        self._fn = fn
        self.__name__ = getattr(fn, "__name__", repr(fn))

    def __call__(self, *args, **kwargs):
        kwargs.pop("device", None)
        return _wrap(self._fn(*args, **kwargs))

    def __getattr__(self, name):
        value = getattr(self._fn, name)
        return _Func(value) if callable(value) and not isinstance(value, type) else value


class _Module(types.ModuleType):
    """A NumPy submodule (``linalg``, ``fft``) under CuPy's name."""

    def __init__(self, name, mod):
        super().__init__(name)
        self._mod = mod

    def __getattr__(self, name):
        return _lift(getattr(self._mod, name), f"{self.__name__}.{name}")


def _lift(value, name):
    if isinstance(value, types.ModuleType):
        return _Module(name, value)
    if callable(value) and not isinstance(value, type):
        return _Func(value)
    return value


def __getattr__(name):
    value = _lift(getattr(_np, name), f"cupy.{name}")
    globals()[name] = value
    return value


def asarray(a, dtype=None, order=None, *, copy=None, blocking=False):
    """``a`` on the current device: the array itself when it is there with that dtype, else a copy."""
    dev = _runtime.getDevice()
    if isinstance(a, ndarray) and a._device_id == dev and (dtype is None or _np.dtype(dtype) == a.dtype) \
            and not copy:
        return a
    host = _np.asarray(a.view(_np.ndarray) if isinstance(a, ndarray) else a, dtype=dtype)
    return _wrap(_np.array(host, copy=True))


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    return asarray(obj, dtype, copy=copy, blocking=blocking)


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    """A host (NumPy) copy of ``a``."""
    host = _np.array(a.view(_np.ndarray) if isinstance(a, ndarray) else a, copy=True)
    if out is not None:
        out[...] = host
        return out
    return host


def get_default_memory_pool():
    return _memory._DEVICE_POOL


def get_default_pinned_memory_pool():
    return _memory._PINNED_POOL


def get_array_module(*args):
    return __import__(__name__)
