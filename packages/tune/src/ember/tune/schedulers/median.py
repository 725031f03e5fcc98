"""MedianStoppingRule: stop a trial that does worse than the typical trial did by the same time.

The rule of Google Vizier (Golovin et al. 2017): at time ``t`` a trial is stopped when the best result it
has reported so far is worse than the median, over the other trials that got as far as ``t``, of their
running averages up to ``t``.

>>> from ember.tune import MedianStoppingRule
>>> rule = MedianStoppingRule(time_attr="training_iteration", grace_period=2, min_samples_required=2)
>>> rule.setup(metric="loss", mode="min")
>>> for trial, losses in [("a", [0.5, 0.4]), ("b", [0.6, 0.5])]:
...     for step, loss in enumerate(losses, 1):
...         _ = rule.on_result(trial, {"loss": loss, "training_iteration": step})
>>> rule.on_result("c", {"loss": 0.9, "training_iteration": 1})  # within the grace period
<Decision.CONTINUE: 'continue'>
>>> rule.on_result("c", {"loss": 0.8, "training_iteration": 2})  # best 0.8 > median(0.45, 0.55)
<Decision.STOP: 'stop'>
"""
from __future__ import annotations

import bisect
import statistics

from ember import hookimpl

from ._common import MetricScheduler, check_settings, encode, number
from .base import Decision


class MedianStoppingRule(MetricScheduler):
    """Median stopping rule (Golovin et al. 2017), with Ray Tune's argument names and defaults.

    Args:
        time_attr: the result key that measures progress (a trial's times must not decrease).
        metric: the metric to optimise; taken from the experiment when not given.
        mode: "min" or "max"; taken from the experiment when not given.
        grace_period: no trial is stopped before its time reaches this.
        min_samples_required: no trial is stopped while fewer than this many other trials got as far.

    At a result with time ``t >= grace_period``, the trial is stopped when its best result so far is
    strictly worse than the median of the running averages up to ``t`` of every other trial (running, ended
    or errored alike) that has reported at some time ``>= t``. Stopping is final; nothing is paused.
    """

    def __init__(self, time_attr: str = "time_total_s", metric: str | None = None, mode: str | None = None,
                 grace_period: float = 60.0, min_samples_required: int = 3):
        super().__init__(time_attr, metric, mode)
        self.grace_period = number("grace_period", grace_period, positive=False)
        if isinstance(min_samples_required, bool) or not isinstance(min_samples_required, int) \
                or min_samples_required < 1:
            raise ValueError(f"min_samples_required must be an int >= 1, got {min_samples_required!r}")
        self.min_samples_required = min_samples_required
        self._times: dict = {}  # trial id -> its result times, in order
        self._losses: dict = {}  # trial id -> its losses (lower is better), in order
        self._sums: dict = {}  # trial id -> running sums of its losses
        self._best: dict = {}  # trial id -> its best (lowest) loss so far

    def settings(self) -> dict:
        return {**super().settings(), "grace_period": self.grace_period,
                "min_samples_required": self.min_samples_required}

    def on_result(self, trial_id: str, result: dict) -> Decision:
        t, loss = self.result_time(trial_id, result), self.result_loss(trial_id, result)
        times = self._times.setdefault(trial_id, [])
        if times and t < times[-1]:
            raise ValueError(f"trial {trial_id!r} reported {self.time_attr}={t}, earlier than its previous "
                             f"result ({times[-1]}); the median stopping rule needs times that do not decrease")
        self._record(trial_id, t, loss)
        if t < self.grace_period:
            return Decision.CONTINUE
        averages = [self._average(other, t) for other, other_times in self._times.items()
                    if other != trial_id and other_times[-1] >= t and other_times[0] <= t]
        if len(averages) < self.min_samples_required:
            return Decision.CONTINUE
        return Decision.STOP if self._best[trial_id] > statistics.median(averages) else Decision.CONTINUE

    def _record(self, trial_id, t, loss):
        self._times.setdefault(trial_id, []).append(t)
        self._losses.setdefault(trial_id, []).append(loss)
        sums = self._sums.setdefault(trial_id, [])
        sums.append(loss + (sums[-1] if sums else 0.0))
        self._best[trial_id] = min(loss, self._best.get(trial_id, loss))

    def _average(self, trial_id, t):
        count = bisect.bisect_right(self._times[trial_id], t)
        return self._sums[trial_id][count - 1] / count

    def state_dict(self) -> dict:
        return {"settings": self.settings(),
                "trials": {tid: [times, [encode(v) for v in self._losses[tid]]] for tid, times in self._times.items()}}

    def load_state_dict(self, state: dict) -> None:
        check_settings(self, state)
        self._times, self._losses, self._sums, self._best = {}, {}, {}, {}
        for trial_id, (times, losses) in state["trials"].items():
            for t, loss in zip(times, losses):
                self._record(trial_id, float(t), float(loss))


@hookimpl
def ember_tune_schedulers():
    return {"median": MedianStoppingRule}
