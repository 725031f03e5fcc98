"""An exception raised in a worker thread (a replica, a pipeline stage), raised again in the caller's thread.

>>> from ember.parallel._errors import reraise
>>> try:
...     reraise("replica 1 on device cpu:1", ValueError("bad rows"))
... except ValueError as exc:
...     print(exc)
Caught ValueError in replica 1 on device cpu:1: bad rows
"""
from __future__ import annotations

__all__ = ["reraise"]


def reraise(where: str, exc: BaseException):
    """Raise an exception of ``exc``'s type (``RuntimeError`` if that type cannot be made from a message) whose
    message says ``where`` it happened, chained to ``exc`` so that its traceback is shown too."""
    message = f"Caught {type(exc).__name__} in {where}: {exc}"
    try:
        wrapped = type(exc)(message)
    except Exception:  # an exception class whose constructor wants other arguments
        wrapped = RuntimeError(message)
    raise wrapped from exc
