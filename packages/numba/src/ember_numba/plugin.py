"""The ``ember`` plugin of ember-numba: its hook implementation, which imports numba only when a kernel runs."""
from __future__ import annotations

import importlib

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


def _compiled(module: str, function: str):
    """``kernel(*args)`` that imports ``ember_numba.<module>`` and calls its ``function`` (compiled by numba, or
    loaded from numba's cache, on its first call)."""

    def kernel(*args):
        return getattr(importlib.import_module(f"ember_numba.{module}"), function)(*args)

    kernel.__name__ = kernel.__qualname__ = function
    kernel.__doc__ = f"ember-numba's compiled ``{module}.{function}`` (see ember.hookspecs.ember_cpu_kernels)."
    return kernel


@ember.hookimpl
def ember_cpu_kernels():
    """The CPU backend's inner loops that ember-numba compiles: the random transforms, float16 conversions,
    fused optimizer updates and max pooling's stages."""
    return {name: _compiled(module, function) for name, (module, function) in _KERNELS.items()}
