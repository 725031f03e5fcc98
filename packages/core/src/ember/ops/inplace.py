"""In-place ops: ``add_``, ``sub_``, ``mul_``, ``div_``, ``zero_``, ``fill_``, ``clamp_``, ``copy_``,
``scatter_``, ``scatter_add_``, ``index_add_``, ``index_put_``, ``masked_fill_`` and ``x[key] = value``.

One mechanism serves them all (:func:`apply_inplace`): the new value is
computed out of place with the ordinary differentiable op, written into the
tensor's memory, and the tensor's version counter (shared with its views) is
bumped, so a value saved for backward and changed since is reported by
backward. When autograd records, the tensor's history is rebased onto the new
op; when the tensor is a view, its base's history is rebased too (a
``CopySlices`` node), so gradients through the base are right.

>>> import ember
>>> x = ember.zeros(3)
>>> x.add_(1).mul_(2)
tensor([2., 2., 2.])
>>> x._version
2
"""
from __future__ import annotations

import operator

from ..autograd import function as _function
from ..autograd.function import Op, _edge, replay_view
from ..autograd.grad_mode import STATE, no_grad
from ..autograd.node import Node, _seq
from ._common import Tensor, cast_scalar, sum_to, tensor_method
from .binary_math import clamp
from .creation import ones, tensor
from .gather import index_add, scatter, scatter_add
from .indexing import index_put, make_plan, put_advanced, split_key
from .shape import masked_fill
from .slicing import index_view
from .view import _byte_strides

__all__ = ["apply_inplace", "fill_", "zero_", "clamp_", "index_put_"]  # torch.fill_(t, v) etc. exist too

LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_MSG = "a view of a leaf Variable that requires grad is being used in an in-place operation."
OVERLAP_MSG = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
               "location. Please clone() the tensor before performing the operation.")


class CopySlices(Node):
    """The base's new history after an in-place change through one of its views."""

    backward_name = "CopySlices"

    def __init__(self, base, src, view_of):
        self._next = (_edge(base), _edge(src))
        self.needs_input_grad = (base._requires_grad, src._requires_grad)
        self.view_of = view_of
        self.shape = tuple(base._data.shape)
        self.seq = next(_seq)

    def apply_backward(self, grads):
        g = grads[0]
        gb = gs = None
        if self.needs_input_grad[1]:
            gs = replay_view(g, self.view_of)
        if self.needs_input_grad[0]:
            keep = ones(self.shape, dtype=g.dtype, device=g.device)
            with no_grad():
                replay_view(keep, self.view_of)._data[...] = 0
            gb = g * keep
        return gb, gs


def _check_target(self, track_possible):
    if track_possible and self._requires_grad:
        base = self._base
        if self.grad_fn is None:
            raise RuntimeError(LEAF_MSG)
        if base is not None and self._view_of is not None and base.grad_fn is None and base._requires_grad:
            raise RuntimeError(VIEW_OF_LEAF_MSG)
    if self._base is not None:
        for n, s in zip(self._data.shape, _byte_strides(self)):
            if s == 0 and n > 1:
                raise RuntimeError(OVERLAP_MSG)


def _check_broadcast(self, rshape):
    shape = tuple(self._data.shape)
    if rshape != shape and not (len(rshape) <= len(shape)
                                and all(r in (1, s) for r, s in zip(rshape[::-1], shape[::-1]))):
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape {list(rshape)}")


def _fit(self, result):
    """``result`` cast to ``self``'s dtype and broadcast to its shape, or a PyTorch-style error."""
    if result._dtype is not self._dtype:
        if result._dtype.category > self._dtype.category:
            raise RuntimeError(f"result type {result._dtype.scalar_type_name} can't be cast to the desired output type "
                               f"{self._dtype.scalar_type_name}")
        result = result.to(self._dtype)
    rshape = tuple(result._data.shape)
    if rshape != tuple(self._data.shape):
        _check_broadcast(self, rshape)
        result = result.expand(self.shape)
    return result


def apply_inplace(self, compute, others=(), saves_self=False):
    """Make ``compute(self)`` (an out-of-place ember computation) the new value of ``self``, in place.

    ``others`` are the other tensor inputs (to know whether autograd records);
    ``saves_self`` says that ``compute`` keeps its input for backward, so it
    gets a copy of the old value instead of ``self``.
    """
    grad_on = STATE.enabled
    _check_target(self, grad_on)
    track = grad_on and (self._requires_grad or any(isinstance(o, Tensor) and o._requires_grad for o in others))
    if track:
        result = _fit(self, compute(self.clone() if saves_self else self))
    else:
        with no_grad():
            result = _fit(self, compute(self))
    self._data[...] = result._data
    self._vc[0] += 1
    if track:
        _rebase(self, result)
    return self


def _arith_inplace(self, other, operator, scale=1):
    """``self <operator>= scale * other`` straight on the arrays, when nothing needs recording.

    The common case of optimizer steps and running statistics: no autograd
    involvement, ``other`` on the same device with ``self``'s dtype (or a Python
    number ``self``'s dtype keeps), and ``self`` not an overlapping (expanded)
    view. Returns False (and changes nothing) otherwise; the caller then takes
    the general path, which also gives PyTorch's errors.
    """
    if self._requires_grad and STATE.enabled or self._base is not None or _function.TRACE.get() is not None:
        return False  # (an ONNX export trace must see the op, so it takes the general path too)
    if isinstance(other, Tensor):
        if other._requires_grad and STATE.enabled or other._dtype is not self._dtype \
                or other._device.key != self._device.key or other._data.ndim > self._data.ndim:
            return False
        value = other._data
    elif isinstance(other, (int, float)) and not isinstance(other, bool) and self._dtype.is_floating_point:
        value = other
    else:
        return False
    if scale != 1:
        value = value * scale
    try:
        operator(self._data, value)
    except ValueError:  # shapes that do not broadcast into self: the general path says so
        return False
    self._vc[0] += 1
    return True


def _rebase(self, result):
    base = self._base
    if base is not None and self._view_of is not None:
        node = CopySlices(base, result, self._view_of)
        base.grad_fn, base._requires_grad, base._output_nr = node, True, 0
        fresh = replay_view(base, self._view_of)
        self.grad_fn, self._requires_grad, self._output_nr = fresh.grad_fn, True, 0
    else:
        self.grad_fn, self._requires_grad, self._output_nr = result.grad_fn, result._requires_grad, result._output_nr
    if base is not None:
        self._vv = self._vc[0]


def _tensors(*xs):
    return tuple(x for x in xs if isinstance(x, Tensor))


# -- copying and filling ---------------------------------------------------------------
class Copy(Op):
    name_ = "copy"
    backward_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, xp, a, b):
        ctx.b_shape = b.shape
        return b if b.shape == a.shape else xp.broadcast_to(b, a.shape)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (g * 0 if need[0] else None), (sum_to(g, ctx.b_shape) if need[1] else None)


class Fill(Op):
    name_ = "fill"
    backward_name = "FillBackward2"  # PyTorch's name for fill_ with a number

    @staticmethod
    def forward(ctx, xp, a, value):
        if hasattr(value, "shape"):
            return xp.broadcast_to(xp.astype(value, a.dtype), a.shape)
        return xp.full(a.shape, value, dtype=a.dtype)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (g * 0 if need[0] else None), (g.sum() if need[1] else None)


class FillTensor(Fill):
    name_ = "filltensor"
    backward_name = "FillBackward3"  # PyTorch's name for fill_ with a 0-d tensor


class Zero(Fill):
    name_ = "zero"
    backward_name = "ZeroBackward0"


@tensor_method()
def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, cast, moved across devices) into ``self``; differentiable w.r.t. ``src``.

    >>> import ember
    >>> ember.zeros(2, 2).copy_(ember.tensor([1, 2]))
    tensor([[1., 2.],
            [1., 2.]])
    """
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'other' must be Tensor, not {type(src).__name__}")
    _check_broadcast(self, tuple(src._data.shape))

    def compute(cur):
        s = src.to(device=cur._device, dtype=cur._dtype)
        return Copy.apply(cur, s)

    return apply_inplace(self, compute, (src,))


@tensor_method()
def fill_(self, value):
    """Set every element to ``value`` (a number or a 0-d tensor).

    >>> import ember
    >>> ember.zeros(2).fill_(7)
    tensor([7., 7.])
    """
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        return apply_inplace(self, lambda cur: FillTensor.apply(cur, value.to(device=cur._device)), (value,))
    value = cast_scalar(value, self)
    if not (STATE.enabled and self._requires_grad):
        _check_target(self, False)
        self._data[...] = value
        self._vc[0] += 1
        return self
    return apply_inplace(self, lambda cur: Fill.apply(cur, value))


@tensor_method()
def zero_(self):
    """Set every element to zero.

    >>> import ember
    >>> ember.ones(2).zero_()
    tensor([0., 0.])
    """
    if not (STATE.enabled and self._requires_grad):
        return fill_(self, 0)
    return apply_inplace(self, lambda cur: Zero.apply(cur, cast_scalar(0, cur)))


# -- arithmetic -----------------------------------------------------------------------
@tensor_method("add_", "__iadd__")
def add_(self, other, *, alpha=1):
    """``self += alpha * other``.

    >>> import ember
    >>> ember.ones(2).add_(ember.ones(2), alpha=2)
    tensor([3., 3.])
    """
    if _arith_inplace(self, other, operator.iadd, alpha):
        return self
    return apply_inplace(self, lambda cur: cur.add(other, alpha=alpha), _tensors(other))


@tensor_method("sub_", "__isub__")
def sub_(self, other, *, alpha=1):
    """``self -= alpha * other``."""
    if _arith_inplace(self, other, operator.isub, alpha):
        return self
    return apply_inplace(self, lambda cur: cur.sub(other, alpha=alpha), _tensors(other))


@tensor_method("mul_", "__imul__")
def mul_(self, other):
    """``self *= other``."""
    if _arith_inplace(self, other, operator.imul):
        return self
    return apply_inplace(self, lambda cur: cur.mul(other), _tensors(other), saves_self=True)


@tensor_method("div_", "__itruediv__")
def div_(self, other, *, rounding_mode=None):
    """``self /= other`` (an integer tensor can't hold a true quotient: use ``rounding_mode``)."""
    return apply_inplace(self, lambda cur: cur.div(other, rounding_mode=rounding_mode), _tensors(other),
                         saves_self=True)


@tensor_method()
def clamp_(self, min=None, max=None):  # noqa: A002 - PyTorch's names
    """Clamp ``self`` into ``[min, max]`` in place."""
    return apply_inplace(self, lambda cur: clamp(cur, min, max), _tensors(min, max), saves_self=True)


# -- indexed writes --------------------------------------------------------------------
@tensor_method()
def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """In-place :func:`ember.scatter` (``src`` a tensor or a number; ``reduce='add'`` or ``'multiply'``).

    >>> import ember
    >>> ember.zeros(3).scatter_(0, ember.tensor([2]), 1.0, reduce='add')
    tensor([0., 0., 1.])
    """
    if src is None:
        src = value
    return apply_inplace(self, lambda cur: scatter(cur, dim, index, src, reduce=reduce), _tensors(src))


@tensor_method()
def scatter_add_(self, dim, index, src):
    """In-place :func:`ember.scatter_add`."""
    return apply_inplace(self, lambda cur: scatter_add(cur, dim, index, src), (src,))


@tensor_method()
def index_add_(self, dim, index, source, *, alpha=1):
    """In-place :func:`ember.index_add`."""
    return apply_inplace(self, lambda cur: index_add(cur, dim, index, source, alpha=alpha), (source,))


@tensor_method()
def index_put_(self, indices, values, accumulate=False):
    """In-place :func:`ember.index_put`."""
    return apply_inplace(self, lambda cur: index_put(cur, indices, values, accumulate), _tensors(values))


@tensor_method()
def masked_fill_(self, mask, value):
    """Write ``value`` where ``mask`` (broadcast to ``self``) is True."""
    return apply_inplace(self, lambda cur: masked_fill(cur, mask, value), _tensors(value))


@tensor_method("__setitem__")
def _setitem(self, key, value):
    """``self[key] = value``: ``value`` (a number, list or tensor) broadcast into the indexed region."""
    basic, adv = split_key(self, key)
    target = index_view(self, basic) if any(k is not Ellipsis and k != slice(None) for k in basic) else self
    if not adv:
        if isinstance(value, Tensor):
            while value._data.ndim > target._data.ndim and value._data.shape[0] == 1:
                value = value.squeeze(0)  # PyTorch drops leading size-1 dims of the value here
            copy_(target, value)
        elif isinstance(value, (int, float, bool)):
            fill_(target, value)
        else:
            copy_(target, tensor(value, dtype=self._dtype, device=self._device))
        return
    if not isinstance(value, (Tensor, int, float, bool)):
        value = tensor(value, dtype=self._dtype, device=self._device)
    plan = make_plan(target, adv)
    apply_inplace(target, lambda cur: put_advanced(cur, plan, value, False), _tensors(value))

