"""The ``ember`` plugin of ember-numba: its hook implementation, which imports numba only when a kernel runs.

The kernels compiled with ``parallel=True`` run on numba's thread pool, which is given ``ember.get_num_threads()``
threads (at most numba's ``NUMBA_NUM_THREADS``) in each thread that calls a kernel, as ember-onednn does with
OpenMP's: with more, a pass over memory took 1.6x the CPU time of one thread for no gain in wall time on the 2-core
development VM (SGD's update of 670,000 float32: 182 against 115 µs of CPU time, 122 against 115 µs of wall time).
"""
from __future__ import annotations

import importlib
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
}


_threads = threading.local()


def follow_threads() -> None:
    """Give numba's pool, in this thread, ``ember.get_num_threads()`` threads (cheap when that has not changed)."""
    count = ember.get_num_threads()
    if getattr(_threads, "count", None) != count:
        import numba

        numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
        _threads.count = count


def _compiled(module: str, function: str):
    """``kernel(*args)`` that imports ``ember_numba.<module>`` and calls its ``function`` (compiled by numba, or
    loaded from numba's cache, on its first call) on ember's thread count."""

    def kernel(*args):
        compiled = getattr(importlib.import_module(f"ember_numba.{module}"), function)
        follow_threads()
        return compiled(*args)

    kernel.__name__ = kernel.__qualname__ = function
    kernel.__doc__ = f"ember-numba's compiled ``{module}.{function}`` (see ember.hookspecs.ember_cpu_kernels)."
    return kernel


@ember.hookimpl
def ember_cpu_kernels():
    """The CPU backend's inner loops that ember-numba compiles: the random transforms, float16 conversions,
    fused optimizer updates and max pooling's stages."""
    return {name: _compiled(module, function) for name, (module, function) in _KERNELS.items()}
