"""The ``ember`` plugin of ember-numba: its hook implementations, which import numba only when a kernel runs."""
from __future__ import annotations

import functools
import importlib

import ember

_KERNELS = ("uniform", "normal", "integers", "bernoulli", "permutation")


def _compiled(name: str):
    """``kernel(*args)`` that compiles (or loads from numba's cache) ``random_kernels.<name>`` on its first call."""

    @functools.wraps(_compiled)
    def kernel(*args):
        return getattr(importlib.import_module("ember_numba.random_kernels"), name)(*args)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"ember-numba's compiled ``{name}`` transform of the CPU generator (see ember.hookspecs)."
    return kernel


@ember.hookimpl
def ember_cpu_random_kernels():
    """The CPU generator's bulk transforms, compiled by numba on first use."""
    return {name: _compiled(name) for name in _KERNELS}
