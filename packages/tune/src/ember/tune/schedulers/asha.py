"""ASHAScheduler (alias AsyncHyperBandScheduler): asynchronous successive halving (Li et al. 2020).

Rungs sit at ``grace_period * reduction_factor**k`` (below ``max_t``). A trial that reaches a rung goes on
only if its result there is among the best ``1/reduction_factor`` of all results recorded at that rung so
far; otherwise it is stopped. Nobody waits for a rung to fill, so no trial is ever paused.

>>> from ember.tune import ASHAScheduler
>>> asha = ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3)
>>> asha.setup(metric="loss", mode="min")
>>> asha.rungs
[[1, 3]]
>>> for trial, loss in [("a", 0.5), ("b", 0.7), ("c", 0.3)]:
...     asha.on_trial_add(trial, {})
...     print(trial, asha.on_result(trial, {"loss": loss, "training_iteration": 1}).value)
a continue
b stop
c continue
"""
from __future__ import annotations

import bisect
import math
from fractions import Fraction

from ember import hookimpl

from ._common import MetricScheduler, check_settings, encode, halvings, plain, set_halving_arguments
from .base import Decision


class ASHAScheduler(MetricScheduler):
    """Asynchronous successive halving with Ray Tune's argument names and defaults.

    Args:
        time_attr: the result key that measures a trial's budget.
        metric: the metric to optimise; taken from the experiment when not given.
        mode: "min" or "max"; taken from the experiment when not given.
        max_t: a trial is stopped when its time reaches this (see ``stop_last_trials``).
        grace_period: the first rung: no trial is stopped before its time reaches this.
        reduction_factor: ``eta``; each rung keeps the best ``1/eta`` and is ``eta`` times further on.
        brackets: how many brackets of different aggressiveness; bracket ``b`` starts its rungs at
            ``grace_period * eta**b``. New trials are spread over brackets in Hyperband's proportions
            (bracket ``b`` gets a share proportional to ``eta**(s-b) / (s-b+1)``, ``s`` the number of rungs
            of bracket 0), deterministically, in order of arrival.
        stop_last_trials: stop trials at ``max_t`` (True), or let them run on until they end by themselves.

    The rule at a rung: with ``k`` results recorded there (the new one included), a trial goes on when fewer
    than ``ceil(k / eta)`` recorded results are strictly better than its own, i.e. it is in the top ``1/eta``
    rounded up. So the first trial to reach a rung always goes on, and while fewer than ``eta`` are recorded
    only a trial that is the best so far does. A result whose time passes several rungs at once is judged at
    each of them in turn. A NaN metric counts as the worst.
    """

    def __init__(self, time_attr: str = "training_iteration", metric: str | None = None, mode: str | None = None,
                 max_t: float = 100, grace_period: float = 1, reduction_factor: float = 4, brackets: int = 1,
                 stop_last_trials: bool = True):
        super().__init__(time_attr, metric, mode)
        eta = set_halving_arguments(self, max_t, grace_period, reduction_factor, stop_last_trials)
        if isinstance(brackets, bool) or not isinstance(brackets, int) or brackets < 1:
            raise ValueError(f"brackets must be an int >= 1, got {brackets!r}")
        s = halvings(grace_period, max_t, eta)
        if brackets > s + 1:
            raise ValueError(f"brackets={brackets} is too many: with max_t={max_t!r}, grace_period={grace_period!r} "
                             f"and reduction_factor={reduction_factor!r} there are at most {s + 1}")
        self.brackets, self._eta = brackets, eta
        top = Fraction(max_t)
        #: per bracket, its rung budgets in increasing order
        self.rungs = [[plain(Fraction(grace_period) * eta ** k) for k in range(b, s + 1)
                       if Fraction(grace_period) * eta ** k < top] for b in range(brackets)]
        self._weights = [eta ** (s - b) / (s - b + 1) for b in range(brackets)]
        self._trials: dict = {}  # trial id -> [bracket, index of the next rung it has to pass, stopped]
        self._recorded = [[[] for _ in rungs] for rungs in self.rungs]  # sorted losses per bracket and rung
        self._counts = [0] * brackets  # trials given to each bracket

    def settings(self) -> dict:
        return {**super().settings(), "max_t": self.max_t, "grace_period": self.grace_period,
                "reduction_factor": self.reduction_factor, "brackets": self.brackets,
                "stop_last_trials": self.stop_last_trials}

    def on_trial_add(self, trial_id: str, config: dict) -> None:
        if trial_id in self._trials:
            raise ValueError(f"trial {trial_id!r} was already added to the scheduler")
        total, weight = sum(self._counts) + 1, sum(self._weights)
        # the bracket furthest behind its share of the trials so far (ties: the most aggressive)
        bracket = max(range(self.brackets), key=lambda b: (self._weights[b] * total / weight - self._counts[b], -b))
        self._counts[bracket] += 1
        self._trials[trial_id] = [bracket, 0, False]

    def on_result(self, trial_id: str, result: dict) -> Decision:
        try:
            state = self._trials[trial_id]
        except KeyError:
            raise ValueError(f"result for trial {trial_id!r}, which was never added (on_trial_add)") from None
        bracket, rung, stopped = state
        if stopped:
            return Decision.STOP
        t, loss = self.result_time(trial_id, result), self.result_loss(trial_id, result)
        rungs, recorded = self.rungs[bracket], self._recorded[bracket]
        while rung < len(rungs) and t >= rungs[rung]:
            losses = recorded[rung]
            better = bisect.bisect_left(losses, loss)  # the recorded losses strictly lower than this one
            bisect.insort(losses, loss)
            rung += 1
            if better >= math.ceil(len(losses) / self._eta):
                state[1:] = [rung, True]
                return Decision.STOP
        state[1] = rung
        if t >= self.max_t and self.stop_last_trials:
            state[2] = True
            return Decision.STOP
        return Decision.CONTINUE

    def describe_trial(self, trial_id: str) -> str:
        """Its bracket and the next rung it has to pass (ASHA never pauses a trial)."""
        state = self._trials.get(trial_id)
        if state is None:
            return ""
        bracket, rung, _ = state
        rungs = self.rungs[bracket]
        ahead = f"next rung {rung + 1}/{len(rungs)} at t={rungs[rung]}" if rung < len(rungs) else "past the last rung"
        return f"bracket {bracket}, {ahead}"

    def state_dict(self) -> dict:
        return {"settings": self.settings(), "trials": {tid: list(value) for tid, value in self._trials.items()},
                "counts": list(self._counts),
                "recorded": [[[encode(v) for v in losses] for losses in rungs] for rungs in self._recorded]}

    def load_state_dict(self, state: dict) -> None:
        check_settings(self, state)
        self._trials = {tid: list(value) for tid, value in state["trials"].items()}
        self._counts = list(state["counts"])
        self._recorded = [[[float(v) for v in losses] for losses in rungs] for rungs in state["recorded"]]


#: Ray Tune's other name for the same scheduler
AsyncHyperBandScheduler = ASHAScheduler


@hookimpl
def ember_tune_schedulers():
    return {"asha": ASHAScheduler}
