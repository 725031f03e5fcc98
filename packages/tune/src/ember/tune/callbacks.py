"""Callbacks: code of yours that a :class:`ember.tune.Tuner` calls as trials start, report and end (Ray Tune's hooks).

Subclass :class:`Callback`, override the hooks you need, and pass instances as ``RunConfig(callbacks=[...])``;
a plugin adds callbacks to every run through the ``ember_tune_callbacks`` hook (see :mod:`ember.tune.hookspec`).
The loggers (:mod:`ember.tune.loggers`) and the live progress view are callbacks too.

>>> from ember import tune
>>> class CountResults(tune.Callback):
...     def setup(self, **info):
...         self.count = 0
...     def on_trial_result(self, iteration, trials, trial, result, **info):
...         self.count += 1
>>> run_config = tune.RunConfig(callbacks=[CountResults()])

A callback that raises ends the run: ``Tuner.fit`` raises its error, as Ray Tune does (the experiment is
closed as after a kill, so ``Tuner.restore`` continues it). Every hook receives ``iteration`` (the count of
the driver loop's steps), ``trials`` (every trial so far, :class:`ember.tune.Trial` objects) and keyword
``**info`` (ignore what you do not use: later versions may pass more).
"""
from __future__ import annotations

import sys


class Callback:
    """Base class of the Tuner's callbacks; every hook does nothing until overridden."""

    def setup(self, stop=None, num_samples=None, total_num_samples=None, **info) -> None:
        """Called once, before the first trial starts (and again after a restore). ``stop``: the stop
        criteria; ``num_samples``: ``TuneConfig.num_samples``; ``total_num_samples``: trials the experiment
        will create at most (None: no limit); ``info`` also holds ``experiment`` (the
        :class:`ember.tune.Experiment`, for its ``path``, ``metric``, ``mode`` and ``scheduler``)."""

    def on_step_begin(self, iteration: int, trials: list, **info) -> None:
        """A step of the driver loop begins (trials are started, then events answered)."""

    def on_step_end(self, iteration: int, trials: list, **info) -> None:
        """A step of the driver loop ended (about every 0.2 s while trials run)."""

    def on_trial_start(self, iteration: int, trials: list, trial, **info) -> None:
        """``trial``'s process was started: a new trial, or one resumed after a pause or failure."""

    def on_trial_result(self, iteration: int, trials: list, trial, result: dict, **info) -> None:
        """``trial`` reported ``result`` (as stored: ``training_iteration``, ``time_total_s``, ... filled in)."""

    def on_trial_complete(self, iteration: int, trials: list, trial, **info) -> None:
        """``trial`` ended as TERMINATED: it finished, or was stopped by the scheduler or the stop criteria."""

    def on_trial_recover(self, iteration: int, trials: list, trial, **info) -> None:
        """``trial`` failed and will be retried (``FailureConfig(max_failures=...)``); ``trial.error`` says why."""

    def on_trial_error(self, iteration: int, trials: list, trial, **info) -> None:
        """``trial`` failed for good (status ERROR); ``trial.error`` holds the traceback text."""

    def on_experiment_end(self, trials: list, **info) -> None:
        """The run ended: every trial finished, or ``fit`` is leaving with an error (``info["error"]``);
        release files and connections here."""


class CallbackList:
    """Calls each hook on every callback in order; tells which trials ended since the last :meth:`notice_ends`.

    The Tuner's driver uses it; a callback's exception propagates (the run ends with it).
    """

    def __init__(self, callbacks: list):
        for cb in callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"RunConfig: callbacks must be ember.tune.Callback instances, got "
                                f"{type(cb).__name__}")
        self.callbacks = list(callbacks)
        self.iteration = 0
        self._live: dict = {}  # trial id -> Trial, trials not ended as far as the callbacks were told

    def watch(self, trials: list) -> None:
        """Follow the trials not ended yet (those of a restored experiment), so that their end is announced
        even if they end without starting again (a paused trial the scheduler stops)."""
        self._live.update((t.trial_id, t) for t in trials if not t.is_finished)

    def call(self, hook: str, *args, **kwargs) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(*args, **kwargs)

    def trial_started(self, trials: list, trial) -> None:
        self._live[trial.trial_id] = trial
        self.call("on_trial_start", self.iteration, trials, trial)

    def trial_result(self, trials: list, trial, iteration_before: int) -> None:
        """After ``Experiment.report``: announce the result it stored (none if the report was ignored)."""
        if trial.run_iteration == iteration_before:
            return
        result = next(r for r in reversed(trial.results) if r["training_iteration"] == trial.run_iteration)
        self.call("on_trial_result", self.iteration, trials, trial, result)

    def trial_failed(self, trials: list, trial) -> None:
        """After ``Experiment.tell`` with an error: a retry is announced as a recovery."""
        if trial.status == "PENDING":
            self.call("on_trial_recover", self.iteration, trials, trial)

    def notice_ends(self, trials: list) -> None:
        """Announce every trial that ended (by its own end, a decision, or the stop criteria) since the last call."""
        for trial_id, trial in list(self._live.items()):
            if trial.is_finished:
                del self._live[trial_id]
                hook = "on_trial_error" if trial.status == "ERROR" else "on_trial_complete"
                self.call(hook, self.iteration, trials, trial)

    def end(self, trials: list, error: BaseException | None) -> None:
        """``on_experiment_end`` on every callback. While ``error`` propagates, a callback failing here too is
        reported on stderr instead of hiding ``error``."""
        for cb in self.callbacks:
            try:
                cb.on_experiment_end(trials, error=error)
            except Exception as exc:
                if error is None:
                    raise
                print(f"ember.tune: {type(cb).__name__}.on_experiment_end failed while the run was ending with an "
                      f"error: {type(exc).__name__}: {exc}", file=sys.stderr)


def plugin_callbacks(run_config) -> list:
    """The callbacks that registered plugins add to a run (hook ``ember_tune_callbacks``), in registration order."""
    from . import registry
    pm = registry.plugin_manager()
    found = []
    for contributed in reversed(pm.hook.ember_tune_callbacks(run_config=run_config)):  # pluggy: last first
        if contributed is None:
            continue
        if isinstance(contributed, Callback):
            contributed = [contributed]
        found.extend(contributed)
    return found
