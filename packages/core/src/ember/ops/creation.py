"""Making tensors: ``tensor``, ``as_tensor``, ``from_numpy``, ``zeros``/``ones``/``empty``/``full`` (and
``*_like``), ``arange``, ``linspace``, ``logspace``, ``eye``.

>>> import ember
>>> ember.zeros(2, 3).shape
ember.Size([2, 3])
>>> ember.arange(3)
tensor([0, 1, 2])
"""
from __future__ import annotations

import math

import numpy as np

from .. import _alloc
from .. import _dtype as dt
from .._device import as_device
from .._overflow import check_array, check_scalar, wrap_unsigned
from .._tensor import legacy_tensor_data, size_from_args, to_numpy_data
from ..backends.backend import on_device
from ._common import Tensor

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like",
           "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace", "eye", "scalar_tensor",
           "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
           "IntTensor", "LongTensor", "BoolTensor"]


def _finish(data, device, dtype, requires_grad, pin_memory=False):
    t = Tensor._make(data, device, dtype)
    if pin_memory:  # before requires_grad, so that the pinned tensor is the leaf
        t = t.pin_memory()
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_dtype(data, arr) -> dt.dtype:
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        if arr.dtype.kind == "c":
            raise TypeError("ember has no complex dtypes yet; got a complex NumPy array")
        return dt.from_numpy_dtype(arr.dtype) or _bad_dtype(arr.dtype)
    kind = arr.dtype.kind
    if kind == "b":
        return dt.bool_
    if kind == "u":  # NumPy's choice for Python ints past int64's range
        raise RuntimeError(f"Overflow when unpacking long: the integers in {type(data).__name__} data do not fit in "
                           "int64 ([-2**63, 2**63)); pass smaller values or a float dtype")
    if kind == "i":
        return dt.int64
    if kind == "f":
        return dt.get_default_dtype()
    raise TypeError(f"could not infer a dtype for data of type {type(data).__name__} "
                    f"(NumPy made dtype {arr.dtype}); expected numbers, bools, or nested lists of them")


def _bad_dtype(npd):
    raise TypeError(f"can't convert np.ndarray of type {npd}. The only supported types are: float64, float32, "
                    "float16, bfloat16, int64, int32, int16, int8, uint8, and bool.")


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data``; the dtype is inferred (ints -> int64, floats -> float32).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).dtype
    ember.int64
    """
    device = as_device(device)
    arr = to_numpy_data(data)
    if dtype is None:
        dtype = data._dtype if isinstance(data, Tensor) else _infer_dtype(data, arr)
    else:
        check_array(arr, dtype)
    backend = device.backend
    try:
        data = backend.asarray(arr, dtype, device)
    except MemoryError as exc:
        raise _alloc.from_memory_error(exc, device, arr.shape, dtype) from exc
    return _finish(data, device, dtype, requires_grad, pin_memory)


def as_tensor(data, dtype=None, device=None):
    """Like :func:`tensor`, but shares memory with a NumPy array or tensor when dtype and device allow."""
    device = as_device(device) if device is not None else None
    if isinstance(data, Tensor):
        return data.to(device=device or data.device, dtype=dtype or data.dtype)
    if isinstance(data, np.ndarray) and (device is None or device.type == "cpu"):
        t = from_numpy(data)
        return t if dtype is None else t.to(dtype)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """Array-API style constructor: shares memory unless ``copy=True`` or a conversion is needed."""
    t = tensor(obj, dtype=dtype, device=device) if copy else as_tensor(obj, dtype=dtype, device=device)
    return t.requires_grad_(requires_grad) if requires_grad else t


def from_numpy(ndarray):
    """A CPU tensor sharing memory with ``ndarray`` (writes through either show in both).

    >>> import numpy as np, ember
    >>> a = np.zeros(2); t = ember.from_numpy(a); a[0] = 5
    >>> t
    tensor([5., 0.], dtype=ember.float64)
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dtype = dt.from_numpy_dtype(ndarray.dtype) or _bad_dtype(ndarray.dtype)
    device = as_device("cpu")
    return Tensor._make(device.backend.from_numpy(ndarray, device), device, dtype)


def _filled(fn, size, value, dtype, device, requires_grad, pin_memory=False):
    device = as_device(device)
    shape = size_from_args(size, fn)
    dtype = dtype or dt.get_default_dtype()
    backend = device.backend
    xp = backend.xp
    nat = backend.native_dtype(dtype)
    if value is not None:
        check_scalar(value, dtype)
        value = wrap_unsigned(value, dtype)
    _alloc.check_request(device, shape, dtype)  # past a memory limit, fail before allocating (and filling)
    try:
        with on_device(device):
            data = xp.empty(shape, dtype=nat) if value is None else xp.full(shape, value, dtype=nat)
    except MemoryError as exc:
        raise _alloc.from_memory_error(exc, device, shape, dtype) from exc
    return _finish(data, device, dtype, requires_grad, pin_memory)


def zeros(*size, dtype=None, device=None, requires_grad=False, layout=None):
    """A tensor of zeros: ``zeros(2, 3)`` or ``zeros((2, 3))``."""
    return _filled("zeros", size, 0, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, layout=None):
    """A tensor of ones."""
    return _filled("ones", size, 1, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """An uninitialised tensor (its values are whatever the memory held); ``pin_memory=True`` as in :func:`tensor`."""
    return _filled("empty", size, None, dtype, device, requires_grad, pin_memory)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None):
    """A tensor filled with ``fill_value``; the dtype follows the value (``full((2,), 7)`` is int64)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value)
    return _filled("full", (size,) if not isinstance(size, (tuple, list)) else (tuple(size),), fill_value,
                   dtype, device, requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    return full((), s, dtype=dtype or dt.get_default_dtype(), device=device, requires_grad=requires_grad)


def _like(fn, input, value, dtype, device, requires_grad):
    return _filled(fn, (tuple(input.shape),), value, dtype or input.dtype, device or input.device, requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, layout=None, memory_format=None):
    return _like("zeros_like", input, 0, dtype, device, requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, layout=None, memory_format=None):
    return _like("ones_like", input, 1, dtype, device, requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, layout=None, memory_format=None):
    return _like("empty_like", input, None, dtype, device, requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
              memory_format=None):
    return _like("full_like", input, fill_value, dtype, device, requires_grad)


def _num(x):
    return x.item() if isinstance(x, Tensor) else x


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Values from ``start`` up to (not including) ``end`` by ``step``; int64 if all are ints.

    >>> import ember
    >>> ember.arange(1, 2.5, 0.5)
    tensor([1.0000, 1.5000, 2.0000])
    """
    start, end, step = _num(start), _num(end), _num(step)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange(): upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    if dtype is None:
        dtype = dt.int64 if all(isinstance(v, int) for v in (start, end, step)) else dt.get_default_dtype()
    n = max(0, math.ceil((end - start) / step))
    values = start + np.arange(n, dtype=np.float64 if dtype.is_floating_point else np.int64) * step
    return tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    if not isinstance(steps, int) or steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be a non-negative int, got {steps!r}")
    values = np.linspace(_num(start), _num(end), steps)
    return tensor(values, dtype=dtype or dt.get_default_dtype(), device=device, requires_grad=requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """``steps`` values ``base ** linspace(start, end, steps)``."""
    if not isinstance(steps, int) or steps < 0:
        raise RuntimeError(f"logspace(): number of steps must be a non-negative int, got {steps!r}")
    values = np.power(float(base), np.linspace(_num(start), _num(end), steps))
    return tensor(values, dtype=dtype or dt.get_default_dtype(), device=device, requires_grad=requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """An ``n x m`` tensor with ones on the diagonal."""
    if not isinstance(n, int) or n < 0 or (m is not None and (not isinstance(m, int) or m < 0)):
        raise RuntimeError(f"eye(): n and m must be non-negative ints, got n={n!r}, m={m!r}")
    device = as_device(device)
    dtype = dtype or dt.get_default_dtype()
    backend = device.backend
    shape = (n, m if m is not None else n)
    _alloc.check_request(device, shape, dtype)
    try:
        with on_device(device):
            data = backend.xp.eye(*shape, dtype=backend.native_dtype(dtype))
    except MemoryError as exc:
        raise _alloc.from_memory_error(exc, device, shape, dtype) from exc
    return _finish(data, device, dtype, requires_grad)


class _LegacyTensorType(type):
    """``isinstance(t, ember.FloatTensor)``: a CPU tensor of that dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj._dtype is cls.dtype and obj._device.type == "cpu"


def _legacy_type(name, dtype):
    def __new__(cls, *args, device=None):
        return Tensor._make(*legacy_tensor_data(args, device, dtype))
    doc = (f"PyTorch's legacy constructor: ``ember.{name}([1, 2])`` copies data as {dtype!r}, "
           f"``ember.{name}(2, 3)`` is uninitialised. Prefer ``ember.tensor(data, dtype={dtype!r})``.")
    return _LegacyTensorType(name, (), {"__new__": __new__, "dtype": dtype, "__doc__": doc, "__module__": "ember"})


FloatTensor = _legacy_type("FloatTensor", dt.float32)
DoubleTensor = _legacy_type("DoubleTensor", dt.float64)
HalfTensor = _legacy_type("HalfTensor", dt.float16)
BFloat16Tensor = _legacy_type("BFloat16Tensor", dt.bfloat16)
ByteTensor = _legacy_type("ByteTensor", dt.uint8)
CharTensor = _legacy_type("CharTensor", dt.int8)
ShortTensor = _legacy_type("ShortTensor", dt.int16)
IntTensor = _legacy_type("IntTensor", dt.int32)
LongTensor = _legacy_type("LongTensor", dt.int64)
BoolTensor = _legacy_type("BoolTensor", dt.bool_)
