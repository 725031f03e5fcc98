"""The range rule for putting a Python number (or a list's values) into a dtype, as PyTorch checks it.

An integer fits a signed dtype inside ``[min, max]``; an unsigned dtype also takes ``[-max, -1]``, wrapping
as two's complement (``-1`` -> ``255`` in uint8). A float must lie inside ``[min, max]`` of an integer dtype
(``255.9`` does not fit uint8), and a finite float inside the finite range of float32 and float16 (PyTorch
checks those fill values, not bfloat16's); NaN fits no integer dtype.

>>> import ember
>>> from ember._overflow import check_scalar
>>> check_scalar(300, ember.uint8)
Traceback (most recent call last):
RuntimeError: value cannot be converted to type uint8_t without overflow
"""
from __future__ import annotations

import math

import numpy as np

from . import _dtype as dt

__all__ = ["check_scalar", "check_array", "wrap_unsigned"]

#: the C type names PyTorch's fill-style overflow message uses
_C_NAMES = {"int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t", "uint8": "uint8_t",
            "float32": "float", "float16": "c10::Half"}
#: float dtypes whose fill value PyTorch checks (bfloat16's overflows to inf quietly, as does tensor()'s)
_FLOAT_MAX = {dt.float32: float(np.finfo(np.float32).max), dt.float16: float(np.finfo(np.float16).max)}


def _name(dtype, c_names):
    name = dtype.name.replace("ember.", "")
    return _C_NAMES.get(name, name) if c_names else name


#: integer dtype -> (lowest int, lowest float, highest); unsigned ints take [-max, -1] as two's complement
_RANGES = {d: (-info.max if info.min == 0 else info.min, info.min, info.max)
           for d in (dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64) for info in (dt.iinfo(d),)}
#: integer dtype -> NumPy dtypes of list data that always fit it
_SAFE = {d: frozenset(np.dtype(n) for n in ("bool", "int8", "uint8", "int16", "int32", "int64")
                      if np.can_cast(n, d.name.replace("ember.", ""), "safe")) for d in _RANGES}


def _fits(value, dtype) -> bool:
    rng = _RANGES.get(dtype)
    if rng is None:
        limit = _FLOAT_MAX.get(dtype)
        if limit is not None and type(value) is float:
            return not math.isfinite(value) or abs(value) <= limit
        return True
    if isinstance(value, float):
        return rng[1] <= value <= rng[2]  # False for NaN
    return rng[0] <= value <= rng[2]


def check_scalar(value, dtype, *, c_names=True):
    """Raise PyTorch's overflow ``RuntimeError`` unless the Python number ``value`` fits ``dtype``.

    ``c_names`` picks the message's type name: C's (``uint8_t``, as ``full``/``fill_`` say) or ember's.
    """
    if value.__class__ is not bool and not _fits(value, dtype):
        raise RuntimeError(f"value cannot be converted to type {_name(dtype, c_names)} without overflow")


def wrap_unsigned(value, dtype):
    """``value`` (already checked) with a negative integer for an unsigned dtype wrapped as two's complement."""
    if value < 0 and type(value) is int and dtype is dt.uint8:
        return value + 256
    return value


def check_array(arr, dtype):
    """Raise the overflow error if a value of NumPy ``arr`` (from list data) does not fit integer ``dtype``.

    Only narrowing conversions to integer dtypes are scanned, so the common case costs one dtype test.
    """
    safe = _SAFE.get(dtype)
    if safe is None or arr.dtype in safe or arr.dtype.kind not in "iuf" or arr.size == 0:
        return
    lo, hi = arr.min(), arr.max()
    if arr.dtype.kind == "f":
        lo, hi = float(lo), float(hi)
    else:
        lo, hi = int(lo), int(hi)
    if not (_fits(lo, dtype) and _fits(hi, dtype)):
        raise RuntimeError(f"value cannot be converted to type {_name(dtype, False)} without overflow")
