"""RemovableHandle: what every ``register_*_hook`` returns."""
from __future__ import annotations

import itertools

__all__ = ["RemovableHandle"]

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

    def __init__(self, hooks_dict: dict, *, extra_dict=None):
        self.id = next(_ids)
        self._dicts = [hooks_dict]  # the dicts only, never the module, so a handle keeps nothing else alive
        if extra_dict is not None:
            self._dicts += extra_dict if isinstance(extra_dict, (list, tuple)) else [extra_dict]

    def remove(self) -> None:
        """Remove the hook; removing it twice is harmless."""
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<RemovableHandle id={self.id}>"
