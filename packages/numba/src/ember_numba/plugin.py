"""The ``ember`` plugin of ember-numba: its hook implementation, which imports numba only when a kernel runs.

The kernels compiled with ``parallel=True`` run on numba's thread pool, which is given ``ember.get_num_threads()``
threads (at most numba's ``NUMBA_NUM_THREADS``) in each thread that calls a kernel, as ember-onednn does with
OpenMP's: with more, a pass over memory took 1.6x the CPU time of one thread for no gain in wall time on the 2-core
development VM (SGD's update of 670,000 float32: 182 against 115 µs of CPU time, 122 against 115 µs of wall time).

numba's OpenMP threading layer (``omp``, GNU OpenMP on Linux) also sets the calling thread's OpenMP thread count to
``NUMBA_NUM_THREADS`` when it starts its pool, on the first parallel kernel; every later OpenMP region of that
thread, ember-onednn's convolutions and GEMMs included, then ran on every core whatever ``OMP_NUM_THREADS`` or
``ember.set_num_threads`` said (a one-thread MLP step took 7.3 ms of CPU time in 3.4 ms). A kernel call therefore
puts the count back as it found it.

GNU OpenMP does not survive ``fork()``: numba kills a forked child that launches a parallel kernel after its parent
started the pool (a DataLoader worker, say). In such a child the parallel kernels run as serial ones instead,
compiled there from the same Python function on first use.
"""
from __future__ import annotations

import ctypes
import functools
import importlib
import os
import threading

import ember

#: hook name -> (module, function) of each compiled kernel
_KERNELS = {
    "random_uniform": ("random_kernels", "uniform"),
    "random_normal": ("random_kernels", "normal"),
    "random_integers": ("random_kernels", "integers"),
    "random_bernoulli": ("random_kernels", "bernoulli"),
    "random_permutation": ("random_kernels", "permutation"),
    "float16_to_float32": ("float16", "float16_to_float32"),
    "float32_to_float16": ("float16", "float32_to_float16"),
    "sgd_update": ("optim_kernels", "sgd_update"),
    "adam_update": ("optim_kernels", "adam_update"),
    "max_pool_stage": ("pool_kernels", "max_stage"),
    "max_pool_scatter": ("pool_kernels", "scatter"),
    "channel_affine": ("norm_kernels", "channel_affine"),
    "relu": ("activation_kernels", "relu"),
    "relu_backward": ("activation_kernels", "relu_backward"),
    "cross_entropy": ("loss_kernels", "cross_entropy"),
    "cross_entropy_backward": ("loss_kernels", "cross_entropy_backward"),
}


_threads = threading.local()
#: whether numba's pool started in this process (its first parallel kernel), and whether this process is a forked
#: child of one where it had (set at fork, so that a kernel call checks a flag, not the process id)
_pool = {"started": False, "inherited": False}


def _forget_pool() -> None:
    _pool["inherited"] = _pool["inherited"] or _pool["started"]
    _pool["started"] = False


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_pool)


def follow_threads() -> None:
    """Give numba's pool, in this thread, ``ember.get_num_threads()`` threads (cheap when that has not changed)."""
    count = ember.get_num_threads()
    if getattr(_threads, "count", None) != count:
        import numba

        numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
        _threads.count = count


@functools.cache
def _openmp():
    """GNU OpenMP's runtime as numba's ``omp`` layer loads it (None where there is none)."""
    try:
        return ctypes.CDLL("libgomp.so.1")
    except OSError:
        return None


def _compiled(module: str, function: str):
    """``kernel(*args)`` that imports ``ember_numba.<module>`` and calls its ``function`` (compiled by numba, or
    loaded from numba's cache, on its first call); a parallel one on ember's thread count, leaving this thread's
    OpenMP thread count as it was."""

    found: list = []  # (the compiled function, whether it is parallel), filled by the first call

    def kernel(*args):
        if not found:
            compiled = getattr(importlib.import_module(f"ember_numba.{module}"), function)
            found[:] = compiled, bool(getattr(compiled, "targetoptions", {}).get("parallel"))
        compiled, parallel = found
        if not parallel:
            return compiled(*args)  # one thread: numba's pool is neither needed nor started
        if _pool["inherited"]:  # a forked child of the pool's process: the pool is not there
            return _serial(compiled)(*args)
        _pool["started"] = True
        openmp = _openmp()
        before = None if openmp is None else openmp.omp_get_max_threads()
        try:
            follow_threads()  # (numba starts its pool here, the first time)
            return compiled(*args)
        finally:
            if openmp is not None and openmp.omp_get_max_threads() != before:
                openmp.omp_set_num_threads(before)

    kernel.__name__ = kernel.__qualname__ = function
    kernel.__doc__ = f"ember-numba's compiled ``{module}.{function}`` (see ember.hookspecs.ember_cpu_kernels)."
    return kernel


@functools.cache
def _serial(compiled):
    """``compiled``'s Python function compiled without ``parallel`` (its ``prange`` loops run as ``range``); not
    cached on disk, where it would take the parallel version's place."""
    import numba

    return numba.njit(compiled.py_func)


@ember.hookimpl
def ember_cpu_kernels():
    """The CPU backend's inner loops that ember-numba compiles: the random transforms, float16 conversions,
    fused optimizer updates, max pooling's stages, batch norm's affine map, ReLU's and cross entropy's passes."""
    return {name: _compiled(module, function) for name, (module, function) in _KERNELS.items()}
