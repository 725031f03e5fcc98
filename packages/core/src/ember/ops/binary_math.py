"""Elementwise functions of several tensors: ``maximum``, ``minimum``, ``fmax``, ``fmin``, ``atan2``, ``lerp``,
``clamp``.

All broadcast like the arithmetic operators and promote dtypes by PyTorch's rules.

>>> import ember
>>> ember.maximum(ember.tensor([1, 5]), ember.tensor([3, 2]))
tensor([3, 5])
>>> ember.tensor([-2.0, 0.5, 3.0]).clamp(min=0, max=1)
tensor([0.0000, 0.5000, 1.0000])
"""
from __future__ import annotations

import operator

from .. import _dtype as dt
from .._overflow import check_scalar, wrap_unsigned
from ..autograd.function import Op
from ._common import Tensor, promote, sum_to, tensor_method
from .creation import full
from .pointwise import not_implemented_for

__all__ = ["maximum", "minimum", "fmax", "fmin", "atan2", "arctan2", "lerp", "clamp", "clip",
           "clamp_min", "clamp_max"]


def _require_tensor(fn, name, position, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Tensor, "
                        f"not {type(value).__name__}")


class Maximum(Op):
    name_ = "maximum"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.maximum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        # ties split the gradient evenly, as in PyTorch
        share = (a > b) + (a == b) * 0.5
        return (sum_to(g * share, a.shape) if ctx.needs_input_grad[0] else None,
                sum_to(g * (1 - share), b.shape) if ctx.needs_input_grad[1] else None)


class Minimum(Op):
    name_ = "minimum"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.minimum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        share = (a < b) + (a == b) * 0.5
        return (sum_to(g * share, a.shape) if ctx.needs_input_grad[0] else None,
                sum_to(g * (1 - share), b.shape) if ctx.needs_input_grad[1] else None)


@tensor_method()
def maximum(input, other):
    """Elementwise maximum of two tensors (NaN wins, as in PyTorch).

    >>> import ember
    >>> ember.maximum(ember.tensor([1.0, 4.0]), ember.tensor([2.0, 3.0]))
    tensor([2., 4.])
    """
    _require_tensor("maximum", "other", 2, other)
    return Maximum.apply(*promote(input, other))


@tensor_method()
def minimum(input, other):
    """Elementwise minimum of two tensors (NaN wins, as in PyTorch).

    >>> import ember
    >>> ember.minimum(ember.tensor([1.0, 4.0]), ember.tensor([2.0, 3.0]))
    tensor([1., 3.])
    """
    _require_tensor("minimum", "other", 2, other)
    return Minimum.apply(*promote(input, other))


class Fmax(Op):
    """``maximum`` that ignores NaN (NaN only where both are NaN)."""

    name_ = "fmax"
    saves_inputs = True
    pick = "maximum"  # the array function that compares
    wins = staticmethod(operator.ge)  # where ``input`` is the one picked (ties too, as in PyTorch)

    @staticmethod
    def forward(ctx, xp, a, b):
        out = getattr(xp, type(ctx).pick)(a, b)
        out = xp.where(xp.isnan(a), b, out)
        return xp.where(xp.isnan(b), a, out)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        picked = type(ctx).wins(a, b) | b.isnan()
        return (sum_to(g * picked, a.shape) if ctx.needs_input_grad[0] else None,
                sum_to(g * ~picked, b.shape) if ctx.needs_input_grad[1] else None)


class Fmin(Fmax):
    """``minimum`` that ignores NaN."""

    name_ = "fmin"
    pick = "minimum"
    wins = staticmethod(operator.le)


@tensor_method()
def fmax(input, other):
    """Elementwise maximum that ignores NaN: NaN only where both are NaN.

    >>> import ember
    >>> ember.fmax(ember.tensor([1.0, float("nan")]), ember.tensor([2.0, 3.0]))
    tensor([2., 3.])
    """
    _require_tensor("fmax", "other", 2, other)
    return Fmax.apply(*promote(input, other))


@tensor_method()
def fmin(input, other):
    """Elementwise minimum that ignores NaN: NaN only where both are NaN.

    >>> import ember
    >>> ember.fmin(ember.tensor([1.0, float("nan")]), ember.tensor([2.0, 3.0]))
    tensor([1., 3.])
    """
    _require_tensor("fmin", "other", 2, other)
    return Fmin.apply(*promote(input, other))


class Atan2(Op):
    name_ = "atan2"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, b):
        return xp.atan2(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        denom = a * a + b * b
        return (sum_to(g * b / denom, a.shape) if ctx.needs_input_grad[0] else None,
                sum_to(g * -a / denom, b.shape) if ctx.needs_input_grad[1] else None)


@tensor_method("atan2", "arctan2")
def atan2(input, other):
    """The angle of the point ``(other, input)``: ``atan(input / other)`` in the right quadrant.

    >>> import ember
    >>> ember.atan2(ember.tensor([0.0]), ember.tensor([1.0]))
    tensor([0.])
    """
    _require_tensor("atan2", "other", 2, other)
    a, b = promote(input, other)
    if not a._dtype.is_floating_point:
        f = dt.get_default_dtype()
        a, b = a.to(f), b.to(f)
    return Atan2.apply(a, b)


arctan2 = atan2


class Lerp(Op):
    name_ = "lerp"
    backward_name = "LerpBackward1"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, start, end, weight):
        return start + weight * (end - start)

    @staticmethod
    def backward(ctx, g):
        start, end, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (sum_to(g * (1 - weight), start.shape) if need[0] else None,
                sum_to(g * weight, end.shape) if need[1] else None,
                sum_to(g * (end - start), weight.shape) if need[2] else None)


class LerpScalar(Op):
    name_ = "lerp_scalar"
    backward_name = "LerpBackward0"

    @staticmethod
    def forward(ctx, xp, start, end, weight=0.5):
        ctx.weight, ctx.shapes = weight, (start.shape, end.shape)
        return start + weight * (end - start)

    @staticmethod
    def backward(ctx, g):
        w = ctx.weight
        return (sum_to(g * (1 - w), ctx.shapes[0]) if ctx.needs_input_grad[0] else None,
                sum_to(g * w, ctx.shapes[1]) if ctx.needs_input_grad[1] else None)


@tensor_method()
def lerp(input, end, weight):
    """Linear interpolation ``input + weight * (end - input)``; ``weight`` is a number or a tensor.

    >>> import ember
    >>> ember.lerp(ember.tensor([0.0, 10.0]), ember.tensor([10.0, 20.0]), 0.5)
    tensor([ 5., 15.])
    """
    _require_tensor("lerp", "end", 2, end)
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t._dtype is not input._dtype:
            raise RuntimeError(f"expected dtype {_c_name(input._dtype)} for `{name}` but got dtype "
                               f"{_c_name(t._dtype)}")
    if not input._dtype.is_floating_point:
        raise not_implemented_for("lerp", input._dtype)
    if isinstance(weight, Tensor):
        return Lerp.apply(input, end, weight)
    return LerpScalar.apply(input, end, weight=float(weight))


def _c_name(d):
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}.get(
        d.name, d.name)


# -- clamp ---------------------------------------------------------------------------------------------------------
class Clamp(Op):
    """Clamp with tensor bounds (either may be absent)."""
    name_ = "clamp"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, lo, hi):
        out = a if lo is None else xp.maximum(a, lo)
        return out if hi is None else xp.minimum(out, hi)

    @staticmethod
    def backward(ctx, g):
        a, lo, hi = ctx.saved_tensors
        need = ctx.needs_input_grad
        # the output is hi where max(a, lo) > hi, lo where a < lo <= hi, else a
        from_hi = None if hi is None else (a > hi if lo is None else (a > hi) | (lo > hi))
        from_lo = None if lo is None else (a < lo if hi is None else (a < lo) & (lo <= hi))
        if from_hi is None:
            keep = ~from_lo
        else:
            keep = ~from_hi if from_lo is None else ~from_hi & ~from_lo
        grads = [sum_to(g * keep, a.shape) if need[0] else None, None, None]
        if lo is not None and need[1]:
            grads[1] = sum_to(g * from_lo, lo.shape)
        if hi is not None and need[2]:
            grads[2] = sum_to(g * from_hi, hi.shape)
        return tuple(grads)


class ClampScalar(Op):
    name_ = "clamp_scalar"
    backward_name = "ClampBackward1"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, lo=None, hi=None):
        ctx.lo, ctx.hi = lo, hi
        out = a if lo is None else xp.maximum(a, lo)
        return out if hi is None else xp.minimum(out, hi)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        lo, hi = ctx.lo, ctx.hi
        if lo is None:
            return g * (a <= hi)
        if hi is None:
            return g * (a >= lo)
        return g * ((a >= lo) & (a <= hi))


@tensor_method("clamp", "clip")
def clamp(input, min=None, max=None):  # noqa: A002 - PyTorch's argument names
    """Each element limited to ``[min, max]`` (numbers or tensors; either may be None; if min > max, max wins).

    >>> import ember
    >>> ember.clamp(ember.tensor([-2, 0, 3]), min=-1, max=1)
    tensor([-1,  0,  1])
    """
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        want = dt.result_type(*(x for x in (input, min, max) if x is not None))
        dev = input._device
        lo, hi = (None if x is None else
                  (x.to(want) if isinstance(x, Tensor) else _full_like_scalar(x, want, dev)) for x in (min, max))
        return Clamp.apply(input.to(want), lo, hi)
    for name, bound in (("min", min), ("max", max)):
        if bound is not None and not isinstance(bound, (int, float)):
            raise TypeError(f"clamp(): argument '{name}' must be a Number or a Tensor, not {type(bound).__name__}")
    want = dt.result_type(*(x for x in (input, min, max) if x is not None))
    input = input.to(want)
    for bound in (min, max):
        if bound is not None:
            check_scalar(bound, want)
    lo, hi = (None if b is None else float(b) if want.is_floating_point else wrap_unsigned(int(b), want)
              for b in (min, max))
    return ClampScalar.apply(input, lo=lo, hi=hi)


clip = clamp


def _full_like_scalar(value, dtype, device):
    return full((), value, dtype=dtype, device=device)


@tensor_method()
def clamp_min(input, min):  # noqa: A002
    """``clamp(input, min=min)``."""
    return clamp(input, min=min)


@tensor_method()
def clamp_max(input, max):  # noqa: A002
    """``clamp(input, max=max)``."""
    return clamp(input, max=max)
