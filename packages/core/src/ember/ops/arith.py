"""Binary arithmetic: ``add``, ``sub``, ``mul``, ``div``, ``pow`` and their operators.

Broadcasting follows NumPy; the backward of each reduces the gradient back to
each input's shape with :func:`~ember.ops._common.sum_to`.

>>> import ember
>>> ember.tensor([1, 2]) + 0.5
tensor([1.5000, 2.5000])
"""
from __future__ import annotations

from .. import _dtype as dt
from .._overflow import check_scalar, wrap_unsigned
from ..autograd.function import Op
from ._common import Tensor, promote, sum_to, tensor_method

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide",
           "remainder", "fmod", "pow", "neg", "negative", "rsub"]


class Add(Op):
    """``a + alpha * b``; its backward reduces the gradient to each input's shape."""

    name_ = "add"
    array_function = "add"
    alpha = 1
    sign = 1
    wants_shapes = True

    @staticmethod
    def forward(ctx, xp, a, b, alpha=1):
        if alpha != 1:
            ctx.alpha = alpha
            b = b * alpha
        return xp.add(a, b)

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.in_shapes
        need = ctx.needs_input_grad
        scale = ctx.sign * ctx.alpha
        ga = sum_to(g, sa) if need[0] else None
        gb = sum_to(g if scale == 1 else -g if scale == -1 else g * scale, sb) if need[1] else None
        return ga, gb


class Sub(Add):
    """``a - alpha * b``."""

    name_ = "sub"
    array_function = "subtract"
    sign = -1

    @staticmethod
    def forward(ctx, xp, a, b, alpha=1):
        if alpha != 1:
            ctx.alpha = alpha
            b = b * alpha
        return xp.subtract(a, b)


class RsubScalar(Sub):
    """``number - tensor``."""

    name_ = "rsub_scalar"
    backward_name = "RsubBackward1"


class Mul(Op):
    """``scale * a * b`` (``scale`` a Python number, 1 for the ``*`` operator)."""

    name_ = "mul"
    array_function = "multiply"
    saves_inputs = True
    scale = 1

    @staticmethod
    def forward(ctx, xp, a, b, scale=1):
        out = xp.multiply(a, b)
        if scale != 1:
            ctx.scale = scale
            out *= scale
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        scale = ctx.scale
        if a is b:  # x * x: one product 2*g*x instead of two and their sum
            return Mul.apply2(g, a, {"scale": 2 * scale}), None
        attrs = None if scale == 1 else {"scale": scale}
        ga = sum_to(Mul.apply2(g, b, attrs), a.shape) if need[0] else None
        gb = sum_to(Mul.apply2(g, a, attrs), b.shape) if need[1] else None
        return ga, gb

    @staticmethod
    def backward_arrays(ctx, xp, g):
        a, b = ctx.saved_tensors
        scale = ctx.scale
        if a is b:
            ga = xp.multiply(g, a._data)
            ga *= 2 * scale
            return ga, None
        need = ctx.needs_input_grad
        x = a._data if isinstance(a, Tensor) else a  # either may be a Python number
        y = b._data if isinstance(b, Tensor) else b
        return (_scaled_product(xp, g, y, scale, x) if need[0] else None,
                _scaled_product(xp, g, x, scale, y) if need[1] else None)


def _scaled_product(xp, g, other, scale, like):
    """``scale * g * other`` summed down to ``like``'s shape: one input's gradient in ``Mul.backward_arrays``."""
    grad = xp.multiply(g, other)
    if scale != 1:
        grad *= scale
    return sum_to(grad, like.shape, xp)


class Div(Op):
    name_ = "div"
    array_function = "divide"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.divide(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = sum_to(g / b, a.shape) if need[0] else None
        gb = sum_to(-g * a / (b * b), b.shape) if need[1] else None
        return ga, gb


class Pow(Op):
    name_ = "pow"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.pow(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = gb = None
        if need[0]:
            ga = sum_to(g * b * a ** (b - 1), a.shape)
        if need[1]:
            out = ctx.saved_output
            base = a.log() if isinstance(a, Tensor) else _log_scalar(a)
            gb = sum_to(g * out * base, b.shape)
        return ga, gb


class PowTensor(Pow):
    """``tensor ** tensor`` (PyTorch names its node differently)."""

    name_ = "pow_tensor"
    backward_name = "PowBackward1"


class PowScalarBase(Pow):
    """``number ** tensor``."""

    name_ = "pow_scalar_base"
    backward_name = "PowBackward2"


def _log_scalar(a):
    import math
    return math.log(a) if a > 0 else (float("-inf") if a == 0 else float("nan"))


class Neg(Op):
    name_ = "neg"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.negative(a)

    @staticmethod
    def backward(ctx, g):
        return -g


_INTEGRAL: dict = {}  # array namespace -> its integer and bool dtypes


def _is_integral(xp, array) -> bool:
    kinds = _INTEGRAL.get(xp)
    if kinds is None:
        names = ("bool", "uint8", "int8", "int16", "int32", "int64")
        kinds = _INTEGRAL[xp] = frozenset(xp.empty((0,), dtype=getattr(xp, n)).dtype for n in names)
    return array.dtype in kinds


def _integral(xp, a, b):
    """Whether ``a op b`` is an integer division: PyTorch's "ZeroDivisionError" for a zero divisor, if so.

    (A float division by zero gives inf or nan, as in PyTorch; ember's warning filter keeps NumPy quiet.)"""
    if type(b) is int:
        if type(a) is int or not _is_integral(xp, a):
            return type(a) is int
        if b == 0:
            raise RuntimeError("ZeroDivisionError")
        return True
    if type(b) is float or not _is_integral(xp, b):
        return False
    if not xp.all(b):
        raise RuntimeError("ZeroDivisionError")
    return True


class FloorDivide(Op):
    name_ = "floordivide"

    @staticmethod
    def forward(ctx, xp, a, b):
        _integral(xp, a, b)
        return xp.floor_divide(a, b)


class TruncDivide(Op):
    """Integer division rounded toward zero, exact for all of int64 (no detour through floats)."""

    name_ = "truncdivide"

    @staticmethod
    def forward(ctx, xp, a, b):
        _integral(xp, a, b)
        q = xp.floor_divide(a, b)
        inexact = (a - q * b != 0) & ((a < 0) != (b < 0))
        return xp.where(inexact, q + 1, q)


class Remainder(Op):
    """``a - floor(a / b) * b``: d/da is 1 almost everywhere, d/db is ``-floor(a / b)``."""

    name_ = "remainder"
    backward_name = "RemainderBackward1"
    saves_inputs = True
    rounding = "floor"

    @staticmethod
    def forward(ctx, xp, a, b):
        _integral(xp, a, b)
        return xp.remainder(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = sum_to(g, a.shape) if need[0] else None
        gb = sum_to(-g * getattr(a / b, ctx.rounding)(), b.shape) if need[1] else None
        return ga, gb


class Fmod(Remainder):
    """``a - trunc(a / b) * b`` (the sign of ``a``)."""

    name_ = "fmod"
    backward_name = "FmodBackward1"
    rounding = "trunc"

    @staticmethod
    def forward(ctx, xp, a, b):
        _integral(xp, a, b)
        if hasattr(xp, "fmod"):
            return xp.fmod(a, b)
        r = xp.remainder(a, b)  # floor modulus (sign of b); fmod has the sign of a
        return xp.where((r != 0) & ((r < 0) != (a < 0)), r - b, r)


class RemainderScalar(Remainder):
    """``remainder`` by a number (PyTorch names it differently)."""

    name_ = "remainder_scalar"
    backward_name = "RemainderBackward0"


class FmodScalar(Fmod):
    name_ = "fmod_scalar"
    backward_name = "FmodBackward0"


@tensor_method()
def add(input, other, *, alpha=1):
    """``input + alpha * other``, broadcasting, with PyTorch's type promotion."""
    if alpha == 1 and other.__class__ is Tensor and input.__class__ is Tensor and input._dtype is other._dtype:
        return Add.apply2(input, other)  # the common case, without promotion
    a, b = promote(input, other)
    if alpha != 1:
        return Add.apply(a, b, alpha=_checked_alpha(alpha, a, b))
    return Add.apply2(a, b) if isinstance(a, Tensor) else Add.apply(a, b)


#: bound once: binding the classmethod at each call took 3% of ``a + b``'s time
_add_tensors, _mul_tensors = Add.apply2, Mul.apply2


@tensor_method("__add__")
def _add_operator(self, other):
    """``self + other``, broadcasting, with PyTorch's type promotion (:func:`add` with ``alpha=1``)."""
    if other.__class__ is Tensor and self._dtype is other._dtype:
        return _add_tensors(self, other)  # the common case, without promotion
    return add(self, other)


def _checked_alpha(alpha, a, b):
    """``alpha`` checked against the result dtype, a negative one wrapped for uint8 (as PyTorch)."""
    dtype = (a if isinstance(a, Tensor) else b)._dtype
    check_scalar(alpha, dtype)
    return wrap_unsigned(alpha, dtype)


@tensor_method("__radd__")
def _radd(self, other):
    return add(other, self)


@tensor_method("sub", "__sub__")
def sub(input, other, *, alpha=1):
    """``input - alpha * other``."""
    if _is_bool(input) and _is_bool(other):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    a, b = promote(input, other)
    op = Sub if isinstance(a, Tensor) else RsubScalar  # number - tensor has PyTorch's other name
    if alpha != 1:
        return op.apply(a, b, alpha=_checked_alpha(alpha, a, b))
    return Sub.apply2(a, b) if op is Sub else op.apply(a, b)


subtract = sub
Tensor.subtract = sub


@tensor_method("__rsub__")
def rsub(input, other, *, alpha=1):
    """``other - alpha * input``."""
    return sub(other, input * alpha if alpha != 1 else input)


@tensor_method("mul", "multiply", "__mul__", "__rmul__")
def mul(input, other):
    """Elementwise product, broadcasting."""
    if other.__class__ is Tensor and input.__class__ is Tensor and input._dtype is other._dtype:
        return _mul_tensors(input, other)  # the common case, without promotion
    a, b = promote(input, other)
    return Mul.apply2(a, b) if isinstance(a, Tensor) else Mul.apply(a, b)


multiply = mul


@tensor_method("div", "divide", "true_divide", "__truediv__")
def div(input, other, *, rounding_mode=None):
    """Division; integers divide to the default float dtype unless ``rounding_mode`` is 'trunc' or 'floor'."""
    if rounding_mode is None:
        a, b = promote(input, other)
        t = a if isinstance(a, Tensor) else b
        if not t._dtype.is_floating_point:
            f = dt.get_default_dtype()
            a = a.to(f) if isinstance(a, Tensor) else float(a)
            b = b.to(f) if isinstance(b, Tensor) else float(b)
        return Div.apply2(a, b) if isinstance(a, Tensor) else Div.apply(a, b)
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        a, b = promote(input, other)
        if not (a if isinstance(a, Tensor) else b)._dtype.is_floating_point:
            return TruncDivide.apply(a, b)
        q = div(input, other)
        t = input if isinstance(input, Tensor) else other
        q = q.trunc()
        return q if t._dtype.is_floating_point or isinstance(other, float) else q.to(dt.result_type(input, other))
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found {rounding_mode!r}")


divide = true_divide = div


@tensor_method("__rtruediv__")
def _rtruediv(self, other):
    return div(other, self)


@tensor_method("floor_divide", "__floordiv__")
def floor_divide(input, other):
    """Division rounded toward minus infinity."""
    a, b = promote(input, other)
    return FloorDivide.apply(a, b)


@tensor_method("__rfloordiv__")
def _rfloordiv(self, other):
    return floor_divide(other, self)


@tensor_method("remainder", "__mod__")
def remainder(input, other):
    """Python-style modulus (the result has the sign of ``other``)."""
    a, b = promote(input, other)
    return (Remainder if isinstance(b, Tensor) else RemainderScalar).apply(a, b)


@tensor_method("__rmod__")
def _rmod(self, other):
    return remainder(other, self)


@tensor_method("fmod")
def fmod(input, other):
    """C-style modulus (the result has the sign of ``input``)."""
    a, b = promote(input, other)
    return (Fmod if isinstance(b, Tensor) else FmodScalar).apply(a, b)


@tensor_method("pow", "__pow__")
def pow(input, exponent):  # noqa: A001 - PyTorch's name
    """``input ** exponent``; either may be a Python number."""
    a, b = promote(input, exponent)
    if isinstance(a, Tensor) and isinstance(b, int) and exponent < 0 and not a._dtype.is_floating_point:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if not isinstance(b, Tensor):
        check_scalar(exponent, a._dtype)
        return Pow.apply(a, b)
    return (PowTensor if isinstance(a, Tensor) else PowScalarBase).apply(a, b)


@tensor_method("__rpow__")
def _rpow(self, other):
    return pow(other, self)


@tensor_method("neg", "negative", "__neg__")
def neg(input):
    """``-input``."""
    if input._dtype is dt.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return Neg.apply1(input)


negative = neg


@tensor_method("__pos__")
def _pos(self):
    return self


def _is_bool(x):
    return isinstance(x, Tensor) and x._dtype is dt.bool_ or isinstance(x, bool)
