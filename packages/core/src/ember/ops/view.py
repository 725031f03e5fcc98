"""Ops whose result shares storage with the input: ``view``, ``reshape`` (when it can), ``expand``.

A view shares its base's memory and version counter, so an in-place change
through one is seen (and version-checked) through the other.

>>> import ember
>>> x = ember.zeros(2, 3); v = x.view(6); v[0] = 1.0
>>> x[0, 0]
tensor(1.)
"""
from __future__ import annotations

import math

from ..autograd.function import Op
from ._common import Tensor, tensor_method

__all__ = ["reshape"]


def infer_shape(shape, numel, fn="view") -> tuple:
    """Resolve one ``-1`` in ``shape`` and check that the element count matches."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:neg[0]] + (numel // known,) + shape[neg[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class View(Op):
    is_view = True

    @staticmethod
    def forward(ctx, xp, a, shape=None):
        ctx.shape = a.shape
        try:
            return xp.reshape(a, shape, copy=False)
        except (ValueError, AttributeError, TypeError):
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                               "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
                               ) from None

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)


class Reshape(Op):
    name_ = "reshape"
    backward_name = "ReshapeAliasBackward0"

    @staticmethod
    def forward(ctx, xp, a, shape=None):
        ctx.shape = a.shape
        return xp.reshape(a, shape, copy=True)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)


class Expand(Op):
    is_view = True

    @staticmethod
    def forward(ctx, xp, a, shape=None):
        ctx.shape = a.shape
        return xp.broadcast_to(a, shape)

    @staticmethod
    def backward(ctx, g):
        from ._common import sum_to
        return sum_to(g, ctx.shape)


@tensor_method()
def view(self, *shape):
    """The same data with another shape, sharing memory; ``-1`` infers one size.

    Raises if the strides do not allow it (use :func:`reshape`), or if given
    a dtype (reinterpreting bytes is not supported).
    """
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)):
        raise TypeError(f"view(): expected a shape (ints), got {shape[0]!r}; "
                        "reinterpreting memory as another dtype is not supported")
    return View.apply(self, shape=infer_shape(shape, self._data.size))


@tensor_method()
def reshape(input, *shape):
    """``input`` with a new shape: a view when the strides allow, a copy otherwise."""
    shape = infer_shape(shape, input._data.size, "reshape")
    try:
        return View.apply(input, shape=shape)
    except RuntimeError:
        return Reshape.apply(input, shape=shape)


@tensor_method()
def expand(self, *sizes):
    """A broadcast view with size-1 dimensions repeated (no copy); ``-1`` keeps a size."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    nd = self._data.ndim
    if len(sizes) < nd:
        raise RuntimeError(f"expand(ember.{self.dtype.name} {list(self.shape)}, size={list(sizes)}): the number "
                           f"of sizes provided ({len(sizes)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({nd})")
    lead = len(sizes) - nd
    shape = []
    for i, s in enumerate(sizes):
        own = self._data.shape[i - lead] if i >= lead else None
        if s == -1:
            if own is None:
                raise RuntimeError("expand(): -1 is not allowed in a leading, non-existing dimension")
            s = own
        elif own is not None and own != s and own != 1:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({own}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(self.shape)}")
        shape.append(int(s))
    shape = tuple(shape)
    if shape == tuple(self._data.shape):
        return View.apply(self, shape=shape)
    return Expand.apply(self, shape=shape)


@tensor_method()
def expand_as(self, other):
    return self.expand(other.shape)

