"""Floating-point functions of two tensors: ``hypot``, ``logaddexp``, ``logaddexp2``, ``copysign``, ``xlogy``.

They broadcast like the arithmetic operators; integer and bool inputs compute in the default float dtype,
as in PyTorch. Each backward reduces its gradients to the inputs' shapes with ``sum_to``.

>>> import ember
>>> ember.hypot(ember.tensor([3.0]), ember.tensor([4.0]))
tensor([5.])
>>> ember.logaddexp(ember.tensor([0.0]), ember.tensor([0.0]))
tensor([0.6931])
"""
from __future__ import annotations

import math
import numbers

from .. import _dtype as dt
from ..autograd.function import Op
from ._common import Tensor, promote, sum_to, tensor_method
from .creation import zeros_like
from .pointwise import log
from .shape import where

__all__ = ["hypot", "logaddexp", "logaddexp2", "copysign", "xlogy"]

_LN2 = math.log(2.0)


def _floats(name, input, other, scalar_other=False):
    """``input`` and ``other`` promoted together, in the default float dtype if both are integers or bools."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not isinstance(other, Tensor) and not (scalar_other and isinstance(other, numbers.Real)):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor"
                        f"{' or Number' if scalar_other else ''}, not {type(other).__name__}")
    a, b = promote(input, other)
    if not a._dtype.is_floating_point:
        a = a.to(dt.get_default_dtype())
        b = b.to(a._dtype) if isinstance(b, Tensor) else float(b)
    return a, b


def _reduced(grad, like, need):
    """``grad`` summed to ``like``'s shape when ``like`` is a tensor whose gradient is needed."""
    return sum_to(grad, like.shape) if need and isinstance(like, Tensor) else None


def _array(xp, value, like):
    """A Python number as a 0-d array of ``like``'s dtype (arrays pass through)."""
    return value if hasattr(value, "dtype") else xp.asarray(value, dtype=like.dtype)


class Hypot(Op):
    name_ = "hypot"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.hypot(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        out = ctx.saved_output
        need = ctx.needs_input_grad
        return _reduced(g * a / out, a, need[0]), _reduced(g * b / out, b, need[1])


@tensor_method()
def hypot(input, other):
    """``sqrt(input ** 2 + other ** 2)``, without overflow for large values.

    >>> import ember
    >>> ember.hypot(ember.tensor([3.0, 1e30]), ember.tensor([4.0, 1e30]))
    tensor([5.0000e+00, 1.4142e+30])
    """
    return Hypot.apply(*_floats("hypot", input, other))


class Logaddexp(Op):
    """``log_b(b ** x + b ** y)`` for the base ``b = exp(scale)`` (e for ``logaddexp``)."""

    name_ = "logaddexp"
    saves_inputs = True
    scale = 1.0

    @staticmethod
    def forward(ctx, xp, a, b):
        s = type(ctx).scale
        return xp.logaddexp(a, b) if s == 1.0 else xp.logaddexp(a * s, b * s) / s

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        s = type(ctx).scale
        need = ctx.needs_input_grad  # 1 / (1 + b ** (y - x)): 1 for x = inf and a finite y
        return (_reduced(g / (1 + ((b - a) * s).exp()), a, need[0]),
                _reduced(g / (1 + ((a - b) * s).exp()), b, need[1]))


class Logaddexp2(Logaddexp):
    name_ = "logaddexp2"
    scale = _LN2


@tensor_method()
def logaddexp(input, other):
    """``log(exp(input) + exp(other))``, computed without overflow.

    >>> import ember
    >>> ember.logaddexp(ember.tensor([1000.0]), ember.tensor([1000.0]))
    tensor([1000.6932])
    """
    return Logaddexp.apply(*_floats("logaddexp", input, other))


@tensor_method()
def logaddexp2(input, other):
    """``log2(2 ** input + 2 ** other)``, computed without overflow.

    >>> import ember
    >>> ember.logaddexp2(ember.tensor([3.0]), ember.tensor([3.0]))
    tensor([4.])
    """
    return Logaddexp2.apply(*_floats("logaddexp2", input, other))


class Copysign(Op):
    name_ = "copysign"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.copysign(a, _array(xp, b, a))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        out = ctx.saved_output
        need = ctx.needs_input_grad
        flip = where(a == 0, 0.0, out / a)  # +1 or -1; 0 at a zero input, as PyTorch
        return _reduced(g * flip, a, need[0]), (zeros_like(b) if need[1] else None)


@tensor_method()
def copysign(input, other):
    """``input``'s magnitude with ``other``'s sign (``other`` may be a number); the sign of -0.0 counts.

    >>> import ember
    >>> ember.copysign(ember.tensor([1.0, -2.0]), ember.tensor([-0.0, 3.0]))
    tensor([-1.,  2.])
    """
    return Copysign.apply(*_floats("copysign", input, other, scalar_other=True))


class Xlogy(Op):
    name_ = "xlogy"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, b):
        b = _array(xp, b, a)
        product = a * xp.log(b)
        # 0 * log(b) is 0 for any b but NaN, even 0 or a negative b
        return xp.where((a == 0) & ~xp.isnan(b), xp.zeros_like(product), product)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = g * (log(b) if isinstance(b, Tensor) else math.log(b)) if need[0] else None
        return _reduced(ga, a, need[0]), _reduced(g * a / b, b, need[1])


@tensor_method()
def xlogy(input, other):
    """``input * log(other)``, and 0 where ``input`` is 0 (unless ``other`` is NaN); ``other`` may be a number.

    >>> import ember
    >>> ember.xlogy(ember.tensor([0.0, 2.0]), ember.tensor([0.0, 1.0]))
    tensor([0., 0.])
    """
    return Xlogy.apply(*_floats("xlogy", input, other, scalar_other=True))
