"""Running ember's ``cuda`` backend with a chosen table of op kernels (to time kernels against the ops' forwards).

``use(ember, table, backend)`` makes the ops look up ``table`` (``{op_name: kernel}``) instead of the plugins'
kernels on ``backend`` (``"cuda"``); ``use(ember, None, None)`` restores the plugins' kernels.
"""
from __future__ import annotations

from ember import _plugins
from ember.autograd.function import clear_kernel_cache

_ORIGINAL = _plugins.op_kernels


def use(ember, table, backend):
    if table is None:
        _plugins.op_kernels = _ORIGINAL
    else:
        def op_kernels(backend_name):
            return dict(table) if backend_name == backend else _ORIGINAL(backend_name)
        _plugins.op_kernels = op_kernels
    clear_kernel_cache()


def in_effect(ember, backend="cuda"):
    """The names of the ops with a kernel on ``backend`` now."""
    return sorted(_plugins.op_kernels(backend))
