"""oneDNN's threads follow ember's count (``ember.get_num_threads()``, by default NumPy's BLAS's): the same count,
so that the pools share the cores instead of fighting.

oneDNN (the GNU OpenMP build) runs on libgomp's pool, whose size is ``OMP_NUM_THREADS`` when set (libgomp reads it
itself, and it is respected as is). Otherwise the OpenMP pool is given ``ember.get_num_threads()`` with
``omp_set_num_threads``: in each thread that runs a oneDNN kernel (it is a per-thread setting in OpenMP), before the
first, and again after ``ember.set_num_threads`` changed the count.

>>> from ember_onednn import _threads
>>> _threads.follow_blas()  # this thread's OpenMP pool: ember.get_num_threads() threads, unless OMP_NUM_THREADS
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading

import ember

_done = threading.local()


@functools.cache
def _setter():
    """``omp_set_num_threads`` of the libgomp that oneDNN loaded (None: ``OMP_NUM_THREADS`` decides)."""
    if os.environ.get("OMP_NUM_THREADS", "").strip():
        return None
    return ctypes.CDLL("libgomp.so.1").omp_set_num_threads


def follow_blas() -> None:
    """Give this thread's OpenMP pool ember's thread count, when it changed (cheap otherwise)."""
    count = ember.get_num_threads()
    if getattr(_done, "count", None) == count:
        return
    setter = _setter()
    if setter is not None:
        setter(count)
    _done.count = count
