"""The scheduler interface: from each reported result, continue, pause or stop the trial.

>>> from ember.tune import Decision
>>> from ember.tune.schedulers.base import Scheduler
>>> class StopAtThree(Scheduler):
...     def on_result(self, trial_id, result):
...         return Decision.STOP if result["training_iteration"] >= 3 else Decision.CONTINUE
>>> s = StopAtThree()
>>> s.setup(metric="loss", mode="min")
>>> s.on_result("t0", {"loss": 1.0, "training_iteration": 3})
<Decision.STOP: 'stop'>
"""
from __future__ import annotations

import enum

from .._buildable import Buildable
from .._objective import check_mode, is_multi, loss


class Decision(str, enum.Enum):
    """What a trial does after reporting a result."""
    CONTINUE = "continue"  #: keep running
    PAUSE = "pause"  #: end the process now, keep the trial; it resumes from its last checkpoint when chosen
    STOP = "stop"  #: end the trial for good (stopped early; its results count as final)


class Scheduler(Buildable):
    """Base class of trial schedulers. The one required method is :meth:`on_result`."""

    #: True for a scheduler that works with several objectives (``metric`` a list); the others refuse them
    multi_objective = False

    def setup(self, metric: str, mode: str, time_attr: str = "training_iteration") -> None:
        """Called once by the experiment. ``time_attr`` is the result key that measures a trial's budget."""
        refuse_several(self, metric)
        if not is_multi(metric):
            check_mode(mode)
        self.metric, self.mode, self.time_attr = metric, mode, time_attr

    def on_trial_add(self, trial_id: str, config: dict) -> None:
        """A new trial entered the experiment."""

    def on_result(self, trial_id: str, result: dict) -> Decision:
        """Decide about a running trial from its new ``result``."""
        raise NotImplementedError

    def on_complete(self, trial_id: str, result: dict | None, error: bool = False) -> None:
        """The trial ended (finished, stopped, or errored)."""

    def set_seed(self, seed: int) -> None:
        """The experiment's seed (called once after :meth:`setup`), for a scheduler that draws random numbers:
        a restore replaying the same calls then makes the same draws."""

    def on_checkpoint(self, trial_id: str, iteration: int) -> None:
        """The result of ``iteration`` about to be passed to :meth:`on_result` came with a checkpoint."""

    def take_exploits(self) -> dict:
        """``{trial_id: (source_trial_id, new_config)}``: paused trials that continue from the source trial's
        latest checkpoint with ``new_config`` (Population Based Training). Called by the experiment before
        :meth:`take_decisions`; each is returned once."""
        return {}

    def take_decisions(self) -> dict:
        """``{trial_id: Decision}`` about trials other than the one that just reported: a paused trial that
        may now resume (CONTINUE) or is dropped (STOP), a running trial to stop. Called by the experiment
        after every :meth:`on_result`, :meth:`on_complete` and :meth:`choose_trial_to_run`; each decision
        is returned once."""
        return {}

    def choose_trial_to_run(self, paused: list, searcher_finished: bool):
        """Called when a slot is free: the id of a paused trial to resume now, or None to start a new trial.

        ``paused`` lists the paused trials' ids (oldest first). ``searcher_finished`` is True when no
        new trial will come, so a scheduler waiting to fill a rung must decide with what it has.
        """
        return None

    def describe_trial(self, trial_id: str) -> str:
        """A short text on where ``trial_id`` stands for this scheduler (its bracket and rung; for a paused
        trial, what it waits for), shown by the progress view; "" when there is nothing to say."""
        return ""

    def loss(self, result: dict) -> float:
        """The metric of ``result`` as a value to minimise (the sign convention of searchers and schedulers)."""
        return loss(result, self.metric, self.mode)

    def state_dict(self) -> dict:
        """Everything needed to continue, as JSON-serialisable data."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned (after :meth:`setup`)."""


def refuse_several(scheduler, metric) -> None:
    """A clear error when ``metric`` names several objectives and ``scheduler`` ranks trials by one."""
    if is_multi(metric) and not scheduler.multi_objective:
        raise ValueError(f"{type(scheduler).__name__} ranks trials by one metric, but the experiment has several "
                         f"objectives {list(metric)}: use the FIFO scheduler (scheduler=None or \"fifo\")")
