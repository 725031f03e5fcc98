"""Ending the whole job when one rank fails (a minimal stand-in, to be reconciled with the launcher's version).

>>> from ember.distributed._failure import install_failure_handler
>>> callable(install_failure_handler)
True
"""
from __future__ import annotations

import sys
import traceback
from typing import Callable

__all__ = ["install_failure_handler"]


def install_failure_handler(rank: int, abort: Callable[[int], None]) -> None:
    """Make an uncaught exception on this rank print its traceback, each line prefixed with ``[rank N]``, to stderr
    and then call ``abort(1)``, which ends every rank of the job (``MPI.COMM_WORLD.Abort``), so that the other ranks
    never wait for this one.

    >>> import sys
    >>> from ember.distributed._failure import install_failure_handler
    >>> previous = sys.excepthook
    >>> install_failure_handler(0, lambda code: None)
    >>> sys.excepthook is previous
    False
    >>> sys.excepthook = previous
    """
    def hook(exc_type, exc, tb):
        text = "".join(traceback.format_exception(exc_type, exc, tb))
        sys.stderr.write("".join(f"[rank {rank}] {line}\n" for line in text.rstrip("\n").split("\n")))
        sys.stderr.flush()
        abort(1)

    sys.excepthook = hook
