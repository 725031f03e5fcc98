"""What a process-group backend provides: the contract a plugin's backend fulfils, and the ``Work`` handle.

A backend plugin (see :mod:`ember.distributed.hookspec`) gives a factory that builds a :class:`Backend` for the
default group; the backend builds the ones of its subgroups (:meth:`Backend.new_group`). ``ember.distributed``
checks the arguments that one rank can check on its own (types, devices the backend serves, contiguity, list
lengths, ranks), turns global ranks into group ranks and then calls the backend, which moves the data, checks what
only all ranks together can (that their tensors agree), honours the group's timeout and returns a :class:`Work`.

>>> from ember.distributed.backend import Backend, Work
>>> sorted(name for name in vars(Backend) if not name.startswith("_"))[:4]
['abort', 'all_gather', 'all_gather_into_tensor', 'all_reduce']
"""
from __future__ import annotations

import datetime

__all__ = ["Backend", "Work"]


class Work:
    """A handle on an operation in flight, returned by a collective called with ``async_op=True`` and by
    ``isend``/``irecv`` (PyTorch's ``Work``).

    ``wait(timeout=None)`` blocks until the operation completed (at most ``timeout``, a ``datetime.timedelta``,
    and never beyond the group's timeout) and raises what the operation raised; ``is_completed()`` checks without
    blocking (and moves the operation on).

    >>> import ember.distributed as dist
    >>> class Done(dist.Work):
    ...     def is_completed(self): return True
    ...     def wait(self, timeout=None): return True
    >>> Done().wait(), Done().is_success()
    (True, True)
    """

    def is_completed(self) -> bool:
        """Whether the operation has finished, successfully or not."""
        raise NotImplementedError

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Block until the operation has finished; raise its error if it failed. Returns True."""
        raise NotImplementedError

    def exception(self) -> BaseException | None:
        """The error the operation failed with, or None."""
        return None

    def is_success(self) -> bool:
        """Whether the operation has finished without an error."""
        return self.is_completed() and self.exception() is None

    def source_rank(self) -> int:
        """For a finished ``irecv``: the global rank of the sender."""
        raise RuntimeError(f"{type(self).__name__}.source_rank() is only available for a finished irecv")


class Backend:
    """One rank's side of a process group on some communication engine.

    Ranks passed to the methods are group ranks (0 .. size-1); every tensor passed is contiguous, on a device that
    :meth:`supports_device` accepted, and already checked against what this rank alone can check. Each operation
    returns a :class:`Work`; ``ember.distributed`` waits on it unless the caller asked for ``async_op=True``.
    A backend must detect tensors that disagree across ranks (shapes, dtypes, roots, reduce ops) and raise naming
    the ranks, and must give up after ``timeout`` with :class:`~ember.distributed.DistBackendError`.
    """

    #: the name the backend is registered under (``"mpi"``)
    name: str = ""

    def rank(self) -> int:
        raise NotImplementedError

    def size(self) -> int:
        raise NotImplementedError

    def supports_device(self, device) -> bool:
        """Whether this backend moves tensors on ``device`` (an ``ember.device``)."""
        raise NotImplementedError

    def refusal(self, device) -> str:
        """What to do with a tensor on ``device``, which :meth:`supports_device` refused (ends the error message)."""
        return (f"move it (e.g. .cpu()), or use a backend for {device.type} tensors (backends come from plugins, "
                "see ember.distributed.hookspec)")

    def new_group(self, ranks: list[int], timeout: datetime.timedelta) -> Backend | None:
        """Called on every rank of this (the default) group with the same sorted global ``ranks``: the backend of
        the subgroup of those ranks, or None on a rank outside it."""
        raise NotImplementedError

    def abort(self, code: int) -> None:
        """End every process of the job now, with exit status ``code`` (called when a rank fails)."""
        raise NotImplementedError

    def shutdown(self) -> None:
        """Release what the backend holds (communicators, buffers); it is not used afterwards."""

    def barrier(self) -> Work:
        raise NotImplementedError

    def all_reduce(self, tensor, op) -> Work:
        raise NotImplementedError

    def broadcast(self, tensor, root: int) -> Work:
        raise NotImplementedError

    def reduce(self, tensor, root: int, op) -> Work:
        raise NotImplementedError

    def all_gather(self, outputs: list, tensor) -> Work:
        raise NotImplementedError

    def all_gather_into_tensor(self, output, tensor) -> Work:
        raise NotImplementedError

    def reduce_scatter_tensor(self, output, tensor, op) -> Work:
        raise NotImplementedError

    def gather(self, tensor, outputs: list | None, root: int) -> Work:
        """``outputs`` is the list of tensors on ``root``, None elsewhere."""
        raise NotImplementedError

    def scatter(self, tensor, inputs: list | None, root: int) -> Work:
        """``inputs`` is the list of tensors on ``root``, None elsewhere."""
        raise NotImplementedError

    def all_to_all_single(self, output, tensor, output_splits: list[int], input_splits: list[int]) -> Work:
        """Splits are numbers of rows (along dimension 0), one per group rank."""
        raise NotImplementedError

    def send(self, tensor, dst: int, tag: int) -> Work:
        raise NotImplementedError

    def recv(self, tensor, src: int | None, tag: int) -> Work:
        """``src`` None receives from any rank; the returned Work's ``source_rank()`` says which."""
        raise NotImplementedError
