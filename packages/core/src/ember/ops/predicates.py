"""Questions about a tensor as functions: ``numel``, ``is_nonzero``, ``is_floating_point``, ``is_same_size``.

>>> import ember
>>> ember.is_nonzero(ember.tensor([1.5]))
True
>>> ember.numel(ember.zeros(2, 3))
6
"""
from __future__ import annotations

from ._common import tensor_method

__all__ = ["numel", "is_nonzero", "is_floating_point", "is_same_size"]


def numel(input) -> int:
    """Number of elements of ``input``."""
    return input.numel()


@tensor_method()
def is_nonzero(input) -> bool:
    """Whether a single-element tensor is not zero (``False`` for ``0``, ``0.``, ``False``)."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def is_floating_point(input) -> bool:
    """Whether ``input`` has a floating dtype."""
    return input.is_floating_point()


@tensor_method()
def is_same_size(input, other) -> bool:
    """Whether both tensors have the same shape."""
    return tuple(input.shape) == tuple(other.shape)
