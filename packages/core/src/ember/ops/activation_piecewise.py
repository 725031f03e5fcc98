"""Piecewise-linear activations: ``leaky_relu``, ``hardtanh``, ``relu6``, ``hardsigmoid``, ``hardswish``,
``threshold``, ``hardshrink``, ``softshrink`` and ``prelu`` (``ember.ops.activation`` re-exports them all).

Each is linear between its breakpoints, so its gradient is a step function of
the input, written with ember ops (second derivatives are zero, and work).

>>> import ember
>>> from ember.ops.activation_piecewise import hardtanh
>>> hardtanh(ember.tensor([-3.0, 0.5, 3.0]))
tensor([-1.0000,  0.5000,  1.0000])
"""
from __future__ import annotations

from .. import _dtype as dt
from ..autograd.function import Op
from ._common import Tensor, tensor_method
from .inplace import apply_inplace
from .pointwise import float_only, not_implemented_for
from .shape import where

__all__ = ["leaky_relu", "hardtanh", "relu6", "hardsigmoid", "hardswish", "threshold", "threshold_", "hardshrink",
           "softshrink", "prelu"]


class LeakyRelu(Op):
    name_ = "leakyrelu"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, negative_slope=0.01):
        ctx.slope = negative_slope
        if 0 <= negative_slope <= 1:  # max(a, slope * a) picks the right side; cheaper than a select
            return xp.maximum(a, a * negative_slope)
        return xp.where(a > 0, a, a * negative_slope)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        slope = ctx.slope
        return g * ((a > 0).to(g.dtype) * (1 - slope) + slope)  # 1 where positive, else slope


def leaky_relu(input, negative_slope=0.01):
    """``input`` where positive, else ``negative_slope * input``.

    >>> import ember
    >>> from ember.ops.activation import leaky_relu
    >>> leaky_relu(ember.tensor([-2.0, 3.0]), 0.5)
    tensor([-1.,  3.])
    """
    float_only("leaky_relu", input, "leaky_relu_cpu")
    return LeakyRelu.apply(input, negative_slope=float(negative_slope))


class Hardtanh(Op):
    name_ = "hardtanh"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, min_val=-1.0, max_val=1.0):
        ctx.bounds = (min_val, max_val)
        return xp.clip(a, min_val, max_val)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        lo, hi = ctx.bounds
        return g * ((a > lo) & (a < hi))


def hardtanh(input, min_val=-1.0, max_val=1.0):
    """``input`` clipped to ``[min_val, max_val]`` (integers stay integers); the gradient is zero outside.

    >>> import ember
    >>> from ember.ops.activation import hardtanh
    >>> hardtanh(ember.tensor([-3.0, 0.5, 3.0]))
    tensor([-1.0000,  0.5000,  1.0000])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"hardtanh(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input._dtype is dt.bool_:
        raise not_implemented_for("hardtanh", input._dtype, "a numeric")
    cast = float if input._dtype.is_floating_point else int
    return Hardtanh.apply(input, min_val=cast(min_val), max_val=cast(max_val))


def relu6(input):
    """``min(max(input, 0), 6)``: :func:`hardtanh` between 0 and 6.

    >>> import ember
    >>> from ember.ops.activation import relu6
    >>> relu6(ember.tensor([-1.0, 3.0, 9.0]))
    tensor([0., 3., 6.])
    """
    return hardtanh(input, 0.0, 6.0)


class Hardsigmoid(Op):
    name_ = "hardsigmoid"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a):
        return xp.clip(a / 6 + 0.5, 0.0, 1.0)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * ((a > -3) & (a < 3)) / 6


def hardsigmoid(input):
    """``relu6(input + 3) / 6``: 0 below -3, 1 above 3, linear in between.

    >>> import ember
    >>> from ember.ops.activation import hardsigmoid
    >>> hardsigmoid(ember.tensor([-4.0, 0.0, 4.0]))
    tensor([0.0000, 0.5000, 1.0000])
    """
    float_only("hardsigmoid", input, "hardsigmoid_cpu")
    return Hardsigmoid.apply(input)


class Hardswish(Op):
    name_ = "hardswish"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a):
        return a * xp.clip(a / 6 + 0.5, 0.0, 1.0)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return where(a < -3, g * 0, where(a <= 3, g * (a / 3 + 0.5), g))


def hardswish(input):
    """``input * relu6(input + 3) / 6``.

    >>> import ember
    >>> from ember.ops.activation import hardswish
    >>> hardswish(ember.tensor([-4.0, 0.0, 4.0]))
    tensor([-0., 0., 4.])
    """
    float_only("hardswish", input, "hardswish_cpu")
    return Hardswish.apply(input)


class Threshold(Op):
    name_ = "threshold"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, threshold=0.0, value=0.0):
        ctx.threshold = threshold
        return xp.where(a <= threshold, xp.asarray(value, dtype=a.dtype), a)  # NaN stays NaN, as in PyTorch

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * ~(a <= ctx.threshold)


def _threshold(input, threshold, value):  # noqa: A002 - PyTorch's argument name
    if not isinstance(input, Tensor):
        raise TypeError(f"threshold(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input._dtype is dt.bool_:
        raise not_implemented_for("threshold", input._dtype, "a numeric")
    cast = float if input._dtype.is_floating_point else int
    return Threshold.apply(input, threshold=cast(threshold), value=cast(value))


def threshold(input, threshold, value):  # noqa: A002 - PyTorch's argument name
    """``input`` where it is greater than ``threshold``, else ``value``.

    >>> import ember
    >>> ember.threshold(ember.tensor([0.5, 2.0]), 1.0, -1.0)
    tensor([-1.,  2.])
    """
    return _threshold(input, threshold, value)


def threshold_(input, threshold, value):  # noqa: A002 - PyTorch's argument name
    """In-place :func:`threshold`."""
    return apply_inplace(input, lambda cur: _threshold(cur, threshold, value), saves_self=True)


class Hardshrink(Op):
    name_ = "hardshrink"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, lambd=0.5):
        ctx.lambd = lambd
        return xp.where(xp.abs(a) <= lambd, xp.zeros_like(a), a)  # NaN stays NaN, as in PyTorch

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * (a.abs() > ctx.lambd)


@tensor_method()
def hardshrink(input, lambd=0.5):
    """``input`` where ``|input| > lambd``, else 0.

    >>> import ember
    >>> ember.hardshrink(ember.tensor([-1.0, 0.2, 0.7]))
    tensor([-1.0000,  0.0000,  0.7000])
    """
    float_only("hardshrink", input, "hardshrink_cpu")
    return Hardshrink.apply(input, lambd=float(lambd))


class Softshrink(Hardshrink):  # the same gradient: 1 outside [-lambd, lambd]
    name_ = "softshrink"

    @staticmethod
    def forward(ctx, xp, a, lambd=0.5):
        ctx.lambd = lambd
        return xp.where(a > lambd, a - lambd, xp.where(a < -lambd, a + lambd, a * 0))  # NaN stays NaN


def softshrink(input, lambd=0.5):
    """``input`` moved ``lambd`` toward zero, and 0 within ``[-lambd, lambd]``.

    >>> import ember
    >>> from ember.ops.activation import softshrink
    >>> softshrink(ember.tensor([-1.0, 0.2, 1.5]))
    tensor([-0.5000,  0.0000,  1.0000])
    """
    float_only("softshrink", input, "softshrink_cpu")
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return Softshrink.apply(input, lambd=float(lambd))


@tensor_method()
def prelu(input, weight):
    """:func:`leaky_relu` with a learnable slope: one for all channels, or one per channel (dim 1).

    >>> import ember
    >>> ember.prelu(ember.tensor([[-2.0, 2.0]]), ember.tensor([0.25]))
    tensor([[-0.5000,  2.0000]])
    """
    float_only("prelu", input)
    n = weight.numel()
    if n != 1:
        channels = input.shape[1] if input.ndim >= 2 else (input.shape[0] if input.ndim == 1 else 1)
        if n != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} "
                               f"and channel size = {channels}.")
        if input.ndim >= 2:
            weight = weight.reshape((n,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, input * weight)
