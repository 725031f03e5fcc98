"""``softmax`` and ``log_softmax`` along one dimension, numerically stable for large inputs.

The maximum is subtracted before exponentiating, so ``softmax([1000, 1000])``
is ``[0.5, 0.5]``, not NaN.

>>> import ember
>>> ember.softmax(ember.tensor([1000.0, 1000.0]), dim=0)
tensor([0.5000, 0.5000])
"""
from __future__ import annotations

from ..autograd.function import Op
from ._common import Tensor, tensor_method, wrap_dim
from .pointwise import not_implemented_for

__all__ = ["softmax", "log_softmax"]


def _shifted(xp, a, axis):
    """``a - max(a)`` along ``axis``; an all -inf slice is shifted by 0 instead. As in PyTorch, a slice with +inf
    or NaN comes out all NaN, and an all -inf one NaN from 0 / 0 (softmax) or -inf - -inf (log_softmax)."""
    m = xp.max(a, axis=axis, keepdims=True)
    return a - xp.where(m == -xp.inf, xp.zeros_like(m), m)


class Softmax(Op):
    name_ = "softmax"
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, dim=0):
        ctx.dim = dim
        if a.ndim == 0:
            return xp.exp(a - a)
        if a.shape[dim] == 0:
            return xp.asarray(a, copy=True)  # nothing to normalise (NumPy's max has no identity)
        e = xp.exp(_shifted(xp, a, dim))
        return e / xp.sum(e, axis=dim, keepdims=True)

    @staticmethod
    def backward(ctx, g):
        out = ctx.saved_output
        if out.ndim == 0:
            return g * 0
        return out * (g - (g * out).sum(ctx.dim, keepdim=True))


class LogSoftmax(Op):
    name_ = "logsoftmax"
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, dim=0):
        ctx.dim = dim
        if a.ndim == 0:
            return a - a
        if a.shape[dim] == 0:
            return xp.asarray(a, copy=True)
        z = _shifted(xp, a, dim)
        return z - xp.log(xp.sum(xp.exp(z), axis=dim, keepdims=True))

    @staticmethod
    def backward(ctx, g):
        out = ctx.saved_output
        if out.ndim == 0:
            return g * 0
        return g - out.exp() * g.sum(ctx.dim, keepdim=True)


def _prepare(name, input, dim, dtype):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if dim is None:
        raise TypeError(f"{name}() missing 1 required positional argument: \"dim\" (give the dimension to "
                        "normalise over, e.g. dim=-1)")
    if dtype is not None:
        input = input.to(dtype)
    if not input._dtype.is_floating_point:
        raise not_implemented_for(name, input._dtype)
    return input, wrap_dim(dim, input._data.ndim)


@tensor_method()
def softmax(input, dim=None, dtype=None):
    """``exp(x) / exp(x).sum(dim)``; ``dtype`` casts the input first (e.g. float64 for precision).

    >>> import ember
    >>> ember.tensor([[0.0, 0.0], [0.0, 3.0]]).softmax(dim=1)[0]
    tensor([0.5000, 0.5000])
    """
    input, dim = _prepare("softmax", input, dim, dtype)
    return Softmax.apply(input, dim=dim)


@tensor_method()
def log_softmax(input, dim=None, dtype=None):
    """``log(softmax(x, dim))``, computed without forming the softmax (stable for very negative logs).

    >>> import ember
    >>> ember.log_softmax(ember.tensor([0.0, 0.0]), dim=0).exp()
    tensor([0.5000, 0.5000])
    """
    input, dim = _prepare("log_softmax", input, dim, dtype)
    return LogSoftmax.apply(input, dim=dim)
