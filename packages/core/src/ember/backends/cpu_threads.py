"""The CPU backend's thread count and its parallel-for: NumPy calls that release the GIL, split over a persistent
pool of threads along the leading axis.

``ember.set_num_threads(n)`` sets both NumPy's BLAS pool (through ``threadpoolctl``) and this pool; by default
the count is the BLAS's (``OPENBLAS_NUM_THREADS`` and friends, else the core count). :func:`parallel_for` runs
``fn(start, stop)`` over ``get_num_threads()`` slices of ``range(n)``, the caller's thread taking the first; it
runs inline for one thread, for fewer than :data:`MIN_ITEMS` items' worth of work, and when called from one of
the pool's threads (re-entrancy). Every wait is bounded by :data:`WAIT_S`; an error in a slice is re-raised in the
caller with its traceback.

>>> import numpy as np
>>> from ember.backends import cpu_threads
>>> out = np.empty(8)
>>> def half(start, stop):
...     out[start:stop] = np.arange(start, stop) / 2
>>> cpu_threads.parallel_for(8, half, size=8)
>>> out.tolist()
[0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["set_num_threads", "get_num_threads", "single_thread_blas", "parallel_for", "MIN_ITEMS", "WAIT_S"]

#: the least number of array elements worth splitting (measured: a ReLU of 2**20 float32 took 0.89x the one-thread
#: time at 2 threads, of 2**18 2.1x: waking a sleeping thread costs ~50 us on this machine)
MIN_ITEMS = 1 << 20
#: the longest a caller waits for one slice, in seconds (then TimeoutError: never a hang)
WAIT_S = 300.0
_BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

_lock = threading.Lock()
_count: int | None = None
_pool: ThreadPoolExecutor | None = None
_inside = threading.local()
_blas_single = False  # single_thread_blas() was called: NumPy's BLAS keeps one thread


def _default_count(environ=os.environ) -> int:
    """NumPy's BLAS's thread count as ``threadpoolctl`` reads it, else its variables', else the usable cores."""
    import threadpoolctl  # type: ignore[import-untyped]

    counts = [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]
    if counts:
        return max(counts)
    for name in _BLAS_VARIABLES:
        value = environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def get_num_threads() -> int:
    """The number of threads ember's CPU kernels and NumPy's BLAS use (PyTorch's ``torch.get_num_threads``).

    >>> import ember
    >>> ember.get_num_threads() >= 1
    True
    """
    global _count
    if _count is None:
        _count = _default_count()
    return _count


def set_num_threads(n: int) -> None:
    """Use ``n`` threads on the CPU: in NumPy's BLAS (set at run time with ``threadpoolctl``) and in ember's own
    parallel kernels (ReLU, pooling). Results do not depend on ``n``.

    >>> import ember
    >>> before = ember.get_num_threads()
    >>> ember.set_num_threads(1)
    >>> ember.get_num_threads()
    1
    >>> ember.set_num_threads(before)
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_threads expects an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"set_num_threads expects a positive number of threads, got {n}")
    import threadpoolctl

    global _count, _pool
    with _lock:
        threadpoolctl.threadpool_limits(limits=1 if _blas_single else n, user_api="blas")
        _count = n
        old, _pool = _pool, None
    if old is not None:
        old.shutdown(wait=False)


def single_thread_blas() -> None:
    """Keep NumPy's BLAS at one thread from now on; ember's count (:func:`get_num_threads`) stays as it was.

    A plugin that takes ember's float32 matrix products onto its own thread pool calls this (ember-onednn's GEMM):
    OpenBLAS's threads spin for about 0.1 s after each product they share, so with two pools both spinning each
    took cores from the other (an LSTM step at two threads: 1.3x PyTorch's time with OpenBLAS alone, 2.0-2.2x with
    both pools). What still runs on NumPy's BLAS (float64, small products) then runs on the calling thread.
    """
    import threadpoolctl

    global _blas_single
    get_num_threads()  # ember's count is read from the BLAS's before it is limited
    with _lock:
        _blas_single = True
        threadpoolctl.threadpool_limits(limits=1, user_api="blas")


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads do not exist there, so a new pool is made on first use."""
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _mark_inside() -> None:
    _inside.flag = True


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(get_num_threads() - 1, 1), thread_name_prefix="ember-cpu",
                                       initializer=_mark_inside)
        return _pool


def parallel_for(n: int, fn, size: int) -> None:
    """Run ``fn(start, stop)`` over slices of ``range(n)``, one per thread; ``size`` is the work's number of
    array elements, which decides whether splitting pays (:data:`MIN_ITEMS`). ``fn`` must write disjoint parts of
    its outputs, so the result is the same for every thread count."""
    threads = min(get_num_threads(), n)
    if threads <= 1 or size < MIN_ITEMS or getattr(_inside, "flag", False):
        fn(0, n)
        return
    bounds = [n * i // threads for i in range(threads + 1)]
    pool = _executor()
    futures = [pool.submit(fn, bounds[i], bounds[i + 1]) for i in range(1, threads)]
    try:
        fn(bounds[0], bounds[1])
    finally:
        errors = []
        for future in futures:  # wait for every slice before returning (or raising): they write the outputs
            try:
                future.result(timeout=WAIT_S)
            except BaseException as error:  # noqa: BLE001 - re-raised below with its traceback
                errors.append(error)
    if errors:
        raise errors[0]

