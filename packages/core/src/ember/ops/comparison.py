"""Comparisons: ``eq``, ``ne``, ``gt``, ``ge``, ``lt``, ``le`` and their operators, ``isclose``, ``allclose``,
``equal``.

Comparisons broadcast, promote both sides to a common dtype first (so
``int_tensor == 1.5`` compares as floats) and return bool tensors.

>>> import ember
>>> ember.tensor([1, 2, 3]) >= 2
tensor([False,  True,  True])
>>> ember.allclose(ember.tensor([1.0]), ember.tensor([1.0 + 1e-9]))
True
"""
from __future__ import annotations

from ..autograd.function import Op
from ._common import Tensor, array_op, promote
from .pointwise import SCALAR_NAMES

__all__ = ["eq", "ne", "gt", "ge", "lt", "le", "greater", "greater_equal", "less", "less_equal", "not_equal",
           "isclose", "allclose", "equal"]


Eq = array_op("Eq", "eq", "equal")
Ne = array_op("Ne", "ne", "not_equal")
Gt = array_op("Gt", "gt", "greater")
Ge = array_op("Ge", "ge", "greater_equal")
Lt = array_op("Lt", "lt", "less")
Le = array_op("Le", "le", "less_equal")

_NUMBERS = (int, float, bool)


def _comparison(op, name, symbol, methods, doc):
    def fn(input, other):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        if not isinstance(other, (Tensor,) + _NUMBERS):
            raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor or Number, "
                            f"not {type(other).__name__}")
        return op.apply(*promote(input, other))

    def operator(self, other):
        if not isinstance(other, (Tensor,) + _NUMBERS):
            return NotImplemented
        return op.apply(*promote(self, other))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""``input {symbol} other`` elementwise, as a bool tensor (``other`` may be a number).

    >>> import ember
    {doc}
    """
    operator.__name__ = methods[-1]
    for m in methods[:-1]:
        setattr(Tensor, m, fn)
    setattr(Tensor, methods[-1], operator)
    return fn


eq = _comparison(Eq, "eq", "==", ("eq", "__eq__"), """>>> ember.eq(ember.tensor([1, 2]), ember.tensor([1, 3]))
    tensor([ True, False])""")
ne = _comparison(Ne, "ne", "!=", ("ne", "not_equal", "__ne__"), """>>> ember.ne(ember.tensor([1, 2]), 2)
    tensor([ True, False])""")
gt = _comparison(Gt, "gt", ">", ("gt", "greater", "__gt__"), """>>> ember.gt(ember.tensor([1, 2]), 1.5)
    tensor([False,  True])""")
ge = _comparison(Ge, "ge", ">=", ("ge", "greater_equal", "__ge__"), """>>> ember.ge(ember.tensor([1, 2]), 2)
    tensor([False,  True])""")
lt = _comparison(Lt, "lt", "<", ("lt", "less", "__lt__"), """>>> ember.lt(ember.tensor([1, 2]), 2)
    tensor([ True, False])""")
le = _comparison(Le, "le", "<=", ("le", "less_equal", "__le__"), """>>> ember.le(ember.tensor([1, 2]), 1)
    tensor([ True, False])""")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


class IsClose(Op):
    name_ = "isclose"

    @staticmethod
    def forward(ctx, xp, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
        if not xp.isdtype(a.dtype, "real floating"):
            if rtol == 0 and atol == 0:
                return xp.equal(a, b)
            f = xp.float64
            a, b = xp.astype(a, f), xp.astype(b, f)
        close = xp.abs(a - b) <= atol + rtol * xp.abs(b)
        # equal infinities are close; any other infinity is not (the tolerance would be inf)
        close = xp.where(xp.isinf(a) | xp.isinf(b), xp.equal(a, b), close)
        if equal_nan:
            close = close | (xp.isnan(a) & xp.isnan(b))
        return close


def _dtype_name(d):
    return SCALAR_NAMES[d.name]


def _check_close_args(input, other, rtol, atol):
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    if input._dtype is not other._dtype:
        raise RuntimeError(f"{_dtype_name(input._dtype)} did not match {_dtype_name(other._dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|input - other| <= atol + rtol * |other|``, as a bool tensor; both must share a dtype.

    >>> import ember
    >>> ember.isclose(ember.tensor([1.0, 2.0]), ember.tensor([1.0 + 1e-7, 2.1]))
    tensor([ True, False])
    """
    _check_close_args(input, other, rtol, atol)
    return IsClose.apply(input, other, rtol=float(rtol), atol=float(atol), equal_nan=bool(equal_nan))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True if :func:`isclose` holds for every element (a Python bool).

    >>> import ember
    >>> ember.allclose(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.1]))
    False
    """
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other) -> bool:
    """True if both tensors have the same shape and the same values (a Python bool).

    >>> import ember
    >>> ember.equal(ember.tensor([1, 2]), ember.tensor([1, 2]))
    True
    >>> ember.equal(ember.tensor([1, 2]), ember.tensor([1, 2, 3]))
    False
    """
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"equal(): arguments must be Tensors, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(Eq.apply(*promote(input, other)).all())


Tensor.isclose = isclose
Tensor.allclose = allclose
Tensor.equal = equal
