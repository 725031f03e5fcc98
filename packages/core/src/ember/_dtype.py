"""dtypes and PyTorch's type promotion rules.

A ``dtype`` is a small immutable object (``ember.float32``) that backends map to
their native array dtypes. Promotion follows PyTorch, not NumPy: ``int32 + 2.5``
is ``float32``, a zero-dim tensor only wins when its category is higher, and a
Python float becomes the default dtype.

>>> import ember
>>> ember.promote_types(ember.uint8, ember.int8)
ember.int16
"""
from __future__ import annotations

import builtins
import threading

__all__ = [
    "dtype", "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32",
    "int64", "uint8", "bool", "half", "float", "double", "short", "int", "long",
    "promote_types", "get_default_dtype", "set_default_dtype", "result_type", "finfo", "iinfo",
]

#: the categories of dtypes (``dtype.category``), in promotion order: a higher category wins
BOOL, INTEGER, FLOATING = 0, 1, 2


class dtype:
    """A tensor element type. Compare with ``==``; print as ``ember.float32``.

    ``category`` is one of :data:`BOOL`, :data:`INTEGER` and :data:`FLOATING`
    (also reachable as ``dtype.BOOL`` ...), ordered as promotion orders them.

    >>> import ember
    >>> ember.int64.category == ember.int64.INTEGER, ember.float16.is_floating_point
    (True, True)
    """

    __slots__ = ("name", "itemsize", "category", "rank", "is_signed", "is_floating_point", "is_reduced_float")
    BOOL, INTEGER, FLOATING = BOOL, INTEGER, FLOATING

    def __init__(self, name, itemsize, category, rank, is_signed=True):
        self.name = name
        self.itemsize = itemsize
        self.category = category
        self.rank = rank
        self.is_signed = is_signed
        #: whether ``category`` is FLOATING (an attribute, not a property: ops read it on every call)
        self.is_floating_point = category == FLOATING
        #: float16 or bfloat16: ops compute in float32 and round (see ``Backend.run_reduced_float``)
        self.is_reduced_float = self.is_floating_point and itemsize == 2

    @property
    def is_complex(self) -> bool:
        return False

    @property
    def scalar_type_name(self) -> str:
        """PyTorch's name of this element type in messages and legacy types (``Float``, ``Long``, ...)."""
        return _SCALAR_TYPE_NAMES[self.name]

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


bool_ = dtype("bool", 1, BOOL, 0, False)
uint8 = dtype("uint8", 1, INTEGER, 1, False)
int8 = dtype("int8", 1, INTEGER, 2)
int16 = dtype("int16", 2, INTEGER, 3)
int32 = dtype("int32", 4, INTEGER, 4)
int64 = dtype("int64", 8, INTEGER, 5)
float16 = dtype("float16", 2, FLOATING, 1)
bfloat16 = dtype("bfloat16", 2, FLOATING, 2)
float32 = dtype("float32", 4, FLOATING, 3)
float64 = dtype("float64", 8, FLOATING, 4)
globals()["bool"] = bool_
half, float, double = float16, float32, float64  # noqa: A001 - PyTorch's aliases
short, int, long = int16, int32, int64  # noqa: A001

_SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                      "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                      "bool": "Bool"}
ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
_BY_NAME = {d.name: d for d in ALL_DTYPES}


class NumpyDtypes(dict):
    """``{NumPy dtype: ember dtype}``; bfloat16 joins on first use, as importing ml_dtypes takes a second."""

    def __missing__(self, key):
        if getattr(key, "name", None) != "bfloat16":
            raise KeyError(key)
        self[numpy_dtype(bfloat16)] = bfloat16
        return bfloat16


def numpy_dtype(d: dtype):
    """The NumPy dtype of ember dtype ``d`` (bfloat16 comes from ml_dtypes, imported here when first needed)."""
    import numpy as np
    if d is bfloat16:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(d.name)


ALL_BY_NUMPY = NumpyDtypes({numpy_dtype(d): d for d in ALL_DTYPES if d is not bfloat16})


def from_numpy_dtype(np_dtype):
    """The ember dtype of a NumPy dtype, or ``None`` if ember has none (e.g. complex, strings)."""
    try:
        return ALL_BY_NUMPY[np_dtype]
    except (KeyError, TypeError):
        return None


def _by_name(name):
    return _BY_NAME[name]


def _promote_same_category(a, b):
    if a.category == INTEGER and (a is uint8 or b is uint8) and a is not b:
        other = b if a is uint8 else a
        # uint8 with a signed type needs the next wider signed type
        return {int8: int16, int16: int16, int32: int32, int64: int64}[other]
    if a.category == FLOATING and {a, b} == {float16, bfloat16}:
        return float32
    return a if a.rank >= b.rank else b


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to, by PyTorch's table."""
    if type1 is type2:
        return type1
    if type1.category != type2.category:
        return type1 if type1.category > type2.category else type2
    return _promote_same_category(type1, type2)


_state = threading.local()


def get_default_dtype() -> dtype:
    """The dtype of floating tensors made from Python floats (``float32`` unless changed)."""
    return getattr(_state, "default", float32)


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype (``float32`` or ``float64``, as in PyTorch)."""
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d!r}")
    _state.default = d


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar gets when it stands alone (``ember.tensor(2.5)``)."""
    if isinstance(value, builtins.bool):
        return bool_
    if isinstance(value, builtins.int):
        return int64
    return get_default_dtype()


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None or higher.category == FLOATING:
        return higher
    if higher is bool_ or lower.category == FLOATING:
        return promote_types(higher, lower)
    return higher


def result_type(*operands) -> dtype:
    """dtype of an elementwise op over tensors and Python scalars, by PyTorch's rules.

    Tensors with dimensions outrank zero-dim tensors, which outrank Python
    scalars; a lower group only matters when its category (bool < int < float)
    is higher.
    """
    dim_r = zero_r = wrapped_r = None
    for op in operands:
        d = getattr(op, "_dtype", None)
        if d is None:
            d = scalar_dtype(op)
            wrapped_r = d if wrapped_r is None else promote_types(wrapped_r, d)
        elif op._data.ndim == 0:
            zero_r = d if zero_r is None else promote_types(zero_r, d)
        else:
            dim_r = d if dim_r is None else promote_types(dim_r, d)
    return _combine(dim_r, _combine(zero_r, wrapped_r))


class finfo:
    """Machine limits of a floating dtype (``ember.finfo(ember.float32).eps``)."""

    def __init__(self, type=None):  # noqa: A002 - PyTorch's argument name
        import ml_dtypes
        import numpy as np
        type = type or get_default_dtype()
        if not type.is_floating_point:
            raise TypeError(f"finfo expects a floating point dtype, got {type!r}")
        info = ml_dtypes.finfo(ml_dtypes.bfloat16) if type is bfloat16 else np.finfo(type.name)
        self.dtype = type
        self.bits = type.itemsize * 8
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = self.smallest_normal = builtins.float(info.tiny)
        self.resolution = 10.0 ** -builtins.int(info.precision)  # exact, as in PyTorch (1e-06, 0.001)


class iinfo:
    """Limits of an integer dtype (``ember.iinfo(ember.int8).max == 127``)."""

    def __init__(self, type):  # noqa: A002
        import numpy as np
        if type.category == FLOATING:
            raise TypeError(f"iinfo expects an integer dtype, got {type!r}")
        info = np.iinfo("uint8" if type is bool_ else type.name)
        self.dtype = type
        self.bits = type.itemsize * 8
        self.max = 1 if type is bool_ else builtins.int(info.max)
        self.min = 0 if type is bool_ else builtins.int(info.min)
