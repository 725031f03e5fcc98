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

__all__ = ["MPI", "start", "abandon"]

#: set when an operation was abandoned half-way (timed out): MPI_Finalize would wait for it forever
_abandoned = []


def start() -> None:
    """Start MPI (with thread support) unless it runs already, and have it finalized when the interpreter exits."""
    if MPI.Is_finalized():
        raise RuntimeError("MPI was finalized already in this process; it cannot be started again")
    if not MPI.Is_initialized():
        MPI.Init_thread(MPI.THREAD_MULTIPLE)
        atexit.register(_finalize)


def abandon() -> None:
    """Say that an operation was abandoned half-way: at exit, MPI is then not finalized (which would wait for the
    operation forever); the process just ends, and mpiexec ends the job."""
    _abandoned.append(True)


def _finalize() -> None:
    if MPI.Is_initialized() and not MPI.Is_finalized() and not _abandoned:
        MPI.Finalize()
