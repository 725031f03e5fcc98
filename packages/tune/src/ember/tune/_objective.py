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


def objectives(metric, mode, owner: str = "") -> tuple:
    """``(metrics, modes)`` as two lists of one objective each: ``metric``/``mode`` are a str each (one
    objective) or two lists of the same length (several objectives, each "min" or "max").

    >>> objectives(["loss", "latency"], ["min", "min"])
    (['loss', 'latency'], ['min', 'min'])
    >>> objectives(["loss", "latency"], "min", "TuneConfig")
    Traceback (most recent call last):
    ...
    ValueError: TuneConfig: with several metrics, mode must be a list of as many modes ('min' or 'max'), got 'min'
    """
    prefix = f"{owner}: " if owner else ""
    if isinstance(metric, str):
        check_mode(mode, owner)
        return [metric], [mode]
    if not isinstance(metric, (list, tuple)) or not metric or not all(isinstance(m, str) and m for m in metric):
        raise TypeError(f"{prefix}metric must be the name of a reported key (str) or a non-empty list of names, "
                        f"got {metric!r}")
    if len(set(metric)) != len(metric):
        raise ValueError(f"{prefix}metric names each objective once, got {metric!r}")
    if not isinstance(mode, (list, tuple)) or len(mode) != len(metric):
        raise ValueError(f"{prefix}with several metrics, mode must be a list of as many modes ('min' or 'max'), "
                         f"got {mode!r}")
    for m in mode:
        check_mode(m, owner)
    return list(metric), list(mode)


def is_multi(metric) -> bool:
    """True when ``metric`` names several objectives (a list of more than one name)."""
    return isinstance(metric, (list, tuple)) and len(metric) > 1


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


def losses(result: dict, metrics, modes) -> tuple:
    """Each objective of ``result`` as a value to minimise (a missing one is +inf).

    >>> losses({"loss": 0.5, "acc": 0.9}, ["loss", "acc"], ["min", "max"])
    (0.5, -0.9)
    """
    return tuple(value_loss(result.get(m), mode) for m, mode in zip(metrics, modes))


def dominates(a, b) -> bool:
    """True when loss vector ``a`` is at least as good as ``b`` in every objective and better in one.

    >>> dominates((1, 2), (1, 3)), dominates((1, 2), (1, 2)), dominates((0, 3), (1, 2))
    (True, False, False)
    """
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def constraint_violation(result: dict) -> float:
    """How far ``result`` is from feasible: the sum of its positive ``constraints`` (Optuna's convention: a
    constraint value <= 0 is satisfied); 0.0 when it reports none; +inf when one is NaN or not a number.

    >>> constraint_violation({"constraints": [-1.0, 0.5, 2.0]}), constraint_violation({"loss": 1.0})
    (2.5, 0.0)
    """
    values = result.get("constraints")
    if values is None:
        return 0.0
    if isinstance(values, (int, float)) and not isinstance(values, bool):
        values = [values]
    total = 0.0
    for v in values if isinstance(values, (list, tuple)) else [None]:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
            return math.inf
        total += max(float(v), 0.0)
    return total
