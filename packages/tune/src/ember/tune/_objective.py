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


def check_mode(mode, owner: str = "", name: str = "mode", allow_none: bool = False) -> None:
    """Refuse a ``mode`` other than "min" or "max" (or None, where ``allow_none``); the message starts with
    ``owner`` (the function or class that was given it) and calls the argument ``name``.

    >>> check_mode("maximise", "CheckpointConfig", "checkpoint_score_order")
    Traceback (most recent call last):
    ...
    ValueError: CheckpointConfig: checkpoint_score_order must be 'min' or 'max', got 'maximise'
    """
    if mode not in MODES and not (allow_none and mode is None):
        prefix = f"{owner}: " if owner else ""
        choices = "'min', 'max' or None" if allow_none else "'min' or 'max'"
        raise ValueError(f"{prefix}{name} must be {choices}, got {mode!r}")


def value_loss(value, mode: str) -> float:
    """A metric's ``value`` as a value to minimise under ``mode``; NaN (or None: not reported) is the worst loss
    there is (+inf).

    >>> value_loss(0.9, "max"), value_loss(float("nan"), "min"), value_loss(None, "max")
    (-0.9, inf, inf)
    """
    value = math.nan if value is None else float(value)
    if math.isnan(value):
        return math.inf
    return value if mode == "min" else -value


def loss(result: dict, metric: str, mode: str) -> float:
    """``result[metric]`` as a value to minimise under ``mode`` (see :func:`value_loss`).

    >>> loss({"error": float("nan")}, "error", "max")
    inf
    """
    return value_loss(result[metric], mode)
