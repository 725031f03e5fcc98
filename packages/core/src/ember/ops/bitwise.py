"""Logical and bitwise ops: ``logical_and/or/xor/not``, ``bitwise_*`` and the operators ``& | ^ ~ << >>``.

Logical ops take any dtype (nonzero is True) and return bool; bitwise ops need
integer or bool tensors and keep the promoted dtype.

>>> import ember
>>> ember.tensor([True, False]) & ember.tensor([True, True])
tensor([ True, False])
>>> ember.tensor([12]) ^ 10
tensor([6])
"""
from __future__ import annotations

from .. import _dtype as dt
from ..autograd.function import Op
from ._common import Tensor, array_op, promote, tensor_method
from .pointwise import not_implemented_for

__all__ = ["logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_not", "bitwise_left_shift", "bitwise_right_shift"]


def _as_bool(xp, a):
    if isinstance(a, (bool, int, float)):
        return bool(a)
    return a if a.dtype == xp.bool else a != 0


class LogicalAnd(Op):
    name_ = "logicaland"

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.logical_and(_as_bool(xp, a), _as_bool(xp, b))


class LogicalOr(Op):
    name_ = "logicalor"

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.logical_or(_as_bool(xp, a), _as_bool(xp, b))


class LogicalXor(Op):
    name_ = "logicalxor"

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.logical_xor(_as_bool(xp, a), _as_bool(xp, b))


class LogicalNot(Op):
    name_ = "logicalnot"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.logical_not(_as_bool(xp, a))


def _logical(op):
    def fn(input, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"{op.name_}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
        return op.apply(input, other)
    return fn


def _public(name, fn, doc, methods=()):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    for m in (name,) + methods:
        setattr(Tensor, m, fn)
    return fn


logical_and = _public("logical_and", _logical(LogicalAnd), """Elementwise AND of truth values (nonzero is True).

    >>> import ember
    >>> ember.logical_and(ember.tensor([1, 0, 2]), ember.tensor([1.0, 1.0, 0.0]))
    tensor([ True, False, False])
    """)
logical_or = _public("logical_or", _logical(LogicalOr), """Elementwise OR of truth values (nonzero is True).

    >>> import ember
    >>> ember.logical_or(ember.tensor([1, 0, 0]), ember.tensor([0, 0, 3]))
    tensor([ True, False,  True])
    """)
logical_xor = _public("logical_xor", _logical(LogicalXor), """Elementwise XOR of truth values (nonzero is True).

    >>> import ember
    >>> ember.logical_xor(ember.tensor([1, 0, 2]), ember.tensor([1, 1, 0]))
    tensor([False,  True,  True])
    """)


@tensor_method()
def logical_not(input):
    """Elementwise NOT of truth values (nonzero is True).

    >>> import ember
    >>> ember.logical_not(ember.tensor([0.0, 2.0]))
    tensor([ True, False])
    """
    return LogicalNot.apply(input)


# -- bitwise ----------------------------------------------------------------------------------------------------
BitwiseAnd = array_op("BitwiseAnd", "bitwiseand", "bitwise_and")
BitwiseOr = array_op("BitwiseOr", "bitwiseor", "bitwise_or")
BitwiseXor = array_op("BitwiseXor", "bitwisexor", "bitwise_xor")
BitwiseLeftShift = array_op("BitwiseLeftShift", "bitwiseleftshift", "bitwise_left_shift")
BitwiseRightShift = array_op("BitwiseRightShift", "bitwiserightshift", "bitwise_right_shift")

class BitwiseNot(Op):
    name_ = "bitwisenot"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.logical_not(a) if a.dtype == xp.bool else xp.bitwise_invert(a)


def _bitwise(op, name, allow_bool=True):
    def fn(input, other):
        a, b = promote(input, other)
        t = a if isinstance(a, Tensor) else b
        if t._dtype.is_floating_point or (not allow_bool and t._dtype is dt.bool_):
            raise not_implemented_for(name, t._dtype, "an integer or bool" if allow_bool else "an integer")
        if t._dtype is dt.bool_:
            a, b = (bool(x) if not isinstance(x, Tensor) else x for x in (a, b))
        return op.apply(a, b)
    return fn


def _reflected(fn):
    def method(self, other):
        if not isinstance(other, (int, float, bool, Tensor)):
            return NotImplemented
        return fn(other, self)
    return method


bitwise_and = _public(
    "bitwise_and", _bitwise(BitwiseAnd, "bitwise_and"), """Elementwise AND of bits (of truth values for bools).

    >>> import ember
    >>> ember.bitwise_and(ember.tensor([12, 10]), 6)
    tensor([4, 2])
    """, ("__and__",))
bitwise_or = _public(
    "bitwise_or", _bitwise(BitwiseOr, "bitwise_or"), """Elementwise OR of bits (of truth values for bools).

    >>> import ember
    >>> ember.bitwise_or(ember.tensor([12, 10]), 1)
    tensor([13, 11])
    """, ("__or__",))
bitwise_xor = _public(
    "bitwise_xor", _bitwise(BitwiseXor, "bitwise_xor"), """Elementwise XOR of bits (of truth values for bools).

    >>> import ember
    >>> ember.bitwise_xor(ember.tensor([12, 10]), 6)
    tensor([10, 12])
    """, ("__xor__",))
bitwise_left_shift = _public("bitwise_left_shift", _bitwise(BitwiseLeftShift, "bitwise_left_shift", False),
                             """Integers shifted left by ``other`` bits (``input << other``).

    >>> import ember
    >>> ember.tensor([1, 3]) << 2
    tensor([ 4, 12])
    """, ("__lshift__",))
bitwise_right_shift = _public("bitwise_right_shift", _bitwise(BitwiseRightShift, "bitwise_right_shift", False),
                              """Integers shifted right by ``other`` bits (``input >> other``).

    >>> import ember
    >>> ember.tensor([4, 13]) >> 2
    tensor([1, 3])
    """, ("__rshift__",))

for _name, _fn in (("__rand__", bitwise_and), ("__ror__", bitwise_or), ("__rxor__", bitwise_xor),
                   ("__rlshift__", bitwise_left_shift), ("__rrshift__", bitwise_right_shift)):
    setattr(Tensor, _name, _reflected(_fn))


@tensor_method("bitwise_not", "__invert__")
def bitwise_not(input):
    """Elementwise NOT of bits (``~x``); for bools, logical NOT.

    >>> import ember
    >>> ~ember.tensor([True, False])
    tensor([False,  True])
    >>> ~ember.tensor([0, 5])
    tensor([-1, -6])
    """
    if input._dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return BitwiseNot.apply(input)
