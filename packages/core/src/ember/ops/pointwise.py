"""Unary elementwise math: ``exp``, ``log``, ``sqrt``, trigonometry, ``erf``, rounding, ``isnan`` ...

Integer and bool inputs to the floating functions (``exp``, ``sqrt``, ``sin``,
...) are computed in the default float dtype, as in PyTorch; ``abs``,
``sign``, the rounding functions and ``square`` keep integer dtypes.

>>> import ember
>>> ember.exp(ember.tensor([0, 1])).dtype
ember.float32
>>> ember.sqrt(ember.tensor([4.0, 9.0]))
tensor([2., 3.])
"""
from __future__ import annotations

import functools
import math

from .. import _dtype as dt
from ..autograd.function import Op
from ._common import Tensor, array_op, tensor_method
from .creation import zeros_like
from .shape import where

__all__ = ["abs", "absolute", "sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1",
           "sin", "cos", "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh", "tanh",
           "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "erf", "reciprocal", "square",
           "sign", "sgn", "signbit", "deg2rad", "rad2deg", "sinc", "positive", "floor", "ceil", "round", "trunc",
           "fix", "frac", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num"]

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_RAD_PER_DEG, _DEG_PER_RAD = math.pi / 180.0, 180.0 / math.pi

#: PyTorch's scalar-type names, used in "not implemented for 'Long'" messages
SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
                "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}


def not_implemented_for(op_name: str, dtype, needs: str = "a floating point") -> NotImplementedError:
    """PyTorch's error for an op that has no kernel for ``dtype``, with what it expects."""
    return NotImplementedError(f"\"{op_name}\" not implemented for '{SCALAR_NAMES[dtype.name]}' "
                               f"({op_name} needs {needs} tensor)")


def float_input(input):
    """``input`` itself if floating, else cast to the default float dtype (PyTorch's int-to-float rule)."""
    if input._dtype.is_floating_point:
        return input
    return input.to(dt.get_default_dtype())


def float_only(name, input, kernel=None):
    """Raise unless ``input`` is a floating tensor (PyTorch's messages; ``kernel`` names the op in the second)."""
    _check_tensor(name, input)
    if not input._dtype.is_floating_point:
        raise not_implemented_for(kernel or name, input._dtype)


def _check_tensor(fn_name, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn_name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


# -- smooth functions of one float tensor -------------------------------------------------------------------------
# (public name, Op class name, forward on arrays, backward from (grad, saved), what backward saves (None: nothing),
#  example)
def _unary_op(cls_name, name, forward, grad, saves):
    def saved(ctx):
        return ctx.saved_output if saves == "output" else ctx.saved_tensors[0] if saves == "input" else None

    def backward(ctx, g):
        return grad(g, saved(ctx))

    def backward_arrays(ctx, xp, g):  # the same formula, on the saved tensor's array
        kept = saved(ctx)
        return grad(g, None if kept is None else kept._data)
    body = {"name_": name, "saves_inputs": saves == "input", "saves_output": saves == "output",
            "forward": staticmethod(forward), "backward": staticmethod(backward), "__module__": __name__}
    if name in _ARITHMETIC_GRADS:
        body["backward_arrays"] = staticmethod(backward_arrays)
    return type(cls_name, (Op,), body)


#: the functions whose backward formula below is arithmetic operators only, which the backend's arrays evaluate
#: as tensors do: a first-order backward runs it on the arrays (see ``Op.backward_arrays``)
_ARITHMETIC_GRADS = frozenset({"sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "tan",
                               "atan", "tanh", "atanh", "reciprocal", "deg2rad", "rad2deg"})


def _float_unary(name, cls_name, forward, grad, saves, doc, example, aliases=()):
    op = _unary_op(cls_name, name, forward, grad, saves)

    def fn(input):
        if input.__class__ is not Tensor:
            _check_tensor(name, input)
        return op.apply1(input if input._dtype.is_floating_point else input.to(dt.get_default_dtype()))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{doc}; integers compute in the default float dtype.\n\n>>> import ember\n{example}\n"
    fn.op = op
    for n in (name,) + aliases:
        setattr(Tensor, n, fn)
    return fn


def _sqrt_1m(x):
    return (1 - x * x).sqrt()


_FLOAT_UNARY = [
    ("sqrt", "Sqrt", lambda ctx, xp, a: xp.sqrt(a), lambda g, out: g / (2 * out), "output",
     "Square root", ">>> ember.sqrt(ember.tensor([4.0]))\ntensor([2.])"),
    ("rsqrt", "Rsqrt", lambda ctx, xp, a: 1 / xp.sqrt(a), lambda g, out: g * out * out * out * -0.5, "output",
     "Reciprocal square root ``1 / sqrt(input)``", ">>> ember.rsqrt(ember.tensor([0.25]))\ntensor([2.])"),
    ("exp", "Exp", lambda ctx, xp, a: xp.exp(a), lambda g, out: g * out, "output",
     "``e ** input``", ">>> ember.exp(ember.tensor([0.0]))\ntensor([1.])"),
    ("exp2", "Exp2", lambda ctx, xp, a: xp.pow(2.0, a), lambda g, out: g * out * _LN2, "output",
     "``2 ** input``", ">>> ember.exp2(ember.tensor([3.0]))\ntensor([8.])"),
    ("log", "Log", lambda ctx, xp, a: xp.log(a), lambda g, a: g / a, "input",
     "Natural logarithm", ">>> ember.log(ember.tensor([1.0]))\ntensor([0.])"),
    ("log2", "Log2", lambda ctx, xp, a: xp.log2(a), lambda g, a: g / (a * _LN2), "input",
     "Base-2 logarithm", ">>> ember.log2(ember.tensor([8.0]))\ntensor([3.])"),
    ("log10", "Log10", lambda ctx, xp, a: xp.log10(a), lambda g, a: g / (a * _LN10), "input",
     "Base-10 logarithm", ">>> ember.log10(ember.tensor([1.0]))\ntensor([0.])"),
    ("log1p", "Log1P", lambda ctx, xp, a: xp.log1p(a), lambda g, a: g / (a + 1), "input",
     "``log(1 + input)``, accurate for small inputs", ">>> ember.log1p(ember.tensor([0.0]))\ntensor([0.])"),
    ("expm1", "Expm1", lambda ctx, xp, a: xp.expm1(a), lambda g, out: g * (out + 1), "output",
     "``exp(input) - 1``, accurate for small inputs", ">>> ember.expm1(ember.tensor([0.0]))\ntensor([0.])"),
    ("sin", "Sin", lambda ctx, xp, a: xp.sin(a), lambda g, a: g * a.cos(), "input",
     "Sine", ">>> ember.sin(ember.tensor([0.0]))\ntensor([0.])"),
    ("cos", "Cos", lambda ctx, xp, a: xp.cos(a), lambda g, a: g * -a.sin(), "input",
     "Cosine", ">>> ember.cos(ember.tensor([0.0]))\ntensor([1.])"),
    ("tan", "Tan", lambda ctx, xp, a: xp.tan(a), lambda g, out: g * (1 + out * out), "output",
     "Tangent", ">>> ember.tan(ember.tensor([0.0]))\ntensor([0.])"),
    ("asin", "Asin", lambda ctx, xp, a: xp.asin(a), lambda g, a: g / _sqrt_1m(a), "input",
     "Arcsine", ">>> ember.asin(ember.tensor([0.0]))\ntensor([0.])", ("arcsin",)),
    ("acos", "Acos", lambda ctx, xp, a: xp.acos(a), lambda g, a: -g / _sqrt_1m(a), "input",
     "Arccosine", ">>> ember.acos(ember.tensor([1.0]))\ntensor([0.])", ("arccos",)),
    ("atan", "Atan", lambda ctx, xp, a: xp.atan(a), lambda g, a: g / (1 + a * a), "input",
     "Arctangent", ">>> ember.atan(ember.tensor([0.0]))\ntensor([0.])", ("arctan",)),
    ("sinh", "Sinh", lambda ctx, xp, a: xp.sinh(a), lambda g, a: g * a.cosh(), "input",
     "Hyperbolic sine", ">>> ember.sinh(ember.tensor([0.0]))\ntensor([0.])"),
    ("cosh", "Cosh", lambda ctx, xp, a: xp.cosh(a), lambda g, a: g * a.sinh(), "input",
     "Hyperbolic cosine", ">>> ember.cosh(ember.tensor([0.0]))\ntensor([1.])"),
    ("tanh", "Tanh", lambda ctx, xp, a: xp.tanh(a), lambda g, out: g * (1 - out * out), "output",
     "Hyperbolic tangent", ">>> ember.tanh(ember.tensor([0.0]))\ntensor([0.])"),
    ("asinh", "Asinh", lambda ctx, xp, a: xp.asinh(a), lambda g, a: g / (a * a + 1).sqrt(), "input",
     "Inverse hyperbolic sine", ">>> ember.asinh(ember.tensor([0.0]))\ntensor([0.])", ("arcsinh",)),
    ("acosh", "Acosh", lambda ctx, xp, a: xp.acosh(a), lambda g, a: g / (a * a - 1).sqrt(), "input",
     "Inverse hyperbolic cosine", ">>> ember.acosh(ember.tensor([1.0]))\ntensor([0.])", ("arccosh",)),
    ("atanh", "Atanh", lambda ctx, xp, a: xp.atanh(a), lambda g, a: g / (1 - a * a), "input",
     "Inverse hyperbolic tangent", ">>> ember.atanh(ember.tensor([0.0]))\ntensor([0.])", ("arctanh",)),
    ("erf", "Erf", lambda ctx, xp, a: erf_array(xp, a), lambda g, a: g * _TWO_OVER_SQRT_PI * (-(a * a)).exp(),
     "input", "The error function", ">>> ember.erf(ember.tensor([0.0]))\ntensor([0.])"),
    ("reciprocal", "Reciprocal", lambda ctx, xp, a: 1 / a, lambda g, out: -g * out * out, "output",
     "``1 / input``", ">>> ember.reciprocal(ember.tensor([2, 4]))\ntensor([0.5000, 0.2500])"),
    ("deg2rad", "Deg2Rad", lambda ctx, xp, a: a * _RAD_PER_DEG, lambda g, _: g * _RAD_PER_DEG, None,
     "Degrees to radians", ">>> ember.deg2rad(ember.tensor([180.0]))\ntensor([3.1416])"),
    ("rad2deg", "Rad2Deg", lambda ctx, xp, a: a * _DEG_PER_RAD, lambda g, _: g * _DEG_PER_RAD, None,
     "Radians to degrees", ">>> ember.rad2deg(ember.tensor([3.14159265]))\ntensor([180.])"),
    ("sinc", "Sinc", lambda ctx, xp, a: _sinc(xp, a), lambda g, a: g * _sinc_slope(a), "input",
     "The normalised sinc ``sin(pi x) / (pi x)``, 1 at 0", ">>> ember.sinc(ember.tensor([0.0, 0.5]))\n"
     "tensor([1.0000, 0.6366])"),
]

def _sinc(xp, a):
    px = a * math.pi
    zero = a == 0
    safe = xp.where(zero, xp.ones_like(px), px)  # no 0 / 0 even in the branch not taken
    return xp.where(zero, xp.ones_like(px), xp.sin(safe) / safe)


def _sinc_slope(a):
    """d sinc / dx: ``(cos(pi x) pi x - sin(pi x)) / (pi x^2)``, 0 at 0 (ember ops, for double backward)."""
    zero = a == 0
    x = where(zero, 1.0, a)  # the formula only where it is finite
    px = x * math.pi
    return where(zero, 0.0, (px.cos() * px - px.sin()) / (px * x))


# module-level names, in _FLOAT_UNARY's order (unpacking fails if an entry is added here or there alone)
(sqrt, rsqrt, exp, exp2, log, log2, log10, log1p, expm1, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh,
 acosh, atanh, erf, reciprocal, deg2rad, rad2deg, sinc) = (_float_unary(*_entry) for _entry in _FLOAT_UNARY)
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


# -- erf on any array-API backend --------------------------------------------------------------------------------
# The array API has no erf (nor has NumPy), so it is evaluated from a table of piecewise polynomials in |x|,
# fitted once with math.erf: 24 pieces of width 1/4 on [0, 6), degree 13; max error about 2e-15. Below
# |x| = 1/2 its Taylor series takes over (12 terms, error below 3e-18): erf(x) = x * P(x^2) keeps the relative
# accuracy of tiny x and the sign of zero.
_ERF_WIDTH, _ERF_PIECES, _ERF_DEGREE = 0.25, 24, 13
_ERF_TAYLOR_BELOW = 0.5
#: erf(x) = x * sum_n c_n x^(2n) with c_n = 2/sqrt(pi) (-1)^n / (n! (2n + 1))
_ERF_TAYLOR = tuple(2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(12))


@functools.cache
def _erf_coefficients():
    import numpy as np
    from numpy.polynomial import chebyshev
    nodes = np.cos(np.pi * (np.arange(40) + 0.5) / 40)
    rows = []
    for k in range(_ERF_PIECES):
        center = (k + 0.5) * _ERF_WIDTH
        values = [math.erf(center + t * _ERF_WIDTH / 2) for t in nodes]
        rows.append(chebyshev.cheb2poly(chebyshev.chebfit(nodes, values, _ERF_DEGREE)))
    return np.array(rows).T.copy()  # [power, piece]


@functools.cache
def _erf_table(xp, dtype):
    table = _erf_coefficients()
    return [xp.asarray(table[j], dtype=dtype) for j in range(table.shape[0])]


def erf_array(xp, a, *, tiny_exact=True):
    """``erf`` of a floating array, with array-API functions only.

    ``tiny_exact=False`` skips the series near 0 (about a third of the time): the error stays below 2e-15
    absolute, which is enough where erf is added to 1, as in GELU."""
    shape = a.shape
    flat = xp.reshape(a, (-1,))
    ax = xp.abs(flat)
    inside = ax < _ERF_PIECES * _ERF_WIDTH  # False for inf and NaN, which are set below
    ax = xp.where(inside, ax, xp.zeros_like(ax))
    piece = xp.astype(xp.clip(xp.floor(ax / _ERF_WIDTH), 0, _ERF_PIECES - 1), xp.int64)
    t = (ax - (xp.astype(piece, a.dtype) + 0.5) * _ERF_WIDTH) / (_ERF_WIDTH / 2)
    coefs = _erf_table(xp, a.dtype)
    r = xp.take(coefs[-1], piece)
    for c in coefs[-2::-1]:
        r = r * t + xp.take(c, piece)
    r = xp.where(inside, r, xp.asarray(1.0, dtype=a.dtype))
    r = xp.where(xp.isnan(flat), flat, r)
    r = xp.where(flat < 0, -r, r)
    if tiny_exact:
        small = xp.abs(flat) < _ERF_TAYLOR_BELOW  # False for NaN
        near_zero = flat[small]  # the series runs on these elements only
        if near_zero.shape[0]:
            x2 = near_zero * near_zero
            series = xp.full_like(near_zero, _ERF_TAYLOR[-1])
            for c in _ERF_TAYLOR[-2::-1]:
                series = series * x2 + c
            r[small] = near_zero * series
    return xp.reshape(r, shape)


# -- dtype-keeping functions ------------------------------------------------------------------------------------
class Abs(Op):
    name_ = "abs"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a):
        return xp.abs(a)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * a.sign()


@tensor_method("abs", "absolute", "__abs__")
def abs(input):  # noqa: A001 - PyTorch's name
    """Absolute value; integers stay integers.

    >>> import ember
    >>> ember.abs(ember.tensor([-2, 3]))
    tensor([2, 3])
    """
    if input._dtype is dt.bool_:
        raise not_implemented_for("abs", input._dtype, "a numeric")
    return Abs.apply(input)


absolute = abs


@tensor_method()
def square(input):
    """``input * input`` (a power of 2, as in PyTorch: its grad_fn is ``PowBackward0``); bools give int64.

    >>> import ember
    >>> ember.square(ember.tensor([-2, 3]))
    tensor([4, 9])
    """
    if input._dtype is dt.bool_:
        input = input.to(dt.int64)
    return input.pow(2)


class _ZeroGrad(Op, abstract=True):
    """Piecewise-constant functions: the gradient is zero wherever it exists."""

    @staticmethod
    def backward(ctx, g):
        return zeros_like(g)


class Sign(_ZeroGrad):
    name_ = "sign"

    @staticmethod
    def forward(ctx, xp, a):
        if a.dtype == xp.bool:
            return xp.asarray(a, copy=True)
        signs = xp.sign(a)
        if xp.isdtype(a.dtype, "real floating"):  # NaN has sign 0 in PyTorch
            signs = xp.where(xp.isnan(a), xp.zeros_like(signs), signs)
        return signs


class Sgn(Sign):
    """PyTorch's complex-aware sign; for real tensors the same as :class:`Sign`."""

    name_ = "sgn"


class Floor(_ZeroGrad):
    name_ = "floor"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.floor(a)


class Ceil(_ZeroGrad):
    name_ = "ceil"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.ceil(a)


class Trunc(_ZeroGrad):
    name_ = "trunc"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.trunc(a)


class Round(_ZeroGrad):
    name_ = "round"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.round(a)


class RoundDecimals(_ZeroGrad):
    name_ = "round_decimals"
    backward_name = "RoundBackward1"

    @staticmethod
    def forward(ctx, xp, a, decimals=0):
        scale = 10.0 ** decimals
        return xp.round(a * scale) / scale if decimals > 0 else xp.round(a / 10.0 ** -decimals) * 10.0 ** -decimals


@tensor_method()
def sign(input):
    """-1, 0 or 1 by the sign of each element (bools stay bools).

    >>> import ember
    >>> ember.sign(ember.tensor([-2.0, 0.0, 3.0]))
    tensor([-1.,  0.,  1.])
    """
    return Sign.apply(input)


@tensor_method()
def sgn(input):
    """The sign of each element: :func:`sign` for real tensors (PyTorch's name that also covers complex ones).

    >>> import ember
    >>> ember.sgn(ember.tensor([-2.0, 0.0, 3.0]))
    tensor([-1.,  0.,  1.])
    """
    return Sgn.apply(input)


@tensor_method()
def positive(input):
    """``input`` itself (the unary ``+``); an error for bool tensors, as in PyTorch.

    >>> import ember
    >>> x = ember.tensor([1.0, -2.0])
    >>> ember.positive(x) is x
    True
    """
    _check_tensor("positive", input)
    if input._dtype is dt.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


Signbit = array_op("Signbit", "signbit", "signbit")


@tensor_method()
def signbit(input):
    """Whether each element's sign bit is set: True for negative numbers and -0.0.

    >>> import ember
    >>> ember.signbit(ember.tensor([-0.0, 0.0, -2.0]))
    tensor([ True, False,  True])
    """
    _check_tensor("signbit", input)
    if input._dtype.is_floating_point:
        return Signbit.apply(input)
    if input._dtype is dt.bool_:
        return zeros_like(input)
    return input < 0  # integers: the array API's signbit takes floats only


def _rounding(name, op):
    def fn(input):
        if input._dtype is dt.bool_:
            raise not_implemented_for(name, input._dtype, "a numeric")
        return op.apply(input)
    return fn


def _rounding_public(name, op, doc):
    fn = _rounding(name, op)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    setattr(Tensor, name, fn)
    return fn


floor = _rounding_public("floor", Floor, """Largest integer not above each element (integers are returned unchanged).

    >>> import ember
    >>> ember.floor(ember.tensor([-1.5, 1.5]))
    tensor([-2.,  1.])
    """)
ceil = _rounding_public("ceil", Ceil, """Smallest integer not below each element.

    >>> import ember
    >>> ember.ceil(ember.tensor([-1.5, 1.5]))
    tensor([-1.,  2.])
    """)
trunc = _rounding_public("trunc", Trunc, """Each element rounded toward zero.

    >>> import ember
    >>> ember.trunc(ember.tensor([-1.5, 1.5]))
    tensor([-1.,  1.])
    """)
fix = trunc
Tensor.fix = trunc


@tensor_method()
def round(input, *, decimals=0):  # noqa: A001 - PyTorch's name
    """Round half to even, to ``decimals`` decimal places (negative: to tens, hundreds, ...).

    >>> import ember
    >>> ember.round(ember.tensor([0.5, 1.5, 2.5]))
    tensor([0., 2., 2.])
    >>> ember.round(ember.tensor([1234.0]), decimals=-2)
    tensor([1200.])
    """
    if decimals == 0:
        return _rounding("round", Round)(input)
    if not input._dtype.is_floating_point:
        raise not_implemented_for("round", input._dtype)
    return RoundDecimals.apply(input, decimals=int(decimals))


class Frac(Op):
    name_ = "frac"

    @staticmethod
    def forward(ctx, xp, a):
        return a - xp.trunc(a)

    @staticmethod
    def backward(ctx, g):
        return g


@tensor_method()
def frac(input):
    """The fractional part ``input - trunc(input)`` (floating inputs only, as in PyTorch).

    >>> import ember
    >>> ember.frac(ember.tensor([-1.5, 2.25]))
    tensor([-0.5000,  0.2500])
    """
    if not input._dtype.is_floating_point:
        raise not_implemented_for("frac", input._dtype)
    return Frac.apply(input)


# -- classification of values ----------------------------------------------------------------------------------
class IsNan(Op):
    name_ = "isnan"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.isnan(a)


class IsInf(Op):
    name_ = "isinf"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.isinf(a)


class IsFinite(Op):
    name_ = "isfinite"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.isfinite(a)


class IsPosInf(Op):
    name_ = "isposinf"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.isinf(a) & (a > 0)


class IsNegInf(Op):
    name_ = "isneginf"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.isinf(a) & (a < 0)


def _classifier(name, op, doc):
    def fn(input):
        if input._dtype is dt.bool_:
            input = input.to(dt.uint8)
        return op.apply(input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    setattr(Tensor, name, fn)
    return fn


_NANS = "ember.tensor([1.0, float('nan'), float('inf'), -float('inf')])"
isnan = _classifier("isnan", IsNan, f"""A bool tensor, True where ``input`` is NaN.

    >>> import ember
    >>> ember.isnan({_NANS})
    tensor([False,  True, False, False])
    """)
isinf = _classifier("isinf", IsInf, f"""A bool tensor, True where ``input`` is +inf or -inf.

    >>> import ember
    >>> ember.isinf({_NANS})
    tensor([False, False,  True,  True])
    """)
isfinite = _classifier("isfinite", IsFinite, f"""A bool tensor, True where ``input`` is neither NaN nor infinite.

    >>> import ember
    >>> ember.isfinite({_NANS})
    tensor([ True, False, False, False])
    """)
isposinf = _classifier("isposinf", IsPosInf, f"""A bool tensor, True where ``input`` is +inf.

    >>> import ember
    >>> ember.isposinf({_NANS})
    tensor([False, False,  True, False])
    """)
isneginf = _classifier("isneginf", IsNegInf, f"""A bool tensor, True where ``input`` is -inf.

    >>> import ember
    >>> ember.isneginf({_NANS})
    tensor([False, False, False,  True])
    """)


class NanToNum(Op):
    name_ = "nantonum"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, nan=0.0, posinf=None, neginf=None):
        dtype = a.dtype
        if not xp.isdtype(dtype, "real floating"):
            return xp.asarray(a, copy=True)
        out = xp.where(xp.isnan(a), xp.asarray(nan, dtype=dtype), a)
        out = xp.where(xp.isinf(a) & (a > 0), xp.asarray(posinf, dtype=dtype), out)
        return xp.where(xp.isinf(a) & (a < 0), xp.asarray(neginf, dtype=dtype), out)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * a.isfinite()


@tensor_method()
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN replaced by ``nan``, +inf/-inf by ``posinf``/``neginf`` (default: the dtype's largest/lowest value).

    >>> import ember
    >>> ember.nan_to_num(ember.tensor([float('nan'), float('inf'), 1.0]), posinf=9.0)
    tensor([0., 9., 1.])
    """
    if not input._dtype.is_floating_point:
        return NanToNum.apply(input)
    info = dt.finfo(input._dtype)
    return NanToNum.apply(input, nan=float(nan), posinf=info.max if posinf is None else float(posinf),
                          neginf=info.min if neginf is None else float(neginf))
