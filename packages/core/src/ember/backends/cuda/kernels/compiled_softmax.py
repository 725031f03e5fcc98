"""``softmax`` and ``log_softmax`` on CuPy with the shift fused into one ``ElementwiseKernel``.

The ops' forwards shift by the maximum with a guard for an all ``-inf``
slice (compare, ``zeros_like``, ``where``, subtract, then ``exp``: five
passes over the input); here that is one kernel, so ``softmax`` is the
maximum, the fused shift-and-exp, the sum and the division, with the same
arithmetic in the same order as the op (each step rounded to the array's
dtype), hence the same results. CuPy-only: other arrays, 0-d ones and
empty slices go through the ops' forwards.
"""
from __future__ import annotations

from ....ops.softmax import LogSoftmax, Softmax
from ._arrays import real_cupy
from ._compiled import ACC_PREAMBLE, elementwise, floating, launch

# the op's shift: a slice whose maximum is -inf is shifted by 0 (its -inf stay -inf, or give NaN)
_SHIFT = "T shifted = x - ((m < T(0) && isinf((ember_acc<T>::type)m)) ? T(0) : m);"
_SHIFT_EXP = _SHIFT + " y = (T)exp((ember_acc<T>::type)shifted);"
_SHIFT_ONLY = _SHIFT + " y = shifted;"


def _usable(a, dim) -> bool:
    return real_cupy(a) is not None and floating(a) and a.ndim > 0 and a.shape[dim] > 0


def _shift(name, code, a, dim):
    cupy = real_cupy(a)
    m = cupy.max(a, axis=dim, keepdims=True)
    return launch(elementwise("T x, T m", "T y", code, name, ACC_PREAMBLE), name, a, m)


def softmax(ctx, xp, a, dim=0):
    """The ``softmax`` op's forward."""
    e = _shift("ember_shift_exp", _SHIFT_EXP, a, dim) if _usable(a, dim) else None
    if e is None:
        return Softmax.forward(ctx, xp, a, dim=dim)
    ctx.dim = dim
    e /= real_cupy(a).sum(e, axis=dim, keepdims=True)
    return e


def log_softmax(ctx, xp, a, dim=0):
    """The ``logsoftmax`` op's forward."""
    z = _shift("ember_shift", _SHIFT_ONLY, a, dim) if _usable(a, dim) else None
    if z is None:
        return LogSoftmax.forward(ctx, xp, a, dim=dim)
    ctx.dim = dim
    cupy = real_cupy(a)
    z -= cupy.log(cupy.sum(cupy.exp(z), axis=dim, keepdims=True))
    return z


KERNELS = {"softmax": softmax, "logsoftmax": log_softmax}
