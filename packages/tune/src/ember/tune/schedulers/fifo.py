"""FIFOScheduler: every trial runs until it ends by itself (or the experiment's ``stop`` criteria end it).

>>> from ember.tune import FIFOScheduler
>>> s = FIFOScheduler()
>>> s.setup(metric="loss", mode="min")
>>> s.on_result("00000", {"loss": 0.25, "training_iteration": 1})
<Decision.CONTINUE: 'continue'>
"""
from __future__ import annotations

from ember import hookimpl

from .base import Decision, Scheduler


class FIFOScheduler(Scheduler):
    """Runs trials first come, first served and never stops one early: the default scheduler.

    Every result gets :attr:`Decision.CONTINUE`; nothing is ever paused, so there is no state to save.
    It reads no metric, so it also runs experiments with several objectives.
    """
    multi_objective = True

    def on_result(self, trial_id: str, result: dict) -> Decision:
        return Decision.CONTINUE


@hookimpl
def ember_tune_schedulers():
    return {"fifo": FIFOScheduler}
