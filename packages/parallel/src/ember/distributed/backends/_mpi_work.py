"""The MPI backend's ``Work``: an operation written as a generator of phases, each a set of nonblocking MPI requests,
driven by ``MPI.Request.Test`` until the group's deadline, so that no wait is unbounded.

An operation's generator yields :class:`Pending` phases; the work tests the phase's requests and resumes the
generator when they completed. A phase still pending at the deadline names, in the timeout error, who or what was
missing (``Pending.missing()``). Creating a work posts its first phase and returns: nothing blocks until ``wait()``.
A collective's first phase is the ranks' arrival (their metadata exchange, marked ``arrival``); the work advances
in stages on ``is_completed()`` and ``wait()``: metadata complete and consistent, data transfer posted, complete.
MPI requires every rank to post a communicator's collectives in the same order, so the works of a group whose
transfer is not posted yet wait in the group's ``queue``, oldest first: advancing a work advances the older ones
first, and a work posts its transfer only once every older one has posted its own (or failed the same way on every
rank, as a metadata mismatch does).
"""
from __future__ import annotations

import time
from collections import deque

from .._errors import DistBackendError
from ..backend import Work
from ._mpi_import import abandon

__all__ = ["MPIWork", "Pending"]

#: waits shorter than this poll MPI in a tight loop (MPI moves data only while it is called); longer ones sleep a
#: little between polls, so that a rank waiting for a late peer leaves the CPU to the others
_SPIN_S = 0.2
_NAP_S = 0.0005


class Pending:
    """A phase of an operation: ``requests`` to complete and ``missing()``, the text a timeout error gives for who
    or what did not arrive; ``arrival`` marks the phases before a collective's transfer is posted (the ranks'
    meeting), which the group's works go through in order."""

    __slots__ = ("requests", "missing", "arrival", "_next")

    def __init__(self, requests, missing, arrival=False):
        self.requests, self.missing, self.arrival = requests, missing, arrival
        self._next = 0  # requests before this one completed

    def done(self) -> bool:
        """Whether every request completed (one ``Test`` each, cheaper than ``Testall`` on a list)."""
        requests = self.requests
        while self._next < len(requests):
            if not requests[self._next].Test():
                return False
            self._next += 1
        return True


class MPIWork(Work):
    """A handle on one operation of an :class:`~ember.distributed.backends.mpi.MPIBackend`; creating it posts the
    operation's first phase. ``queue`` (a collective's: its group's deque of works not yet past their arrival) orders
    the posting of the transfers."""

    def __init__(self, backend, name: str, steps, seq: int | None = None, queue: deque | None = None):
        self._backend = backend
        self._name, self._seq = name, seq  # a collective's number on its group, for messages
        self._steps = steps
        self._pending = None
        self._finished = False
        self._error = None
        self._result = None
        self._deadline = time.monotonic() + backend.timeout_s
        self._queue = queue
        self._step(first=True)
        if queue is not None and self._arriving():
            queue.append(self)

    def _arriving(self) -> bool:
        """Whether the operation is in a phase before its transfer (it must not pass it before older works)."""
        return not self._finished and self._pending.arrival

    def _advance(self) -> bool:
        """Move the operation on as far as it goes without blocking (the group's older works first); True when it
        has finished."""
        if self._finished:
            return True
        queue = self._queue
        if queue is not None and self._arriving():
            while queue[0] is not self:  # older works post their transfers first
                older = queue[0]
                older._step()
                if older._arriving():
                    return False
                queue.popleft()
            self._step()
            if not self._arriving():
                queue.popleft()
            return self._finished
        self._step()
        return self._finished

    def _step(self, first: bool = False) -> None:
        """Resume the generator while its phase completed (only to its first phase when ``first``)."""
        if self._finished:
            return
        try:
            if first:
                self._pending = next(self._steps)
                return
            while self._pending.done():
                self._pending = next(self._steps)
        except StopIteration as stop:
            self._result = stop.value
            self._finished = True
        except BaseException as exc:
            self._finished, self._error = True, exc

    def _poll(self, deadline: float) -> None:
        start = None
        while not self._advance():
            now = time.monotonic()
            if start is None:
                start = now
            elif now - start > _SPIN_S:
                time.sleep(_NAP_S)
            if now > deadline:
                self._time_out(now - start, deadline == self._deadline)
        if self._error is not None:
            raise self._error

    def is_completed(self) -> bool:
        return self._advance()

    def exception(self):
        return self._error

    def wait(self, timeout=None) -> bool:
        deadline = self._deadline
        if timeout is not None:
            deadline = min(deadline, time.monotonic() + timeout.total_seconds())
        self._poll(deadline)
        return True

    def source_rank(self) -> int:
        if not self._finished or self._result is None:
            return super().source_rank()
        return self._result

    def _description(self) -> str:
        """``all_reduce (operation #3 on the default group)``, ``send to rank 1``."""
        if self._seq is None:
            return self._name
        return f"{self._name} (operation #{self._seq} on {self._backend.label})"

    def _time_out(self, waited: float, group_deadline: bool) -> None:
        rank = self._backend.global_rank
        if group_deadline:  # abandoned half-way: the group cannot be used any more
            error = DistBackendError(f"[rank {rank}] {self._description()} timed out after "
                                     f"{self._backend.timeout_s:g} s (the group's timeout): {self._pending.missing()}")
            self._finished, self._error = True, error
            self._backend.broken = str(error)
            abandon()
            raise error
        raise DistBackendError(f"[rank {rank}] {self._description()}: wait() timed out after {waited:.3g} s; the "
                               f"operation goes on: {self._pending.missing()}")
