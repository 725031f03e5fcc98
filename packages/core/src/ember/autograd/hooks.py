"""Removable handles for hooks on tensors, graph nodes and modules."""
import itertools

_ids = itertools.count()


class RemovableHandle:
    """Returned by ``register_*hook``; ``handle.remove()`` takes the hook out again.

    >>> import ember
    >>> x = ember.ones(2, requires_grad=True)
    >>> h = x.register_hook(lambda g: g * 2)
    >>> h.remove()
    """

    __slots__ = ("_hooks", "id")

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = next(_ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(hooks: dict, fn) -> RemovableHandle:
    if not callable(fn):
        raise TypeError(f"a hook must be callable, got {type(fn).__name__}")
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle
