"""Finding process-group backends by name, built-in and third-party alike.

>>> from ember.distributed import registry
>>> "mpi" in registry.available()
True
>>> registry.get("nonsense")
Traceback (most recent call last):
...
ValueError: unknown process-group backend 'nonsense'; known: ['auto', 'mpi', 'nccl']
"""
from __future__ import annotations

from ember import collect_claims, ensure_plugins

from . import hookspec

__all__ = ["available", "get", "BUILTIN_PLUGINS"]

#: built-in plugin modules, registered through the same call a third party uses
BUILTIN_PLUGINS = ("ember.distributed.backends.mpi", "ember.distributed.backends.nccl",
                   "ember.distributed.backends.auto")


def available() -> dict:
    """``{name: factory}`` of every registered process-group backend."""
    ensure_plugins(hookspec, BUILTIN_PLUGINS)
    found = collect_claims("ember_distributed_backends", "the process-group backend {key}")
    return {name: factory for name, (factory, _) in found.items()}


def get(name: str):
    """The factory registered as backend ``name`` (case-insensitive, as PyTorch's), or a ValueError listing the
    known names."""
    found = available()
    if not isinstance(name, str):
        raise TypeError(f"a process-group backend is named by a str, but got {type(name).__name__} {name!r}")
    try:
        return found[name.lower()]
    except KeyError:
        raise ValueError(f"unknown process-group backend {name!r}; known: {sorted(found)}") from None
