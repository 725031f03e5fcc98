"""``RemovableHandle`` and ``add_hook``: the hook handles of tensors, graph nodes, modules and optimizers (public
as ``ember.utils.hooks``; here, below the tensor, which registers hooks itself).

>>> import ember
>>> x = ember.ones(2, requires_grad=True)
>>> handle = x.register_hook(lambda g: g * 2)
>>> handle.remove()
"""
from __future__ import annotations

import itertools

__all__ = ["RemovableHandle", "add_hook"]

_ids = itertools.count()


class RemovableHandle:
    """Removes one hook from the dict (or dicts) it was registered in; also a context manager.

    >>> hooks = {}
    >>> handle = RemovableHandle(hooks)
    >>> hooks[handle.id] = print
    >>> with handle:
    ...     len(hooks)
    1
    >>> len(hooks)
    0
    """

    __slots__ = ("_dicts", "id")

    def __init__(self, hooks_dict: dict, *, extra_dict=None):
        self.id = next(_ids)
        self._dicts = [hooks_dict]  # the dicts only, never their owner, so a handle keeps nothing else alive
        if extra_dict is not None:
            self._dicts += extra_dict if isinstance(extra_dict, (list, tuple)) else [extra_dict]

    def remove(self) -> None:
        """Remove the hook; removing it twice is harmless."""
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<RemovableHandle id={self.id}>"


def add_hook(hooks: dict, fn) -> RemovableHandle:
    """Add ``fn`` to ``hooks`` (``{handle id: hook}``, kept in order) and return its handle.

    >>> hooks = {}
    >>> handle = add_hook(hooks, print)
    >>> list(hooks.values()) == [print]
    True
    """
    if not callable(fn):
        raise TypeError(f"a hook must be callable, got {type(fn).__name__}")
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle
