"""Switching gradient recording on and off: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Each works as a context manager and as a decorator, per thread, as in PyTorch.

>>> import ember
>>> x = ember.ones(2, requires_grad=True)
>>> with ember.no_grad():
...     (x * 2).requires_grad
False
"""
from __future__ import annotations

import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _State(threading.local):
    enabled = True
    inference = False
    #: the thread's autocast state while an ``ember.autocast`` region is on, else None (read by ``Op.apply``)
    autocast = None


STATE = _State()

#: how many threads have an ``ember.autocast`` region on, plus how many ONNX export traces run (changed through
#: :func:`detour`). While it is zero (a list item read, ~10 ns) ``Op.apply`` skips reading ``STATE.autocast`` (a
#: thread-local read, ~50 ns) and ``Op.apply1``/``apply2`` take their short path; otherwise those hand each call
#: to ``Op.apply``, which casts or records it.
DETOURS = [0]
_DETOURS_LOCK = threading.Lock()


def detour(delta: int) -> None:
    """Count an autocast region or export trace starting (``+1``) or ending (``-1``) in some thread."""
    with _DETOURS_LOCK:
        DETOURS[0] += delta


#: the threads (by ident) that have grad mode off, changed through :func:`set_enabled`. While it is empty, grad
#: mode is on in every thread, and the hot paths of ``Op`` skip reading ``STATE.enabled`` (a thread-local read,
#: ~50 ns, against ~10 ns for this test). A set's add and discard need no lock; a thread that ends with grad mode
#: off leaves its ident behind, which only sends ops back to reading ``STATE.enabled``.
GRAD_OFF: set = set()


def set_enabled(enabled: bool, was: bool | None = None) -> None:
    """Switch this thread's grad mode (``STATE.enabled``, ``was`` when the caller has just read it), keeping
    :data:`GRAD_OFF`."""
    if (STATE.enabled if was is None else was) != enabled:
        STATE.enabled = enabled
        if enabled:
            GRAD_OFF.discard(_get_ident())
        else:
            GRAD_OFF.add(_get_ident())


_get_ident = threading.get_ident


def is_grad_enabled() -> bool:
    """Whether ops on tensors that require grad record a backward graph in this thread."""
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _Mode:
    """Base of the grad-mode switches: a context manager that is also a decorator."""

    def _target(self):
        raise NotImplementedError

    def __enter__(self):
        prev = self._prev = (STATE.enabled, STATE.inference)
        enabled, STATE.inference = self._target()
        set_enabled(enabled, prev[0])
        return self

    def __exit__(self, *exc):
        enabled, STATE.inference = self._prev
        set_enabled(enabled)
        return False

    def clone(self):
        return type(self)()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_Mode):
    """Do not record operations for autograd (evaluation, weight updates).

    >>> import ember
    >>> @ember.no_grad()
    ... def step(w):
    ...     return w * 2
    >>> step(ember.ones(1, requires_grad=True)).requires_grad
    False
    """

    def _target(self):
        return False, STATE.inference


class enable_grad(_Mode):
    """Record operations again inside a ``no_grad`` block."""

    def _target(self):
        return True, False


class set_grad_enabled(_Mode):
    """Turn recording on or off: as a call it takes effect at once, as a context it is restored on exit."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled() expects a bool, got {type(mode).__name__}")
        self.mode = mode
        prev = self._prev = (STATE.enabled, STATE.inference)
        set_enabled(mode, prev[0])

    def _target(self):
        return self.mode, STATE.inference

    def __enter__(self):
        return self  # already switched in __init__, like PyTorch

    def clone(self):
        return set_grad_enabled(self.mode)

    def __call__(self, fn):
        enabled, STATE.inference = self._prev
        set_enabled(enabled)
        return super().__call__(fn)


class inference_mode(_Mode):
    """Like ``no_grad``, for pure inference; ``inference_mode(False)`` turns recording back on.

    ember has no separate inference-tensor type: inside this mode nothing is
    recorded, exactly as under ``no_grad``.
    """

    def __init__(self, mode: bool = True):
        self.mode = mode

    def _target(self):
        if not self.mode:
            return True, False  # as in PyTorch, inference_mode(False) records again
        return False, True

    def clone(self):
        return inference_mode(self.mode)
