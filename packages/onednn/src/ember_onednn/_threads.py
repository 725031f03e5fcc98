"""oneDNN's threads follow NumPy's BLAS: the same count, so that the two pools share the cores instead of fighting.

oneDNN (the GNU OpenMP build) runs on libgomp's pool, whose size is ``OMP_NUM_THREADS`` when set (libgomp reads it
itself, and it is respected as is). Otherwise OpenBLAS's own variables decide how many threads NumPy's BLAS runs
(``OPENBLAS_NUM_THREADS``, then ``GOTO_NUM_THREADS``), and the OpenMP pool is given the same number with
``omp_set_num_threads``: in each thread that runs a oneDNN kernel (it is a per-thread setting in OpenMP), before the
first. With none of these variables set, both use every core.

>>> from ember_onednn import _threads
>>> _threads.blas_threads({"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "1"}) is None  # OpenMP's own
True
>>> _threads.blas_threads({"OPENBLAS_NUM_THREADS": "2"})
2
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading

#: OpenBLAS's variables, in the order it reads them (OMP_NUM_THREADS, its last, libgomp reads too)
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS")

_done = threading.local()


def blas_threads(environ=os.environ) -> int | None:
    """The thread count to give oneDNN's OpenMP pool: NumPy's BLAS's from its variables; None to leave libgomp's
    own (``OMP_NUM_THREADS`` is set, or nothing is: every core)."""
    if environ.get("OMP_NUM_THREADS", "").strip():
        return None
    for name in BLAS_VARIABLES:
        value = environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


@functools.cache
def _setter():
    """``omp_set_num_threads`` of the libgomp that oneDNN loaded, and the count to set (None: nothing to do)."""
    count = blas_threads()
    if count is None:
        return None
    return ctypes.CDLL("libgomp.so.1").omp_set_num_threads, count


def follow_blas() -> None:
    """Give this thread's OpenMP pool NumPy's BLAS thread count, once per thread (cheap after the first call)."""
    if getattr(_done, "set", False):
        return
    setter = _setter()
    if setter is not None:
        setter[0](setter[1])
    _done.set = True
