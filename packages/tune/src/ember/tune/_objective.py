"""The one sign convention of ember.tune's searchers and schedulers: lower is better.

A result's metric, read with the experiment's ``mode``, becomes a *loss*: the metric itself for
``mode="min"``, its negation for ``mode="max"``. Searchers and schedulers compare losses only, so
every "best" among them is a smallest loss.

>>> loss({"accuracy": 0.9}, "accuracy", "max"), loss({"error": 0.1}, "error", "min")
(-0.9, 0.1)
"""
from __future__ import annotations

import math

MODES = ("min", "max")


def check_mode(mode) -> None:
    """Refuse a ``mode`` other than "min" or "max"."""
    if mode not in MODES:
        raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")


def loss(result: dict, metric: str, mode: str) -> float:
    """``result[metric]`` as a value to minimise under ``mode``; NaN is the worst loss there is (+inf).

    >>> loss({"error": float("nan")}, "error", "max")
    inf
    """
    value = float(result[metric])
    if math.isnan(value):
        return math.inf
    return value if mode == "min" else -value
