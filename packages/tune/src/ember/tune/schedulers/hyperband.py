"""HyperBandScheduler: synchronous Hyperband (Li et al. 2018), the scheduler half of BOHB.

New trials fill brackets in turn. In a bracket, every trial runs to the budget of its rung and is paused
there; once every trial of the rung has arrived, the best ``1/reduction_factor`` of them are promoted
(resumed towards the next rung's budget) and the rest are stopped.

>>> from ember.tune import HyperBandScheduler
>>> hb = HyperBandScheduler(max_t=9, reduction_factor=3)
>>> hb.setup(metric="loss", mode="min")
>>> hb.bracket_plan  # per bracket, (trials, budget) at each rung
[[(9, 1), (3, 3), (1, 9)], [(5, 3), (1, 9)], [(3, 9)]]
>>> for i in range(9):
...     hb.on_trial_add(f"t{i}", {})
>>> [hb.on_result(f"t{i}", {"loss": 9 - i, "training_iteration": 1}).value for i in range(9)]
['pause', 'pause', 'pause', 'pause', 'pause', 'pause', 'pause', 'pause', 'continue']
>>> decisions = hb.take_decisions()  # the rung is full: t8 (on at once), t7, t6 are the best three
>>> sorted(t for t, d in decisions.items() if d == "continue"), sorted(t for t, d in decisions.items() if d == "stop")
(['t6', 't7'], ['t0', 't1', 't2', 't3', 't4', 't5'])
>>> hb.choose_trial_to_run(["t6", "t7"], searcher_finished=False)
't6'
"""
from __future__ import annotations

import math
from fractions import Fraction

from ember import hookimpl

from ._common import MetricScheduler, check_settings, encode, halvings, plain, set_halving_arguments
from .base import Decision

# a trial's status in the scheduler
_RUNNING, _PAUSED, _PROMOTED, _DONE, _PAST_MAX = "running", "paused", "promoted", "done", "past_max_t"


class HyperBandScheduler(MetricScheduler):
    """Synchronous Hyperband with Ray Tune's argument names and defaults.

    Args:
        time_attr: the result key that measures a trial's budget.
        metric: the metric to optimise; taken from the experiment when not given.
        mode: "min" or "max"; taken from the experiment when not given.
        max_t: the largest budget ``R``: the last rung of every bracket.
        reduction_factor: ``eta``; a rung keeps the best ``1/eta`` of its trials.
        grace_period: the smallest budget a rung may have. With ``s_max`` the largest ``s`` such that
            ``grace_period * eta**s <= max_t``, the brackets are ``s = s_max, ..., 0``; bracket ``s`` starts
            ``n = ceil((s_max + 1) * eta**s / (s + 1))`` trials, and its rung ``i`` (``0 <= i <= s``) holds
            ``floor(n / eta**i)`` trials at budget ``max_t * eta**(i - s)`` (see :attr:`bracket_plan`).
        stop_last_trials: stop trials at ``max_t`` (True), or let them run on until they end by themselves.

    Trials fill the brackets in order of arrival (``s_max`` first); after bracket 0 a new round starts at
    ``s_max`` again. A trial whose time reaches its rung's budget gets PAUSE; when the last trial of a rung
    arrives, the rung is decided: the promoted trials get CONTINUE and the others STOP through
    :meth:`take_decisions`, and :meth:`choose_trial_to_run` resumes the promoted ones (oldest pause first)
    before any new trial starts. The trial that completes a rung gets CONTINUE or STOP at once instead of
    PAUSE, which saves it a restart.

    A rung with fewer trials than planned (some errored or ended by themselves, or the searcher finished
    before the bracket's first rung was full: :meth:`choose_trial_to_run` with ``searcher_finished=True``
    closes it) promotes the best ``floor(m / eta)`` of its ``m`` trials, at least one and at most as many
    as planned. Ties go to the trial that joined the rung first; a NaN metric counts as the worst.

    With :class:`~ember.tune.BOHBSearcher` this is BOHB (Falkner et al. 2018): the searcher only sees the
    results, which arrive at the rungs' budgets.
    """

    def __init__(self, time_attr: str = "training_iteration", metric: str | None = None, mode: str | None = None,
                 max_t: float = 81, reduction_factor: float = 3, grace_period: float = 1,
                 stop_last_trials: bool = True):
        super().__init__(time_attr, metric, mode)
        self._eta = eta = set_halving_arguments(self, max_t, grace_period, reduction_factor, stop_last_trials)
        s_max = halvings(grace_period, max_t, eta)
        #: per bracket (``s = s_max`` first), the ``(trials, budget)`` of each rung
        self.bracket_plan = []
        for s in range(s_max, -1, -1):
            n = math.ceil(Fraction(s_max + 1) * eta ** s / (s + 1))
            self.bracket_plan.append([(math.floor(n / eta ** i), plain(Fraction(max_t) * eta ** (i - s)))
                                      for i in range(s + 1)])
        self._brackets: list = []  # [plan index, members per rung, {trial: loss} per rung, rung, rung 0 closed]
        self._trials: dict = {}  # trial id -> [bracket index, rung index, status]
        self._pending: dict = {}  # trial id -> Decision not yet handed out by take_decisions

    def settings(self) -> dict:
        return {**super().settings(), "max_t": self.max_t, "grace_period": self.grace_period,
                "reduction_factor": self.reduction_factor, "stop_last_trials": self.stop_last_trials}

    def on_trial_add(self, trial_id: str, config: dict) -> None:
        if trial_id in self._trials:
            raise ValueError(f"trial {trial_id!r} was already added to the scheduler")
        if not self._brackets or self._brackets[-1][4]:
            plan = len(self._brackets) % len(self.bracket_plan)
            rungs = len(self.bracket_plan[plan])
            self._brackets.append([plan, [[] for _ in range(rungs)], [{} for _ in range(rungs)], 0, False])
        bracket = self._brackets[-1]
        bracket[1][0].append(trial_id)
        bracket[4] = len(bracket[1][0]) >= self.bracket_plan[bracket[0]][0][0]
        self._trials[trial_id] = [len(self._brackets) - 1, 0, _RUNNING]

    def on_result(self, trial_id: str, result: dict) -> Decision:
        state = self._state(trial_id)
        index, rung, status = state
        if status == _DONE:
            return Decision.STOP
        if status == _PAST_MAX:
            return Decision.CONTINUE
        plan = self.bracket_plan[self._brackets[index][0]]
        if status == _PAUSED:
            raise RuntimeError(f"trial {trial_id!r} reported a result while paused at its rung (budget "
                               f"{plan[rung][1]}); resume only the trials the scheduler promotes")
        state[2] = _RUNNING  # a promoted trial has resumed
        self._pending.pop(trial_id, None)
        t, loss = self.result_time(trial_id, result), self.result_loss(trial_id, result)
        if t < plan[rung][1]:
            return Decision.CONTINUE
        if rung == len(plan) - 1:
            state[2] = _DONE if self.stop_last_trials else _PAST_MAX
            return Decision.STOP if self.stop_last_trials else Decision.CONTINUE
        self._brackets[index][2][rung][trial_id] = loss
        state[2] = _PAUSED
        self._settle(index)
        if state[2] == _PAUSED:
            return Decision.PAUSE
        # this result completed the rung: go on (or stop) now rather than pause and be told so
        decision = self._pending.pop(trial_id)
        state[2] = _RUNNING if decision == Decision.CONTINUE else _DONE
        return decision

    def on_complete(self, trial_id: str, result: dict | None, error: bool = False) -> None:
        state = self._state(trial_id)
        self._pending.pop(trial_id, None)
        if state[2] != _DONE:
            state[2] = _DONE  # it leaves its rung: the rung may be complete without it
            self._settle(state[0])

    def take_decisions(self) -> dict:
        decisions, self._pending = self._pending, {}
        return decisions

    def choose_trial_to_run(self, paused: list, searcher_finished: bool):
        if searcher_finished:  # no more trials will join a bracket's first rung
            for index, bracket in enumerate(self._brackets):
                if not bracket[4]:
                    bracket[4] = True
                    self._settle(index)
        for trial_id in paused:
            state = self._trials.get(trial_id)
            if state is not None and state[2] == _PROMOTED:
                state[2] = _RUNNING
                self._pending.pop(trial_id, None)
                return trial_id
        return None

    def describe_trial(self, trial_id: str) -> str:
        """Its bracket and rung; a paused trial waits at the rung barrier until every trial of the rung has
        arrived, a promoted one for a free slot.

        >>> hb = HyperBandScheduler(max_t=9, reduction_factor=3)
        >>> hb.setup(metric="loss", mode="min")
        >>> hb.on_trial_add("t0", {}); hb.on_trial_add("t1", {})
        >>> hb.on_result("t0", {"loss": 1.0, "training_iteration": 1}).value
        'pause'
        >>> hb.describe_trial("t0")
        'bracket 0, rung 1/3 (t=1): waits at the rung barrier, 1 of 9 trials arrived'
        """
        state = self._trials.get(trial_id)
        if state is None:
            return ""
        index, rung, status = state
        plan_index, members, _, _, closed = self._brackets[index]
        plan = self.bracket_plan[plan_index]
        where = f"bracket {index}, rung {rung + 1}/{len(plan)} (t={plan[rung][1]})"
        if status == _PAUSED:
            live = [t for t in members[rung] if self._trials[t][2] != _DONE]
            arrived = sum(self._trials[t][2] == _PAUSED for t in live)
            expected = plan[0][0] if rung == 0 and not closed else len(live)
            return f"{where}: waits at the rung barrier, {arrived} of {expected} trials arrived"
        if status == _PROMOTED:
            return f"{where}: promoted, waits for a free slot"
        return where

    def _state(self, trial_id):
        try:
            return self._trials[trial_id]
        except KeyError:
            raise ValueError(f"trial {trial_id!r} was never added to the scheduler (on_trial_add)") from None

    def _settle(self, index):
        """Decide every rung of bracket ``index`` that is complete, lowest first."""
        plan_index, members, losses, rung, closed = self._brackets[index]
        plan = self.bracket_plan[plan_index]
        while rung < len(plan) - 1 and (rung > 0 or closed):
            live = [t for t in members[rung] if self._trials[t][2] != _DONE]
            if any(self._trials[t][2] != _PAUSED for t in live):
                break  # someone is still on the way to this rung
            planned, following = plan[rung][0], plan[rung + 1][0]
            keep = following if len(live) >= planned else min(following, max(1, math.floor(len(live) / self._eta)))
            ranked = sorted(range(len(live)), key=lambda i: (losses[rung][live[i]], i))
            for place, i in enumerate(ranked):
                trial_id = live[i]
                if place < keep:
                    self._trials[trial_id][1:] = [rung + 1, _PROMOTED]
                    members[rung + 1].append(trial_id)
                    self._pending[trial_id] = Decision.CONTINUE
                else:
                    self._trials[trial_id][2] = _DONE
                    self._pending[trial_id] = Decision.STOP
            rung += 1
        self._brackets[index][3] = rung

    def state_dict(self) -> dict:
        return {"settings": self.settings(),
                "brackets": [[plan, [list(m) for m in members], [{t: encode(v) for t, v in rung.items()}
                                                                 for rung in losses], rung_index, closed]
                             for plan, members, losses, rung_index, closed in self._brackets],
                "trials": {tid: list(state) for tid, state in self._trials.items()},
                "pending": [[tid, decision.value] for tid, decision in self._pending.items()]}

    def load_state_dict(self, state: dict) -> None:
        check_settings(self, state)
        self._brackets = [[plan, [list(m) for m in members], [{t: float(v) for t, v in rung.items()}
                                                              for rung in losses], rung_index, closed]
                          for plan, members, losses, rung_index, closed in state["brackets"]]
        self._trials = {tid: list(value) for tid, value in state["trials"].items()}
        self._pending = {tid: Decision(value) for tid, value in state["pending"]}


@hookimpl
def ember_tune_schedulers():
    return {"hyperband": HyperBandScheduler}
