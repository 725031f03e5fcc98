"""The executor interface: run trials somewhere, report their events back to the experiment.

An executor starts a trial (:class:`TrialRun`), and :meth:`Executor.poll` returns
what its trials did (:class:`ExecutorEvent`). A trial that calls ``tune.report``
waits until the experiment answers with :meth:`Executor.respond` (continue,
pause or stop), so a scheduler's decision takes effect at that very report.
"""
from __future__ import annotations

import dataclasses

from .._buildable import Buildable


@dataclasses.dataclass
class TrialRun:
    """What an executor needs to start (or resume) one trial."""
    trial_id: str
    config: dict
    trial_dir: str  #: the trial's own folder: checkpoints are written here
    checkpoint: str | None = None  #: path of the checkpoint to resume from (``tune.get_checkpoint()``), or None
    iteration: int = 0  #: reports the trial already made; ``training_iteration`` continues from here
    time_total_s: float = 0.0  #: time spent in the trial's earlier runs; ``time_total_s`` continues from here
    resources: dict = dataclasses.field(default_factory=lambda: {"cpu": 1, "gpu": 0})


@dataclasses.dataclass
class ExecutorEvent:
    """Something a trial did.

    ``kind`` is one of:
    - ``"result"``: the trial reported ``metrics`` (and maybe a ``checkpoint`` path) and waits for
      :meth:`Executor.respond`;
    - ``"complete"``: the trainable returned;
    - ``"paused"`` / ``"stopped"``: the trial ended after a PAUSE / STOP answer;
    - ``"error"``: the trainable raised or its process died; ``error`` holds the traceback text.
    """
    kind: str
    trial_id: str
    metrics: dict | None = None
    checkpoint: str | None = None
    error: str | None = None


class Executor(Buildable):
    """Base class of executors. A trial runs as ``trainable(config)``; it reports with ``tune.report``."""

    def setup(self, trainable, experiment_dir: str) -> None:
        """Called once before the first :meth:`start`."""
        self.trainable, self.experiment_dir = trainable, experiment_dir

    def set_reuse_actors(self, reuse: bool) -> None:
        """``TuneConfig(reuse_actors=...)``: keep trial processes for the next trials. An executor that
        cannot refuses True."""
        if reuse:
            raise ValueError(f"{type(self).__name__} does not reuse trial processes: TuneConfig(reuse_actors=True) "
                             "needs an executor that does (the local one)")

    def has_free_slot(self, resources: dict) -> bool:
        """Whether a trial needing ``resources`` ({"cpu": n, "gpu": m}) can start now."""
        raise NotImplementedError

    def start(self, run: TrialRun) -> None:
        """Start running a trial."""
        raise NotImplementedError

    def _refuse_bad_start(self, run: TrialRun, set_up: bool) -> None:
        """The errors of a :meth:`start` that cannot be honoured (for subclasses that keep their running
        trials in ``self._trials`` and set ``self._closed`` on shutdown)."""
        name = type(self).__name__
        if not set_up:
            raise RuntimeError(f"{name}.setup(trainable, experiment_dir) must be called before start()")
        if self._closed:
            raise RuntimeError(f"this {name} was shut down")
        if run.trial_id in self._trials:
            raise ValueError(f"trial {run.trial_id} is already running")
        if not self.has_free_slot(run.resources):
            raise RuntimeError(f"no free slot for trial {run.trial_id} (resources {run.resources}); "
                               "call start() only when has_free_slot() is True")

    def _answered(self, trial_id: str):
        """The running trial ``trial_id``, which must be waiting for an answer and is no longer (for subclasses
        that keep their running trials in ``self._trials``, each with a ``waiting`` flag)."""
        trial = self._trials.get(trial_id)
        if trial is None or not trial.waiting:
            raise ValueError(f"trial {trial_id} is not waiting for an answer (respond once to each 'result' event)")
        trial.waiting = False
        return trial

    def poll(self, timeout: float) -> list:
        """Events since the last call (:class:`ExecutorEvent`), waiting at most ``timeout`` seconds for one."""
        raise NotImplementedError

    def respond(self, trial_id: str, decision) -> None:
        """Answer a trial's ``"result"`` event with a :class:`~ember.tune.Decision`."""
        raise NotImplementedError

    def stop(self, trial_id: str) -> None:
        """End a running trial now (it sends no further events)."""
        raise NotImplementedError

    def shutdown(self, timeout: float = 10.0) -> None:
        """End every trial and release the executor's resources, within ``timeout`` seconds."""
        raise NotImplementedError
