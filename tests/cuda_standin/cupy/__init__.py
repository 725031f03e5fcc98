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


#: id(NumPy array owning memory) -> the stand-in GPU it is on
_OWNERS: dict = {}


def _owner(a: _np.ndarray) -> _np.ndarray:
    while isinstance(a.base, _np.ndarray):
        a = a.base
    return a


def _track(owner, dev: int) -> None:
    n = owner.nbytes
    _memory._DEVICE_POOL._alloc(dev, n)
    _OWNERS[id(owner)] = dev
    weakref.finalize(owner, _release, id(owner), dev, n)


def _release(key, dev, n) -> None:
    _OWNERS.pop(key, None)
    _memory._DEVICE_POOL._free(dev, n)


def _unwrap(x):
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, tuple):
        return tuple(_unwrap(v) for v in x)
    if isinstance(x, list):
        return [_unwrap(v) for v in x]
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _wrap(x):
    """NumPy results as stand-in arrays; NumPy scalars become 0-d arrays (CuPy's reductions give those)."""
    if isinstance(x, ndarray):
        return x
    if isinstance(x, _np.generic):
        x = _np.asarray(x)
    if isinstance(x, _np.ndarray):
        if x.dtype == object:
            raise TypeError("CuPy has no object arrays (the stand-in refuses dtype=object)")
        owner = _owner(x)
        dev = _OWNERS.get(id(owner))
        if dev is None:  # fresh memory NumPy made: a new array on the current device
            dev = _runtime.getDevice()
            _track(owner, dev)
        return ndarray(x, dev)
    if isinstance(x, tuple):
        return type(x)(*map(_wrap, x)) if hasattr(x, "_fields") else tuple(map(_wrap, x))
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


def _binary(name):
    def op(self, other):
        if isinstance(other, _np.ndarray) and not isinstance(other, ndarray):
            raise TypeError(f"Unsupported type {type(other)} (CuPy does not mix host NumPy arrays into GPU ops)")
        return _wrap(getattr(self._a, name)(_unwrap(other)))
    op.__name__ = name
    return op


def _inplace(name):
    def op(self, other):
        getattr(self._a, name)(_unwrap(other))
        return self
    op.__name__ = name
    return op


class ndarray:  # noqa: N801 - CuPy's name
    """An array on a stand-in GPU: a NumPy array inside, which NumPy cannot take implicitly (as with CuPy)."""

    __slots__ = ("_a", "_device_id", "__weakref__")

    def __init__(self, a, device_id: int):
        self._a = a
        self._device_id = device_id

    # -- what ember reads ----------------------------------------------------------------
    @property
    def device(self):
        return cuda.Device(self._device_id)

    @property
    def data(self):
        return _Pointer(self._a.__array_interface__["data"][0])

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: _wrap(self._a.T))
    mT = property(lambda self: _wrap(_np.swapaxes(self._a, -1, -2)))
    real = property(lambda self: _wrap(self._a.real))
    imag = property(lambda self: _wrap(self._a.imag))

    @property
    def base(self):
        return None if self._a.base is None else ndarray(_owner(self._a), self._device_id)

    def __getattr__(self, name):  # methods: sum, reshape, astype, copy, ...
        value = getattr(self._a, name)
        if not callable(value):
            return value

        def method(*args, **kwargs):  # a fresh result (copy() too) lands on the current device, as in CuPy
            return _wrap(value(*_unwrap(args), **_unwrap(kwargs)))
        return method

    def get(self, stream=None, order="C", out=None, blocking=True):
        return asnumpy(self, stream, order, out, blocking=blocking)

    def set(self, arr, stream=None) -> None:
        self._a[...] = arr

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
                        "NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """``np.exp(a)`` on a CuPy array runs CuPy's ufunc (the result stays on the GPU)."""
        if "out" in kwargs:
            kwargs["out"] = tuple(_unwrap(o) for o in kwargs["out"])
        return _wrap(getattr(ufunc, method)(*_unwrap(inputs), **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    def __getitem__(self, key):
        return _wrap(self._a[_unwrap(key)])

    def __setitem__(self, key, value):
        if isinstance(value, _np.ndarray) and value.ndim and not isinstance(value, ndarray):
            raise TypeError("Unsupported type <class 'numpy.ndarray'> (set a CuPy array, or use .set())")
        self._a[_unwrap(key)] = _unwrap(value)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __bool__(self):
        return bool(self._a)

    def __int__(self):
        return int(self._a)

    def __float__(self):
        return float(self._a)

    def __complex__(self):
        return complex(self._a)

    def __index__(self):
        return self._a.__index__()

    def __neg__(self):
        return _wrap(-self._a)

    def __pos__(self):
        return _wrap(+self._a)

    def __abs__(self):
        return _wrap(abs(self._a))

    def __invert__(self):
        return _wrap(~self._a)

    def __repr__(self):
        return _np.array_repr(self._a).replace("array", "standin_array", 1)

    def __hash__(self):
        raise TypeError("unhashable type: 'cupy.ndarray'")

    def __dlpack__(self, *args, **kwargs):
        raise TypeError("the CuPy stand-in does not export DLPack")


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
              "rshift"):
    setattr(ndarray, f"__{_name}__", _binary(f"__{_name}__"))
    setattr(ndarray, f"__r{_name}__", _binary(f"__r{_name}__"))
    setattr(ndarray, f"__i{_name}__", _inplace(f"__i{_name}__"))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(ndarray, f"__{_name}__", _binary(f"__{_name}__"))


class _Func:
    """A NumPy function or ufunc whose results become stand-in arrays (``.at``/``.reduce`` ... too)."""

    def __init__(self, fn):
        self._fn = fn
        self.__name__ = getattr(fn, "__name__", repr(fn))

    def __call__(self, *args, **kwargs):
        if "out" in kwargs and isinstance(kwargs["out"], ndarray):
            out = kwargs["out"]
            kwargs["out"] = out._a
            self._fn(*_unwrap(args), **_unwrap(kwargs))
            return out
        return _wrap(self._fn(*_unwrap(args), **_unwrap(kwargs)))

    def __getattr__(self, name):
        if name == "at" and self.__name__ not in _AT_UFUNCS:
            raise_ = f"`{self.__name__}.at` is not supported yet"

            def at(*args, **kwargs):
                raise NotImplementedError(raise_)
            return at
        value = getattr(self._fn, name)
        if name == "at":
            return lambda a, indices, b=None: value(a._a, _unwrap(indices), _unwrap(b))
        return _Func(value) if callable(value) and not isinstance(value, type) else value


#: the ufuncs whose ``.at`` CuPy implements
_AT_UFUNCS = ("add", "subtract", "maximum", "minimum")


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
    if isinstance(a, ndarray):
        if a._device_id == dev and (dtype is None or _np.dtype(dtype) == a.dtype) and not copy:
            return a
        return _wrap(_np.array(a._a, dtype=dtype, copy=True))
    return _wrap(_np.array(_unwrap(a), dtype=dtype, copy=True))


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    return asarray(obj, dtype, copy=copy, blocking=blocking)


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    """A host (NumPy) copy of ``a``."""
    host = _np.array(a._a if isinstance(a, ndarray) else a, copy=True)
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
