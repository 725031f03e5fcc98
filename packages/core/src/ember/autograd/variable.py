"""``ember.autograd.Variable``: the wrapper of PyTorch before 0.4, kept so that old programs run.

Since PyTorch 0.4 a tensor is what a Variable was: ``Variable(t, requires_grad=True)`` returns a tensor that shares
``t``'s data, without its history, with ``requires_grad`` set; ``isinstance(t, Variable)`` is True for every tensor;
``volatile=True`` has no effect (use ``ember.no_grad()``), with PyTorch's warning.

>>> import ember
>>> from ember.autograd import Variable
>>> v = Variable(ember.ones(2), requires_grad=True)
>>> type(v).__name__, v.requires_grad, isinstance(ember.zeros(1), Variable)
('Tensor', True, True)
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)``: ``data`` (a tensor) detached, with
    ``requires_grad`` set."""

    def __new__(cls, data, requires_grad: bool = False, volatile: bool = False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with ember.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        return data.detach().requires_grad_(requires_grad)
