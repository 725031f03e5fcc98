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

__all__ = ["Parameter", "Buffer"]


def _alias(cls, data):
    """A ``cls`` tensor over ``data``'s array and version counter (no copy, no autograd history)."""
    if not isinstance(data, Tensor):
        raise TypeError(f"{cls.__name__}(): data must be a Tensor, but got {type(data).__name__}")
    t = cls._sharing(data._data, data._device, data._dtype, data._vc)
    take_memory_count(t, data)
    return t


def take_memory_count(t, source):
    """Let ``t``, which now holds ``source``'s array, count that memory instead of the tensor owning it.

    The owner then keeps ``t`` alive, so the bytes stay counted exactly once
    for as long as either of them lives.
    """
    owner = source._base if source._base is not None else source
    if owner._nbytes and owner is not t:
        t._nbytes, owner._nbytes = owner._nbytes, 0
        owner._accounted_by = t
    else:
        t._nbytes = 0


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
        p = _alias(cls, empty(0) if data is None else data)
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
        b = _alias(cls, empty(0) if data is None else data)
        b.persistent = persistent
        return b

    def __repr__(self):
        return repr(self.detach())  # prints as the plain tensor it becomes in a module
