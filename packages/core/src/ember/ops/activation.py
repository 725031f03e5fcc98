"""Activation functions: ``sigmoid``, ``relu``, ``gelu``, ``silu``, ``softplus``.

Backward formulas are written with ember ops, so second derivatives work.

>>> import ember
>>> ember.relu(ember.tensor([-1.0, 2.0]))
tensor([0., 2.])
"""
from __future__ import annotations

import math

from .. import _dtype as dt
from ..autograd.function import Op
from ._common import tensor_method
from .pointwise import erf_array, float_input, not_implemented_for

__all__ = ["sigmoid", "relu", "gelu", "silu", "softplus"]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_SCALE = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715


class Sigmoid(Op):
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a):
        # exp of a non-positive number only, so neither branch overflows
        e = xp.exp(-xp.abs(a))
        return xp.where(a >= 0, 1 / (1 + e), e / (1 + e))

    @staticmethod
    def backward(ctx, g):
        out = ctx.saved_output
        return g * out * (1 - out)


@tensor_method()
def sigmoid(input):
    """The logistic function ``1 / (1 + exp(-input))``, stable for large ``|input|``.

    >>> import ember
    >>> ember.sigmoid(ember.tensor([0.0])).tolist()
    [0.5]
    """
    return Sigmoid.apply(float_input(input))


class Relu(Op):
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a):
        return xp.maximum(a, 0)

    @staticmethod
    def backward(ctx, g):
        return g * (ctx.saved_output > 0)


@tensor_method()
def relu(input):
    """``max(input, 0)``; integers stay integers (bool is an error, as in PyTorch).

    >>> import ember
    >>> ember.relu(ember.tensor([-1, 2]))
    tensor([0, 2])
    """
    if input._dtype is dt.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return Relu.apply(input)


class Gelu(Op):
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, approximate="none"):
        ctx.approximate = approximate
        if approximate == "tanh":
            return 0.5 * a * (1 + xp.tanh(_TANH_SCALE * (a + _TANH_CUBIC * a * a * a)))
        return 0.5 * a * (1 + erf_array(xp, a * _SQRT_HALF))

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        if ctx.approximate == "tanh":
            inner = _TANH_SCALE * (a + _TANH_CUBIC * a * a * a)
            t = inner.tanh()
            d_inner = _TANH_SCALE * (1 + 3 * _TANH_CUBIC * a * a)
            return g * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * d_inner)
        cdf = 0.5 * (1 + (a * _SQRT_HALF).erf())
        pdf = (a * a * -0.5).exp() * _INV_SQRT_2PI
        return g * (cdf + a * pdf)


@tensor_method()
def gelu(input, approximate="none"):
    """Gaussian error linear unit ``x * Phi(x)``; ``approximate='tanh'`` uses the tanh formula.

    >>> import ember
    >>> ember.gelu(ember.tensor([0.0, 10.0]))
    tensor([ 0., 10.])
    """
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if input._dtype.category < 2:
        raise not_implemented_for("gelu", input._dtype)
    if approximate == "none":
        return Gelu.apply(input)
    return Gelu.apply(input, approximate=approximate)


class Silu(Op):
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a):
        e = xp.exp(-xp.abs(a))
        return a * xp.where(a >= 0, 1 / (1 + e), e / (1 + e))

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        s = a.sigmoid()
        return g * s * (1 + a * (1 - s))


@tensor_method()
def silu(input):
    """``input * sigmoid(input)`` (also called swish).

    >>> import ember
    >>> ember.silu(ember.tensor([0.0]))
    tensor([0.])
    """
    if input._dtype.category < 2:
        raise not_implemented_for("silu", input._dtype)
    return Silu.apply(input)


class Softplus(Op):
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, beta=1.0, threshold=20.0):
        ctx.beta, ctx.threshold = beta, threshold
        ba = a * beta
        linear = ba > threshold
        # log1p(exp(z)) = max(z, 0) + log1p(exp(-|z|)) never overflows
        soft = (xp.maximum(ba, 0.0) + xp.log1p(xp.exp(-xp.abs(ba)))) / beta
        return xp.where(linear, a, soft)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        ba = a * ctx.beta
        s = ba.sigmoid()
        linear = ba > ctx.threshold
        return g * (s + linear * (1 - s))


@tensor_method()
def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``.

    >>> import ember
    >>> ember.softplus(ember.tensor([30.0]))
    tensor([30.])
    """
    if input._dtype.category < 2:
        raise not_implemented_for("softplus", input._dtype)
    return Softplus.apply(input, beta=float(beta), threshold=float(threshold))
