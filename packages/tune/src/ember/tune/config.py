"""What a :class:`ember.tune.Tuner` runs: the search (:class:`TuneConfig`) and the run (:class:`RunConfig`).

>>> from ember import tune
>>> tc = tune.TuneConfig(metric="loss", mode="min", num_samples=20, scheduler="asha", seed=0)
>>> rc = tune.RunConfig(name="demo", stop={"training_iteration": 10},
...                     checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
...                     failure_config=tune.FailureConfig(max_failures=1))
>>> tune.TuneConfig(mode="best")
Traceback (most recent call last):
...
ValueError: TuneConfig: mode must be 'min', 'max' or None, got 'best'
"""
from __future__ import annotations

import dataclasses
import datetime
import os

from ._objective import check_mode, objectives


def _check_count(owner, name, value, minimum, allow_none=True, allow_minus_one=False):
    if value is None and allow_none or value == -1 and allow_minus_one:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        extra = " (or -1 for no limit)" if allow_minus_one else ""
        raise ValueError(f"{owner}: {name} must be an int >= {minimum}{extra}, got {value!r}")


@dataclasses.dataclass
class TuneConfig:
    """The search: which metric to optimise and how.

    - ``metric`` / ``mode``: the reported key to optimise, "min" or "max"; or, for several objectives, a
      list of keys and a list of as many modes (``metric=["loss", "latency"], mode=["min", "min"]``: see
      :meth:`ResultGrid.get_pareto_front`; searchers "random", "grid" and "nsga2", scheduler "fifo");
    - ``num_samples``: trials to run (each grid_search point is repeated this many times, as in Ray Tune;
      -1: until the searcher says it is finished);
    - ``max_concurrent_trials``: trials running at once (None: as many as the executor's resources allow);
    - ``search_alg`` / ``scheduler``: an instance or a registered name ("random", "grid", "tpe", "bohb";
      "fifo", "median", "hyperband", "asha"); None: random search, FIFO;
    - ``seed``: the seed of the searcher: the same seed gives the same sequence of configurations;
    - ``executor``: an :class:`ember.tune.Executor` instance or a registered name ("local", "ray");
    - ``time_budget_s``: seconds (or a ``datetime.timedelta``) the experiment may run, counted over all its
      runs (a restore continues the count); when they are spent, running trials are stopped and ``fit``
      returns every result so far; None: no limit;
    - ``trial_timeout_s``: seconds a trial's run (from its start or resume) may last; a run still going
      then is killed and counts as a failure ("trial exceeded trial_timeout_s=..."), retried per
      ``FailureConfig(max_failures)``; None: no limit.
    - ``reuse_actors``: keep trial processes for the next trials and resumes, so what the trainable's module
      loads is loaded once per process (True), or start one per trial run (False); None: the executor's
      default (the local executor reuses them; see :class:`ember.tune.LocalExecutor`).
    """
    metric: str | None = None
    mode: str | None = None
    num_samples: int = 1
    max_concurrent_trials: int | None = None
    search_alg: object = None
    scheduler: object = None
    seed: int | None = None
    executor: object = "local"
    time_budget_s: float | None = None
    trial_timeout_s: float | None = None
    reuse_actors: bool | None = None

    def __post_init__(self):
        if isinstance(self.time_budget_s, datetime.timedelta):
            self.time_budget_s = self.time_budget_s.total_seconds()
        for name in ("time_budget_s", "trial_timeout_s"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not 0 < value < float("inf")):
                raise ValueError(f"TuneConfig: {name} must be seconds > 0 (or None: no limit), got {value!r}")
        if isinstance(self.metric, (list, tuple)) or isinstance(self.mode, (list, tuple)):
            self.metric, self.mode = objectives(self.metric, self.mode, "TuneConfig")
        if not isinstance(self.mode, list):
            check_mode(self.mode, "TuneConfig", allow_none=True)
        if self.metric is not None and not isinstance(self.metric, (str, list)):
            raise TypeError(f"TuneConfig: metric must be the name of a reported key (str) or a list of names, "
                            f"got {self.metric!r}")
        _check_count("TuneConfig", "num_samples", self.num_samples, 1, allow_none=False, allow_minus_one=True)
        _check_count("TuneConfig", "max_concurrent_trials", self.max_concurrent_trials, 1)
        if self.reuse_actors not in (None, True, False):
            raise TypeError(f"TuneConfig: reuse_actors must be True, False or None, got {self.reuse_actors!r}")


@dataclasses.dataclass
class CheckpointConfig:
    """Which checkpoints of each trial to keep.

    ``num_to_keep``: keep only the best k (default 2, so that an experiment's folder does not grow with every
    report; None: keep all); "best" by ``checkpoint_score_attribute`` (a reported key; None: the most recent
    are the best) in ``checkpoint_score_order`` ("max" or "min"). The latest checkpoint is kept while the
    trial may still resume (a paused trial, a PBT exploit's source).
    """
    num_to_keep: int | None = 2
    checkpoint_score_attribute: str | None = None
    checkpoint_score_order: str = "max"

    def __post_init__(self):
        _check_count("CheckpointConfig", "num_to_keep", self.num_to_keep, 1)
        check_mode(self.checkpoint_score_order, "CheckpointConfig", "checkpoint_score_order")


@dataclasses.dataclass
class FailureConfig:
    """``max_failures``: how many times a failing trial is retried (from its latest checkpoint) before it
    is recorded as errored; -1 retries without limit."""
    max_failures: int = 0

    def __post_init__(self):
        _check_count("FailureConfig", "max_failures", self.max_failures, 0, allow_none=False, allow_minus_one=True)


@dataclasses.dataclass
class RunConfig:
    """The run: where it is stored, when trials stop, what is kept, how much is printed.

    - ``name``: the experiment's folder under ``storage_path`` (None: ``tune_<date>_<time>``);
    - ``storage_path``: where experiments live (None: ``~/ember_results``);
    - ``stop``: ``{key: threshold}`` (a trial stops once a reported ``key`` reaches ``threshold``, e.g.
      ``{"training_iteration": 10}``), a callable ``stop(trial_id, result) -> bool``, or a
      :class:`ember.tune.Stopper` (whose ``stop_all()`` may also end the whole experiment);
    - ``checkpoint_config`` / ``failure_config``: see :class:`CheckpointConfig`, :class:`FailureConfig`;
    - ``callbacks``: :class:`ember.tune.Callback` instances called as trials start, report and end
      (loggers, trackers; see :mod:`ember.tune.callbacks`); the JSON and CSV loggers are always added;
    - ``verbose``: 0 silent, 1 the live progress view (updated every ``progress_interval`` seconds) and a
      summary at the end.
    """
    name: str | None = None
    storage_path: str | None = None
    stop: object = None
    checkpoint_config: CheckpointConfig | None = None
    failure_config: FailureConfig | None = None
    callbacks: list | None = None
    verbose: int = 1
    progress_interval: float = 5.0

    def __post_init__(self):
        if self.name is not None and (not isinstance(self.name, str) or not self.name or os.sep in self.name):
            raise ValueError(f"RunConfig: name must be a non-empty folder name without {os.sep!r}, got {self.name!r}")
        if self.stop is not None and not (isinstance(self.stop, dict) or callable(self.stop)):
            raise TypeError("RunConfig: stop must be a dict {reported key: threshold}, a tune.Stopper or a callable "
                            f"stop(trial_id, result) -> bool, got {type(self.stop).__name__}")
        if self.callbacks is not None:
            from .callbacks import Callback
            if not isinstance(self.callbacks, (list, tuple)) or not all(isinstance(c, Callback)
                                                                         for c in self.callbacks):
                raise TypeError("RunConfig: callbacks must be a list of ember.tune.Callback instances, got "
                                f"{self.callbacks!r}")
            self.callbacks = list(self.callbacks)
        if self.checkpoint_config is None:
            self.checkpoint_config = CheckpointConfig()
        if self.failure_config is None:
            self.failure_config = FailureConfig()
        if not isinstance(self.progress_interval, (int, float)) or self.progress_interval < 0:
            raise ValueError(f"RunConfig: progress_interval must be seconds >= 0, got {self.progress_interval!r}")
