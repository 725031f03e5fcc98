"""Parameter and Buffer: tensors that a Module registers as its parameters or buffers.

>>> import ember
>>> p = ember.nn.Parameter(ember.ones(2))
>>> p
Parameter containing:
tensor([1., 1.], requires_grad=True)
>>> isinstance(p, ember.Tensor), type(p * 2).__name__
(True, 'Tensor')
"""
from __future__ import annotations

from ember import Tensor, empty
from ember._sibling_api import share_storage

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning it to a Module attribute registers it.

    It shares ``data``'s memory; it requires grad unless ``requires_grad=False``.
    Ops on a Parameter give plain tensors.

    >>> import ember
    >>> ember.nn.Parameter(ember.zeros(2), requires_grad=False)
    Parameter containing:
    tensor([0., 0.])
    """

    def __new__(cls, data=None, requires_grad=True):
        p = share_storage(cls, empty(0) if data is None else data)
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result


class Buffer(Tensor):
    """Marks a tensor as a buffer: assigning it to a Module attribute registers it (``persistent`` or not).

    The module keeps a plain tensor; ``Buffer`` only carries the intent.

    >>> import ember
    >>> m = ember.nn.Module()
    >>> m.steps = ember.nn.Buffer(ember.zeros(1), persistent=False)
    >>> list(m.state_dict()), type(m.steps).__name__
    ([], 'Tensor')
    """

    def __new__(cls, data=None, *, persistent=True):
        b = share_storage(cls, empty(0) if data is None else data)
        b.persistent = persistent
        return b

    def __repr__(self):
        return repr(self.detach())  # prints as the plain tensor it becomes in a module
