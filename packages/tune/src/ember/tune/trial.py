"""One trial of an experiment: its configuration, status, results and checkpoint.

>>> from ember.tune import Trial
>>> t = Trial("00000", {"lr": 0.1})
>>> t.status, t.last_result
('PENDING', None)
>>> t.results.append({"loss": 0.5, "training_iteration": 1})
>>> t.last_result["loss"]
0.5
"""
from __future__ import annotations

#: every status a trial can have; the last two are final
STATUSES = ("PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERROR")


class Trial:
    """A configuration being evaluated. Created by :meth:`ember.tune.Experiment.ask`; read it, never set it.

    - ``trial_id``: a zero-padded counter ("00007"), in the order the trials were created;
    - ``config``: the nested configuration dict the searcher proposed;
    - ``status``: "PENDING" (waiting to (re)start), "RUNNING", "PAUSED" (a scheduler paused it; it may
      resume), "TERMINATED" (finished or stopped early) or "ERROR" (failed more than ``max_failures`` times);
    - ``results``: the reported result dicts, in order of ``training_iteration``;
    - ``checkpoint``: the path of the latest checkpoint, or None; ``checkpoint_iteration`` its iteration;
    - ``error``: the traceback text of the latest failure (kept after a successful retry), or None;
    - ``num_failures``: how many times it failed;
    - ``trial_dir``: its folder under the experiment's (None for an experiment without storage).
    """

    __slots__ = ("trial_id", "config", "status", "results", "checkpoint", "checkpoint_iteration", "error",
                 "num_failures", "trial_dir", "fed_iteration", "run_iteration", "run_started", "time_base")

    def __init__(self, trial_id: str, config: dict, trial_dir: str | None = None):
        self.trial_id, self.config, self.trial_dir = trial_id, config, trial_dir
        self.status = "PENDING"
        self.results: list = []
        self.checkpoint: str | None = None
        self.checkpoint_iteration = 0
        self.error: str | None = None
        self.num_failures = 0
        #: bookkeeping of the experiment: the highest iteration the searcher and scheduler have seen, the
        #: iteration the current run has reached, when the run started, and the time spent before it
        self.fed_iteration = 0
        self.run_iteration = 0
        self.run_started = 0.0
        self.time_base = 0.0

    @property
    def last_result(self) -> dict | None:
        """The latest result dict, or None before the first report."""
        return self.results[-1] if self.results else None

    @property
    def is_finished(self) -> bool:
        """True once the trial is TERMINATED or ERROR."""
        return self.status in ("TERMINATED", "ERROR")

    def __repr__(self):
        return f"Trial({self.trial_id}, status={self.status}, config={self.config!r})"
