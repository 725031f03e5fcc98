"""The CPU backend's array namespace: NumPy, with faster versions of a few functions.

NumPy's module-level wrappers (``np.sum``, ``np.broadcast_to``,
``np.reshape``, ...) cost several microseconds of Python on small arrays;
the array methods they end up in cost a fraction of that. ``matmul`` hands
large float32 matrix products to a plugin's GEMM when one is installed
(kernel ``gemm_float32`` of the hook ``ember_cpu_kernels``: ember-onednn's
runs them on the OpenMP pool of its convolutions). Every name not defined
here is NumPy's own.

>>> from ember.backends.numpy_namespace import xp
>>> xp.broadcast_to(xp.ones(1), (2, 3)).shape
(2, 3)
"""
from __future__ import annotations

import builtins
import types

import numpy as np

from .. import _plugins

__all__ = ["xp"]

_add_reduce = np.add.reduce
_FLOAT32 = np.dtype(np.float32)


class _Namespace(types.ModuleType):
    """A module whose missing attributes are NumPy's (looked up once, then cached)."""

    def __getattr__(self, name):
        value = getattr(np, name)
        setattr(self, name, value)
        return value


xp = _Namespace("ember.backends.numpy_namespace.xp", __doc__)


def _sum(x, /, *, axis=None, dtype=None, keepdims=False):
    if dtype is None and x.dtype.kind in "fc":
        return _add_reduce(x, axis, None, None, keepdims)  # what x.sum() runs, minus NumPy's Python layer
    return x.sum(axis=axis, dtype=dtype, keepdims=keepdims)


def _mean(x, /, *, axis=None, keepdims=False):
    if x.dtype.itemsize < 4 or x.dtype.kind != "f":  # float16: NumPy accumulates in float32 for us
        return np.mean(x, axis=axis, keepdims=keepdims)
    total = x.sum(axis=axis, keepdims=keepdims)
    return total / (x.size // builtins.max(total.size, 1) if x.size else 0)


def _broadcast_to(x, /, shape):
    """A broadcast view of ``x``; built directly from its buffer when ``x`` is contiguous."""
    shape = tuple(shape)
    lead = len(shape) - x.ndim
    if lead < 0 or not x.flags.c_contiguous or x.size == 0:
        return np.broadcast_to(x, shape)
    strides = [0] * lead
    for n, size, stride in zip(shape[lead:], x.shape, x.strides):
        if size == n:
            strides.append(stride)
        elif size == 1:
            strides.append(0)
        else:
            return np.broadcast_to(x, shape)  # raises NumPy's error
    return np.ndarray(shape, x.dtype, x, 0, tuple(strides))


def _reshape(x, /, shape, *, copy=None):
    if copy is not True and x.flags.c_contiguous:
        return x.reshape(shape)  # always a view of a C-contiguous array
    return np.reshape(x, shape, copy=copy)


def _permute_dims(x, /, axes):
    return x.transpose(axes)


def _astype(x, dtype, /, *, copy=True):
    return x.astype(dtype, copy=copy)


def _max(x, /, *, axis=None, keepdims=False):
    return x.max(axis=axis, keepdims=keepdims)


def _min(x, /, *, axis=None, keepdims=False):
    return x.min(axis=axis, keepdims=keepdims)


def _full(shape, fill_value, *, dtype=None, device=None):
    out = np.empty(shape, dtype=dtype if dtype is not None else np.result_type(fill_value))
    out.fill(fill_value)
    return out


def _ones(shape, *, dtype=None, device=None):
    return _full(shape, 1, dtype=dtype if dtype is not None else np.float64)


def _blas_operand(x):
    """``x`` (2-D) as a BLAS reads a matrix: unit stride along one dimension, a leading dimension no smaller than
    the other's extent (a copy otherwise: negative, zero or other strides)."""
    rows, cols = x.strides
    item = x.itemsize
    if (cols == item and rows >= builtins.max(x.shape[1], 1) * item and rows % item == 0) or (
            rows == item and cols >= builtins.max(x.shape[0], 1) * item and cols % item == 0):
        return x
    return np.ascontiguousarray(x)


def _matmul(a, b, /, *, out=None):
    """NumPy's matmul; a 2-D float32 product of :data:`~ember._plugins.CPU_KERNEL_MIN` or more multiply-adds goes
    to the plugin kernel ``gemm_float32`` when one is installed (its rounding is its BLAS's, as NumPy's is
    OpenBLAS's)."""
    if a.ndim == 2 and b.ndim == 2 and a.dtype == _FLOAT32 and b.dtype == _FLOAT32:
        (m, k), n = a.shape, b.shape[1]
        size = m * n * k  # the small products (most of an overhead-bound step's) decided here, without a call
        kernel = _plugins.cpu_kernel("gemm_float32", size) if k == b.shape[0] and size >= _plugins.CPU_KERNEL_MIN \
            else None
        if kernel is not None and (out is None or (out.shape == (m, n) and out.dtype == _FLOAT32
                                                   and out.flags.c_contiguous and not np.may_share_memory(out, a)
                                                   and not np.may_share_memory(out, b))):
            if out is None:
                out = np.empty((m, n), _FLOAT32)
            kernel(_blas_operand(a), _blas_operand(b), out)
            return out
    return np.matmul(a, b, out=out)


for _name, _fn in (("full", _full), ("ones", _ones), ("sum", _sum), ("mean", _mean), ("broadcast_to", _broadcast_to),
                   ("reshape", _reshape), ("permute_dims", _permute_dims), ("astype", _astype), ("max", _max),
                   ("min", _min), ("matmul", _matmul)):
    setattr(xp, _name, _fn)
