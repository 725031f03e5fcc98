"""Plots of an experiment's results: learning curves per trial, and the best metric so far.

matplotlib is optional (``pip install ember-tune[plot]``) and imported only when a plot is drawn.
Both functions take a :class:`ember.tune.ResultGrid` (or any iterable of results with a
``metrics_history`` list of result dicts) and return the matplotlib ``Axes`` they drew on.

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> from types import SimpleNamespace as Result
>>> from ember import tune
>>> grid = [Result(metrics_history=[{"loss": 1.0, "training_iteration": 1, "timestamp": 10.0, "time_total_s": 1.0},
...                                 {"loss": 0.5, "training_iteration": 2, "timestamp": 11.0, "time_total_s": 2.0}])]
>>> ax = tune.plot_learning_curves(grid, metric="loss")
>>> [line.get_ydata().tolist() for line in ax.get_lines()]
[[1.0, 0.5]]
"""
from __future__ import annotations

import math

from ._objective import check_mode, value_loss


def _pyplot():
    """``matplotlib.pyplot``, or an ImportError saying how to get it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plotting needs matplotlib, which is not installed; install it with "
                          "`pip install matplotlib` (or `pip install ember-tune[plot]`)") from exc
    return plt


def _resolve(results, metric, mode=None, need_mode=False):
    metric = metric or getattr(results, "metric", None)
    if metric is None:
        raise ValueError("no metric given and the results have no default metric; pass metric='<name>'")
    if need_mode:
        mode = mode or getattr(results, "mode", None)
        check_mode(mode, "plot_best_over_time (mode= or the results' mode)")
    return metric, mode


def _value(result, metric):
    """The metric of one result dict as a float, or None when the result lacks it or it is not a number."""
    value = result.get(metric)
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def plot_learning_curves(results, metric: str | None = None, ax=None):
    """One line per trial: ``metric`` against ``training_iteration``.

    Trials that never reported ``metric`` are left out. Each line is labelled with the trial id.
    """
    metric, _ = _resolve(results, metric)
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots()
    for index, result in enumerate(results):
        points = [(r.get("training_iteration", i + 1), v) for i, r in enumerate(result.metrics_history)
                  if (v := _value(r, metric)) is not None]
        if not points:
            continue
        trial_id = getattr(result, "trial_id", None) or result.metrics_history[0].get("trial_id", str(index))
        ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=f"trial {trial_id}")
    ax.set_xlabel("training_iteration")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} per trial")
    return ax


def best_over_time(results, metric: str, mode: str, x: str = "time"):
    """The data of :func:`plot_best_over_time`: ``(xs, best)`` lists, one point per improving result.

    Every reported result counts (intermediate ones too), in the order of their ``timestamp``.
    ``x="time"``: seconds since the experiment's start (the earliest ``timestamp - time_total_s`` of
    any first result); ``x="budget"``: training iterations used so far, summed over all trials (a
    trial's result at iteration ``t`` after one at ``t0`` adds ``t - t0``).
    """
    if x not in ("time", "budget"):
        raise ValueError(f"x must be 'time' or 'budget', got {x!r}")
    events, start = [], math.inf
    for result in results:
        previous_iteration = 0
        for r in result.metrics_history:
            iteration = r.get("training_iteration", previous_iteration + 1)
            events.append((r["timestamp"], iteration - previous_iteration, _value(r, metric)))
            previous_iteration = iteration
        if result.metrics_history:
            first = result.metrics_history[0]
            start = min(start, first["timestamp"] - first.get("time_total_s", 0.0))
    events.sort(key=lambda e: e[0])
    xs, best, spent, incumbent = [], [], 0, math.inf
    for timestamp, used, value in events:
        spent += used
        if value is not None and value_loss(value, mode) < incumbent:
            incumbent = value_loss(value, mode)
            xs.append(timestamp - start if x == "time" else spent)
            best.append(value)
    return xs, best


def plot_best_over_time(results, metric: str | None = None, mode: str | None = None, ax=None, x: str = "time"):
    """The best ``metric`` reported so far (``mode`` "min" or "max") against wall time or budget.

    ``x="time"`` puts seconds since the experiment began on the x axis, ``x="budget"`` the training
    iterations used by all trials together; see :func:`best_over_time` for the exact data. The line
    is a step plot that holds each best value until the next improvement.
    """
    metric, mode = _resolve(results, metric, mode, need_mode=True)
    xs, best = best_over_time(results, metric, mode, x)
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots()
    ax.plot(xs, best, drawstyle="steps-post", label=f"best {metric} ({mode})")
    ax.set_xlabel("seconds since start" if x == "time" else "training iterations (all trials)")
    ax.set_ylabel(f"best {metric}")
    ax.set_title(f"best {metric} so far")
    return ax
