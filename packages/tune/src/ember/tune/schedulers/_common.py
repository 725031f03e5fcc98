"""What the built-in early-stopping schedulers share: where metric, mode and time_attr come from, reading a
result's time and loss, checking arguments, exact rung arithmetic, and JSON-safe losses.

>>> from fractions import Fraction
>>> halvings(1, 81, Fraction(3))
4
>>> halvings(1, 80, Fraction(3))
3
"""
from __future__ import annotations

import math
import numbers
from fractions import Fraction

from .._objective import check_mode
from .base import Scheduler, refuse_several


class MetricScheduler(Scheduler):
    """A scheduler that reads ``metric`` at ``time_attr`` from each result.

    As in Ray Tune, ``metric`` and ``mode`` may be given to the constructor or left to the experiment
    (:meth:`setup` fills in what was not given; giving both with different values is an error). The
    constructor's ``time_attr`` is the one used: the experiment's is only a default.
    """

    def __init__(self, time_attr: str = "training_iteration", metric: str | None = None, mode: str | None = None):
        if not isinstance(time_attr, str) or not time_attr:
            raise TypeError(f"time_attr must be the name of a result key (a non-empty str), got {time_attr!r}")
        if metric is not None and (not isinstance(metric, str) or not metric):
            raise TypeError(f"metric must be the name of a result key (a non-empty str) or None, got {metric!r}")
        check_mode(mode, allow_none=True)
        self.time_attr, self.metric, self.mode = time_attr, metric, mode
        self._given = {"metric": metric, "mode": mode}

    def setup(self, metric: str | None, mode: str | None, time_attr: str = "training_iteration") -> None:
        refuse_several(self, metric)
        name = type(self).__name__
        chosen = {}
        for key, value in (("metric", metric), ("mode", mode)):
            given = self._given[key]
            if given is not None and value is not None and given != value:
                raise ValueError(f"{name} was built with {key}={given!r} but the experiment uses {key}={value!r}; "
                                 f"give {key} in one place, or the same value in both")
            chosen[key] = given if given is not None else value
            if chosen[key] is None:
                raise ValueError(f"{name} needs a {key}: pass {key}= to the scheduler or to the experiment")
        super().setup(chosen["metric"], chosen["mode"], self.time_attr)

    def result_time(self, trial_id: str, result: dict) -> float:
        """``result[time_attr]`` as a float, or a ValueError naming what is missing."""
        try:
            return float(result[self.time_attr])
        except KeyError:
            raise ValueError(f"the result of trial {trial_id!r} has no {self.time_attr!r} (the scheduler's "
                             f"time_attr); it has {sorted(result)}") from None

    def result_loss(self, trial_id: str, result: dict) -> float:
        """The metric as a value to minimise (NaN: the worst possible loss, +inf)."""
        if self.metric not in result:
            raise ValueError(f"the result of trial {trial_id!r} has no {self.metric!r} (the scheduler's metric); "
                             f"it has {sorted(result)}")
        return self.loss(result)

    def settings(self) -> dict:
        """The arguments a saved state depends on (checked by :func:`check_settings`), and what its values are."""
        return {"metric": self.metric, "mode": self.mode, "time_attr": self.time_attr, "values": "losses"}


def check_settings(scheduler: MetricScheduler, state: dict) -> None:
    """Refuse a state saved by a scheduler built with other arguments, or by one that kept scores."""
    ours, saved = scheduler.settings(), state.get("settings")
    if isinstance(saved, dict) and "values" not in saved:
        raise ValueError(f"this state was saved by an earlier ember.tune, whose {type(scheduler).__name__} kept "
                         "scores (higher is better) where it now keeps losses (lower is better); it cannot continue "
                         "from it: start the experiment again")
    if saved != ours:
        differ = sorted(k for k in set(ours) | set(saved or {}) if (saved or {}).get(k) != ours.get(k))
        raise ValueError(f"this state was saved by a {type(scheduler).__name__} with other arguments "
                         f"({', '.join(f'{k}: saved {(saved or {}).get(k)!r}, now {ours.get(k)!r}' for k in differ)})")


def number(name: str, value, *, positive: bool = True):
    """``value`` if it is a finite real number (> 0 when ``positive``, else >= 0), else a clear error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be a finite number {'> 0' if positive else '>= 0'}, got {value!r}")
    return value


def reduction(value) -> Fraction:
    """``reduction_factor`` as an exact Fraction, checked to be > 1."""
    number("reduction_factor", value)
    if value <= 1:
        raise ValueError(f"reduction_factor must be > 1 (the fraction 1/reduction_factor of trials goes on at each "
                         f"rung), got {value!r}")
    return Fraction(value)


def set_halving_arguments(scheduler, max_t, grace_period, reduction_factor, stop_last_trials) -> Fraction:
    """Check the arguments ASHA and Hyperband share and set them on ``scheduler``; returns the exact
    reduction factor."""
    scheduler.max_t, scheduler.grace_period = number("max_t", max_t), number("grace_period", grace_period)
    if grace_period > max_t:
        raise ValueError(f"grace_period ({grace_period!r}) must not exceed max_t ({max_t!r}): it is the budget "
                         "of the first rung")
    eta = reduction(reduction_factor)
    if not isinstance(stop_last_trials, bool):
        raise TypeError(f"stop_last_trials must be a bool, got {stop_last_trials!r}")
    scheduler.reduction_factor, scheduler.stop_last_trials = reduction_factor, stop_last_trials
    return eta


def halvings(min_t, max_t, eta: Fraction) -> int:
    """The largest s with ``min_t * eta**s <= max_t`` (exact: no floating-point logarithm)."""
    s, budget, high = 0, Fraction(min_t) * eta, Fraction(max_t)
    while budget <= high:
        s, budget = s + 1, budget * eta
    return s


def plain(value: Fraction):
    """An exact budget as an int when whole, else a float."""
    return int(value) if value.denominator == 1 else float(value)


def encode(loss: float):
    """A loss as strict JSON (infinities become the strings ``"inf"`` / ``"-inf"``); :func:`float` decodes it."""
    return loss if math.isfinite(loss) else repr(loss)
