"""``mpi4py.MPI``, imported without starting MPI: ``init_process_group`` starts it (see :func:`start`).

>>> from ember.distributed.backends._mpi_import import MPI
>>> MPI.Is_finalized()
False
"""
from __future__ import annotations

import atexit

import mpi4py

mpi4py.rc.initialize = False  # importing mpi4py.MPI would otherwise call MPI_Init
from mpi4py import MPI  # noqa: E402

__all__ = ["MPI", "start"]


def start() -> None:
    """Start MPI (with thread support) unless it runs already, and have it finalized when the interpreter exits."""
    if MPI.Is_finalized():
        raise RuntimeError("MPI was finalized already in this process; it cannot be started again")
    if not MPI.Is_initialized():
        MPI.Init_thread(MPI.THREAD_MULTIPLE)
        atexit.register(_finalize)


def _finalize() -> None:
    if MPI.Is_initialized() and not MPI.Is_finalized():
        MPI.Finalize()
