"""Activation functions: ``sigmoid``, ``relu``, ``gelu``, ``silu``, ``softplus``, ``selu``, ``celu`` (also at
``ember.*``), and ``leaky_relu``, ``elu``, ``hardtanh``, ``relu6``, ``mish``, ``hardsigmoid``, ``hardswish``,
``logsigmoid``, ``softsign``, ``tanhshrink``, ``threshold``, ``hardshrink``, ``softshrink``, ``glu``, ``prelu``
(which PyTorch offers only in ``torch.nn.functional``; ``ember.nn.functional`` exposes them all). The
piecewise-linear ones live in :mod:`ember.ops.activation_piecewise` and are re-exported here.

Backward formulas are written with ember ops, so second derivatives work
(``relu``'s, the one on every training step, runs on the arrays when no graph
is being built).

>>> import ember
>>> ember.relu(ember.tensor([-1.0, 2.0]))
tensor([0., 2.])
"""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from ..autograd.function import Op
from ..backends.cpu_kernels.activation import relu_backward_arrays
from ._common import tensor_method
from .activation_piecewise import (  # noqa: F401
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    prelu,
    relu6,
    softshrink,
    threshold,
    threshold_,
)
from .inplace import apply_inplace
from .pointwise import erf_array, float_input, float_only, not_implemented_for
from .shape import where

__all__ = ["sigmoid", "logit", "relu", "relu_", "gelu", "silu", "softplus", "selu", "selu_", "celu", "celu_",
           "threshold", "threshold_", "hardshrink", "prelu"]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_SCALE = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715


class Sigmoid(Op):
    name_ = "sigmoid"
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a):
        # exp(-a) overflows to inf for very negative a, giving exactly 0 (the warning is silenced); a `where`
        # over two stable branches would be ~10x slower on NumPy
        return 1 / (1 + xp.exp(-a))

    @staticmethod
    def backward(ctx, g):
        return _sigmoid_slope(g, ctx.saved_output)

    @staticmethod
    def backward_arrays(ctx, xp, g):
        return _sigmoid_slope(g, ctx.saved_output._data)


def _sigmoid_slope(g, out):
    """``g * sigmoid'`` from sigmoid's output, on tensors or on arrays alike."""
    return g * out * (1 - out)


@tensor_method()
def sigmoid(input):
    """The logistic function ``1 / (1 + exp(-input))``, stable for large ``|input|``.

    >>> import ember
    >>> ember.sigmoid(ember.tensor([0.0])).tolist()
    [0.5]
    """
    return Sigmoid.apply1(float_input(input))


class Logit(Op):
    name_ = "logit"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, eps=None):
        ctx.eps = eps
        if eps is not None:
            a = xp.clip(a, eps, 1.0 - eps)
        return xp.log(a / (1 - a))

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        slope = g / (x * (1 - x))
        if ctx.eps is None:  # NaN outside [0, 1], as PyTorch
            return where((x < 0) | (x > 1), math.nan, slope)
        return where((x < ctx.eps) | (x > 1 - ctx.eps), 0.0, slope)  # 0 where the input was clamped


@tensor_method()
def logit(input, eps=None):
    """``log(p / (1 - p))``, the inverse of :func:`sigmoid`; with ``eps``, ``p`` is clamped to ``[eps, 1 - eps]``.

    >>> import ember
    >>> ember.logit(ember.tensor([0.5, 0.0]), eps=1e-6)
    tensor([  0.0000, -13.8155])
    """
    return Logit.apply(float_input(input), eps=None if eps is None else float(eps))


class Relu(Op):
    """``max(a, 0)``; the CPU backend's kernel (:mod:`ember.backends.cpu_kernels.activation`) runs a compiled pass
    where a plugin gives one."""

    name_ = "relu"
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a):
        return xp.maximum(0, a)  # on a tie the second argument: relu(-0.0) is -0.0, as in PyTorch

    @staticmethod
    def backward(ctx, g):
        out = ctx.saved_output  # >= 0 or NaN: the gradient passes where it is not 0 (NaN too, as in PyTorch)
        return g * (out != 0)

    @staticmethod
    def backward_arrays(ctx, xp, g):
        out = ctx.saved_output._data
        if isinstance(g, np.ndarray):
            return relu_backward_arrays(g, out)  # the CPU backend's passes
        return g * xp.astype(out != 0, g.dtype)


@tensor_method()
def relu(input):
    """``max(input, 0)``; integers stay integers (bool is an error, as in PyTorch).

    >>> import ember
    >>> ember.relu(ember.tensor([-1, 2]))
    tensor([0, 2])
    """
    if input._dtype is dt.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return Relu.apply1(input)


@tensor_method()
def relu_(input):
    """In-place :func:`relu`.

    >>> import ember
    >>> x = ember.tensor([-1.0, 2.0])
    >>> _ = ember.relu_(x)
    >>> x
    tensor([0., 2.])
    """
    if input._dtype is dt.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return apply_inplace(input, Relu.apply)


class Gelu(Op):
    name_ = "gelu"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, approximate="none"):
        ctx.approximate = approximate
        if approximate == "tanh":
            return 0.5 * a * (1 + xp.tanh(_TANH_SCALE * (a + _TANH_CUBIC * a * a * a)))
        return 0.5 * a * (1 + erf_array(xp, a * _SQRT_HALF, tiny_exact=False))

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
    if not input._dtype.is_floating_point:
        raise not_implemented_for("gelu", input._dtype)
    if approximate == "none":
        return Gelu.apply1(input)
    return Gelu.apply(input, approximate=approximate)


class Silu(Op):
    name_ = "silu"
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
    if not input._dtype.is_floating_point:
        raise not_implemented_for("silu", input._dtype)
    return Silu.apply1(input)


class Softplus(Op):
    name_ = "softplus"
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
    if not input._dtype.is_floating_point:
        raise not_implemented_for("softplus", input._dtype)
    return Softplus.apply(input, beta=float(beta), threshold=float(threshold))


# -- exponential ---------------------------------------------------------------------------------------------------
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


class Elu(Op):
    """``scale * x`` for ``x > 0``, else ``scale * alpha * (exp(input_scale * x) - 1)`` (ELU, SELU and CELU)."""

    name_ = "elu"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, alpha=1.0, scale=1.0, input_scale=1.0):
        ctx.params = (alpha, scale, input_scale)
        negative = xp.expm1(xp.minimum(0.0, a) * input_scale) * (alpha * scale)  # keeps -0.0, as PyTorch
        return xp.where(a > 0, a * scale, negative)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        alpha, scale, input_scale = ctx.params
        # clamp: exp of the (unused) positive side would overflow and give 0 * inf in second derivatives
        negative = g * (alpha * scale * input_scale) * (a.clamp(max=0.0) * input_scale).exp()
        return where(a > 0, g * scale, negative)


class Selu(Elu):
    name_ = "selu"
    backward_name = "EluBackward0"  # PyTorch records SELU as ELU with its constants


class Celu(Elu):
    name_ = "celu"
    pass


def elu(input, alpha=1.0):
    """``input`` where positive, else ``alpha * (exp(input) - 1)``.

    >>> import ember
    >>> from ember.ops.activation import elu
    >>> elu(ember.tensor([-100.0, 2.0]))
    tensor([-1.,  2.])
    """
    float_only("elu", input, "elu_cpu")
    return Elu.apply(input, alpha=float(alpha))


def selu(input):
    """Scaled ELU with the constants that keep activations at zero mean and unit variance.

    >>> import ember
    >>> ember.selu(ember.tensor([0.0, 1.0]))
    tensor([0.0000, 1.0507])
    """
    float_only("selu", input, "elu_cpu")
    return Selu.apply(input, alpha=_SELU_ALPHA, scale=_SELU_SCALE)


def celu(input, alpha=1.0):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    >>> import ember
    >>> ember.celu(ember.tensor([-100.0, 2.0]), alpha=2.0)
    tensor([-2.,  2.])
    """
    float_only("celu", input, "elu_cpu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return Celu.apply(input, alpha=float(alpha), input_scale=1.0 / alpha)


def selu_(input):
    """In-place :func:`selu`."""
    return apply_inplace(input, selu, saves_self=True)


def celu_(input, alpha=1.0):
    """In-place :func:`celu`."""
    return apply_inplace(input, lambda cur: celu(cur, alpha), saves_self=True)


# -- smooth ----------------------------------------------------------------------------------------------------------
def _softplus_array(xp, a):
    """``log(1 + exp(a))`` without overflow."""
    return xp.maximum(a, 0.0) + xp.log1p(xp.exp(-xp.abs(a)))


class Mish(Op):
    name_ = "mish"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a):
        return a * xp.tanh(_softplus_array(xp, a))

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        t = softplus(a).tanh()
        return g * (t + a * (1 - t * t) * a.sigmoid())


def mish(input):
    """``input * tanh(softplus(input))``.

    >>> import ember
    >>> from ember.ops.activation import mish
    >>> mish(ember.tensor([0.0, 50.0]))
    tensor([ 0., 50.])
    """
    float_only("mish", input, "mish_cpu")
    return Mish.apply1(input)


class LogSigmoid(Op):
    name_ = "logsigmoid"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a):
        return xp.minimum(a, 0.0) - xp.log1p(xp.exp(-xp.abs(a)))

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * (-a).sigmoid()


def logsigmoid(input):
    """``log(sigmoid(input))``, without underflow for very negative inputs.

    >>> import ember
    >>> from ember.ops.activation import logsigmoid
    >>> logsigmoid(ember.tensor([-200.0, 0.0]))
    tensor([-200.0000,   -0.6931])
    """
    float_only("log_sigmoid", input, "log_sigmoid_cpu")
    return LogSigmoid.apply1(input)


def softsign(input):
    """``input / (1 + |input|)`` (composed of ember ops, as PyTorch does).

    >>> import ember
    >>> from ember.ops.activation import softsign
    >>> softsign(ember.tensor([-3.0, 1.0]))
    tensor([-0.7500,  0.5000])
    """
    return input / (input.abs() + 1)


def tanhshrink(input):
    """``input - tanh(input)`` (composed of ember ops, as PyTorch does).

    >>> import ember
    >>> from ember.ops.activation import tanhshrink
    >>> tanhshrink(ember.tensor([0.0]))
    tensor([0.])
    """
    return input - input.tanh()


def glu(input, dim=-1):
    """Gated linear unit: split ``input`` in two halves ``a, b`` along ``dim`` and return ``a * sigmoid(b)``.

    >>> import ember
    >>> from ember.ops.activation import glu
    >>> glu(ember.tensor([[3.0, 0.0]]))
    tensor([[1.5000]])
    """
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.ndim} is size {size}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()
