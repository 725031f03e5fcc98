"""``ember.backends.mps``: Apple's Metal backend, which ember has no plugin for (yet): never available, so that the
usual device choice (``"cuda" if ... else "mps" if ember.backends.mps.is_available() else "cpu"``) runs unchanged.

>>> import ember
>>> ember.backends.mps.is_available(), ember.backends.mps.is_built()
(False, False)
"""
from __future__ import annotations

from .._plugins import backends as _backends

__all__ = ["is_available", "is_built"]


def is_built() -> bool:
    """Whether an ``mps`` backend plugin is installed."""
    return "mps" in _backends()


def is_available() -> bool:
    """Whether an installed ``mps`` backend sees a device."""
    entry = _backends().get("mps")
    return entry is not None and entry[0].is_available() and entry[0].device_count() > 0
