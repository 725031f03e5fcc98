"""Activation functions: ``sigmoid``, ``relu``, ``gelu``, ``silu``, ``softplus``, ``selu``, ``celu`` (also at
``ember.*``), and ``leaky_relu``, ``elu``, ``hardtanh``, ``relu6``, ``mish``, ``hardsigmoid``, ``hardswish``,
``logsigmoid``, ``softsign``, ``tanhshrink``, ``threshold``, ``hardshrink``, ``softshrink``, ``glu``, ``prelu``
(which PyTorch offers only in ``torch.nn.functional``; ``ember.nn.functional`` exposes them all).

Backward formulas are written with ember ops, so second derivatives work
(``relu``'s, the one on every training step, runs on the arrays when no graph
is being built).

>>> import ember
>>> ember.relu(ember.tensor([-1.0, 2.0]))
tensor([0., 2.])
"""
from __future__ import annotations

import math

from .. import _dtype as dt
from ..autograd.function import Op
from ..autograd.grad_mode import STATE
from ._common import Tensor, tensor_method
from .inplace import apply_inplace
from .pointwise import erf_array, float_input, not_implemented_for
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
    name_ = "relu"
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a):
        return xp.maximum(0, a)  # on a tie the second argument: relu(-0.0) is -0.0, as in PyTorch

    @staticmethod
    def backward(ctx, g):
        out = ctx.saved_output  # >= 0 or NaN: the gradient passes where it is not 0 (NaN too, as in PyTorch)
        if STATE.enabled:  # create_graph: ember ops, differentiable again
            return g * (out != 0)
        xp, ga = g._device.backend.xp, g._data
        return Tensor._make(ga * xp.astype(out._data != 0, ga.dtype), g._device)


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
        return Gelu.apply(input)
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
    return Silu.apply(input)


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


def _float_only(name, input, kernel=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_floating_point:
        raise not_implemented_for(kernel or name, input._dtype)


# -- piecewise linear ---------------------------------------------------------------------------------------------
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
    _float_only("leaky_relu", input, "leaky_relu_cpu")
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
    _float_only("hardsigmoid", input, "hardsigmoid_cpu")
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
    _float_only("hardswish", input, "hardswish_cpu")
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
    _float_only("hardshrink", input, "hardshrink_cpu")
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
    _float_only("softshrink", input, "softshrink_cpu")
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
    _float_only("prelu", input)
    n = weight.numel()
    if n != 1:
        channels = input.shape[1] if input.ndim >= 2 else (input.shape[0] if input.ndim == 1 else 1)
        if n != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n} "
                               f"and channel size = {channels}.")
        if input.ndim >= 2:
            weight = weight.reshape((n,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, input * weight)


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
    _float_only("elu", input, "elu_cpu")
    return Elu.apply(input, alpha=float(alpha))


def selu(input):
    """Scaled ELU with the constants that keep activations at zero mean and unit variance.

    >>> import ember
    >>> ember.selu(ember.tensor([0.0, 1.0]))
    tensor([0.0000, 1.0507])
    """
    _float_only("selu", input, "elu_cpu")
    return Selu.apply(input, alpha=_SELU_ALPHA, scale=_SELU_SCALE)


def celu(input, alpha=1.0):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    >>> import ember
    >>> ember.celu(ember.tensor([-100.0, 2.0]), alpha=2.0)
    tensor([-2.,  2.])
    """
    _float_only("celu", input, "elu_cpu")
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
    _float_only("mish", input, "mish_cpu")
    return Mish.apply(input)


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
    _float_only("log_sigmoid", input, "log_sigmoid_cpu")
    return LogSigmoid.apply(input)


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
