"""A rank that raises ends the whole job: an uncaught exception is printed with its rank and the job is aborted.

Without this, a rank whose script raises would run Python's normal shutdown, whose ``MPI_Finalize`` waits for
ranks that are themselves waiting in a collective for the failed rank: the job would hang with the traceback
hidden among the other ranks' output. ``init_process_group`` installs the handler with
``lambda code: MPI.COMM_WORLD.Abort(code)``; MPICH's ``mpiexec`` then ends every rank within a second or so and
exits with the code given to ``Abort``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

# mpiexec's proxy forwards what the rank wrote while the job runs, but an abort can end it before it read the
# traceback from its pipe (MPICH 5.0: about one time in ten); this pause lets it read first
_OUTPUT_GRACE_S = 0.2
_lock = threading.Lock()  # two threads failing at once: one prints and aborts, the other waits to be killed


def install_failure_handler(rank: int, abort: Callable[[int], None]) -> None:
    """Make an uncaught exception on this rank print its traceback labelled with ``rank`` and call ``abort(1)``.

    Replaces ``sys.excepthook`` (the main thread) and ``threading.excepthook`` (any other thread; a thread that
    raises ``SystemExit`` stays silent, as by default). The handler writes every line of the traceback to
    stderr as ``[rank R] ...``, flushes stdout and stderr (``MPI_Abort`` ends the process without Python's
    buffers being written), waits 0.2 s (so that ``mpiexec`` forwards that output before the abort ends it),
    then calls ``abort(1)``. Should ``abort`` return (MPICH's may, once it has asked ``mpiexec`` to end the
    job) or raise, the process still ends with ``os._exit(1)``, so a failed rank never reaches the
    interpreter's normal shutdown. Calling it again replaces the earlier handler.

    Example (``init_process_group`` does this for you)::

        from mpi4py import MPI
        from ember.distributed._failure import install_failure_handler

        install_failure_handler(MPI.COMM_WORLD.Get_rank(), lambda code: MPI.COMM_WORLD.Abort(code))
        raise ValueError("boom")  # stderr: "[rank 1] Traceback (most recent call last): ..." and the job ends

    >>> import sys, threading
    >>> saved = sys.excepthook, threading.excepthook
    >>> calls = []
    >>> install_failure_handler(3, calls.append)
    >>> sys.excepthook is saved[0]
    False
    >>> sys.excepthook, threading.excepthook = saved
    """
    if not isinstance(rank, int) or isinstance(rank, bool):
        raise TypeError(f"install_failure_handler: rank must be an int, got {type(rank).__name__} {rank!r}")
    if rank < 0:
        raise ValueError(f"install_failure_handler: rank must be non-negative, got {rank}")
    if not callable(abort):
        raise TypeError(f"install_failure_handler: abort must be a callable taking an exit code, got {abort!r}")

    def excepthook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        _report_and_abort(rank, abort, traceback.format_exception(exc_type, exc, tb))

    def thread_excepthook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        name = args.thread.name if args.thread is not None else "<unknown>"
        lines = [f"Exception in thread {name}:\n", *traceback.format_exception(args.exc_type, args.exc_value,
                                                                                args.exc_traceback)]
        _report_and_abort(rank, abort, lines)

    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook


def _report_and_abort(rank: int, abort: Callable[[int], None], chunks: list[str]) -> None:
    """Write ``chunks`` (traceback text) to stderr, each line prefixed ``[rank R] ``, then end the job."""
    with _lock:
        text = "".join(chunks).rstrip("\n")
        _write(sys.stdout, "")
        _write(sys.stderr, "".join(f"[rank {rank}] {line}\n" for line in text.split("\n")))
        time.sleep(_OUTPUT_GRACE_S)
        try:
            abort(1)  # MPICH's MPI_Abort may return once it has asked mpiexec to end the job
        except BaseException as err:  # whatever abort did, this process must not reach the normal shutdown
            _write(sys.__stderr__, f"[rank {rank}] abort(1) raised {err!r}; ending this process with os._exit(1)\n")
        os._exit(1)


def _write(stream: TextIO | None, text: str) -> None:
    """Write and flush, ignoring a closed or broken stream (it must not keep the job from ending)."""
    if stream is None:
        return
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        pass
