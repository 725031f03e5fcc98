"""Stoppers: when a trial, or the whole experiment, stops (``RunConfig(stop=...)``), with Ray Tune's interface.

A :class:`Stopper` is asked after each result whether that trial stops (``stopper(trial_id, result)``) and
whether the whole experiment stops (``stopper.stop_all()``; then running trials are stopped, nothing new
starts, and ``fit`` returns the results so far):

>>> from ember import tune
>>> stop = tune.CombinedStopper(tune.MaximumIterationStopper(max_iter=3),
...                             tune.TrialPlateauStopper("loss", std=0.01, num_results=3, grace_period=3))
>>> [stop("t0", {"loss": 1.0, "training_iteration": i}) for i in (1, 2, 3)]
[False, False, True]
>>> stop.stop_all()
False

Built-in stoppers made with plain arguments are recorded in the journal as JSON, so a restore rebuilds them
(and replays the results into them); a stopper of your own is passed again to ``Tuner.restore(stop=...)``.
"""
from __future__ import annotations

import collections
import datetime
import math
import time

from ._buildable import Buildable, plain_json
from ._objective import check_mode


class Stopper(Buildable):
    """Base class of stoppers: override ``__call__`` (stop this trial?) and/or :meth:`stop_all` (stop all?).

    >>> from ember import tune
    >>> class Enough(tune.Stopper):
    ...     def __call__(self, trial_id, result):
    ...         return result["loss"] < 0.01
    >>> Enough()("00000", {"loss": 0.001}), Enough().stop_all()
    (True, False)
    """

    def __call__(self, trial_id: str, result: dict) -> bool:
        """True if trial ``trial_id`` stops after ``result`` (called once per reported result)."""
        return False

    def stop_all(self) -> bool:
        """True if the whole experiment stops now (asked after each result and while waiting for results)."""
        return False


class MaximumIterationStopper(Stopper):
    """Stop each trial once its ``training_iteration`` reaches ``max_iter`` (counted across pauses and
    restarts, as the trial's own count of reports)."""

    def __init__(self, max_iter: int):
        if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
            raise ValueError(f"MaximumIterationStopper: max_iter must be an int >= 1, got {max_iter!r}")
        self.max_iter = max_iter

    def __call__(self, trial_id, result):
        return result.get("training_iteration", 0) >= self.max_iter


def _std(values) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def _number(result: dict, metric: str, owner: str) -> float:
    value = result.get(metric)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{owner}: every result must report {metric!r} as a number, got {value!r} "
                         f"(reported keys: {sorted(result)})")
    return float(value)


class TrialPlateauStopper(Stopper):
    """Stop a trial whose ``metric`` has plateaued: the (population) standard deviation of its last
    ``num_results`` values is below ``std``, after at least ``grace_period`` results. With
    ``metric_threshold``, only once the latest value is better than it (below for ``mode="min"``, above for
    ``"max"``; ``mode`` is then required)."""

    def __init__(self, metric: str, std: float = 0.01, num_results: int = 4, grace_period: int = 4,
                 metric_threshold: float | None = None, mode: str | None = None):
        if not isinstance(metric, str):
            raise TypeError(f"TrialPlateauStopper: metric must be the name of a reported key, got {metric!r}")
        check_mode(mode, "TrialPlateauStopper", allow_none=True)
        if metric_threshold is not None and mode is None:
            raise ValueError("TrialPlateauStopper: metric_threshold needs mode='min' or 'max' (on which side of "
                             "the threshold a trial may stop)")
        for name, value in (("num_results", num_results), ("grace_period", grace_period)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"TrialPlateauStopper: {name} must be an int >= 1, got {value!r}")
        if isinstance(std, bool) or not isinstance(std, (int, float)) or std < 0:
            raise ValueError(f"TrialPlateauStopper: std must be a number >= 0, got {std!r}")
        self.metric, self.std, self.num_results, self.grace_period = metric, std, num_results, grace_period
        self.metric_threshold, self.mode = metric_threshold, mode
        self._windows: dict = collections.defaultdict(lambda: collections.deque(maxlen=num_results))
        self._counts: dict = collections.defaultdict(int)

    def __call__(self, trial_id, result):
        value = _number(result, self.metric, "TrialPlateauStopper")
        self._counts[trial_id] += 1
        window = self._windows[trial_id]
        window.append(value)
        if self._counts[trial_id] < self.grace_period or len(window) < self.num_results:
            return False
        if self.metric_threshold is not None:
            if self.mode == "min" and value > self.metric_threshold or \
                    self.mode == "max" and value < self.metric_threshold:
                return False
        return _std(window) < self.std


class ExperimentPlateauStopper(Stopper):
    """Stop the whole experiment once the ``top`` best values of ``metric`` reported so far (over all
    trials and results; best per ``mode``) have a standard deviation of at most ``std``, for ``patience``
    results in a row after the first time they do."""

    def __init__(self, metric: str, std: float = 0.001, top: int = 10, mode: str = "min", patience: int = 0):
        if not isinstance(metric, str):
            raise TypeError(f"ExperimentPlateauStopper: metric must be the name of a reported key, got {metric!r}")
        check_mode(mode, "ExperimentPlateauStopper")
        if isinstance(top, bool) or not isinstance(top, int) or top < 2:
            raise ValueError(f"ExperimentPlateauStopper: top must be an int >= 2 (a spread needs two values), "
                             f"got {top!r}")
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 0:
            raise ValueError(f"ExperimentPlateauStopper: patience must be an int >= 0, got {patience!r}")
        if isinstance(std, bool) or not isinstance(std, (int, float)) or std <= 0:
            raise ValueError(f"ExperimentPlateauStopper: std must be a number > 0, got {std!r}")
        self.metric, self.std, self.top, self.mode, self.patience = metric, std, top, mode, patience
        self._best: list = []
        self._plateau_results = 0

    def __call__(self, trial_id, result):
        value = _number(result, self.metric, "ExperimentPlateauStopper")
        self._best = sorted(self._best + [value], reverse=self.mode == "max")[:self.top]
        self._plateau_results = self._plateau_results + 1 if self.has_plateaued() else 0
        return self.stop_all()

    def has_plateaued(self) -> bool:
        """Whether the ``top`` best values so far are within ``std`` of each other."""
        return len(self._best) == self.top and _std(self._best) <= self.std

    def stop_all(self):
        return self.has_plateaued() and self._plateau_results > self.patience


class TimeoutStopper(Stopper):
    """Stop the whole experiment ``timeout`` seconds (a number or a ``datetime.timedelta``) after this
    stopper was created. A restored experiment rebuilds it, so its clock starts again; for a budget counted
    over all runs of an experiment use ``TuneConfig(time_budget_s=...)``."""

    def __init__(self, timeout):
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds()
            self._build_args = ((timeout,), {})  # recorded as seconds: JSON has no timedelta
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"TimeoutStopper: timeout must be seconds > 0 or a datetime.timedelta, got {timeout!r}")
        self.timeout = float(timeout)
        self._deadline = time.monotonic() + self.timeout

    def stop_all(self):
        return time.monotonic() >= self._deadline


class CombinedStopper(Stopper):
    """Stop when any of ``stoppers`` says so (each one sees every result, so stateful stoppers stay right)."""

    def __init__(self, *stoppers: Stopper):
        for s in stoppers:
            if not isinstance(s, Stopper):
                raise TypeError(f"CombinedStopper: each argument must be a tune.Stopper, got {type(s).__name__}")
        self.stoppers = stoppers

    def __call__(self, trial_id, result):
        return any([s(trial_id, result) for s in self.stoppers])  # a list: every stopper is called

    def stop_all(self):
        return any(s.stop_all() for s in self.stoppers)


BUILT_IN = {cls.__name__: cls for cls in (MaximumIterationStopper, TrialPlateauStopper, ExperimentPlateauStopper,
                                          TimeoutStopper, CombinedStopper)}


def to_json(stopper: Stopper):
    """``{"stopper": name, "args": [...], "kwargs": {...}}`` for a built-in stopper made with plain
    arguments; None when it has no JSON form (a stopper class of your own)."""
    if type(stopper) not in BUILT_IN.values():
        return None
    args, kwargs = stopper._build_args
    if isinstance(stopper, CombinedStopper):
        args = [to_json(s) for s in args]
        if any(a is None for a in args):
            return None
    elif not plain_json(list(args)) or not plain_json(kwargs):
        return None
    return {"stopper": type(stopper).__name__, "args": list(args), "kwargs": dict(kwargs)}


def is_json(data) -> bool:
    """Whether ``data`` (a recorded ``stop``) is a stopper's JSON form rather than a ``{key: threshold}`` dict."""
    return isinstance(data, dict) and set(data) == {"stopper", "args", "kwargs"} and isinstance(data["stopper"], str)


def from_json(data) -> Stopper:
    """The stopper :func:`to_json` wrote (a ValueError for anything else)."""
    if not is_json(data) or data["stopper"] not in BUILT_IN or not isinstance(data["args"], list) \
            or not isinstance(data["kwargs"], dict):
        raise ValueError(f"expected a built-in stopper {sorted(BUILT_IN)} as {{'stopper', 'args', 'kwargs'}}, "
                         f"got {data!r}")
    cls = BUILT_IN[data["stopper"]]
    args = [from_json(a) for a in data["args"]] if cls is CombinedStopper else data["args"]
    return cls(*args, **data["kwargs"])


def stop_all(stop) -> bool:
    """Whether ``stop`` (any value ``RunConfig(stop=...)`` takes) ends the whole experiment now."""
    return isinstance(stop, Stopper) and bool(stop.stop_all())
