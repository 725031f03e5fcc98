"""The Tuner: run an experiment's trials with an executor until the search is done.

>>> from ember import tune
>>> def trainable(config):
...     for step in range(3):
...         tune.report({"loss": (config["x"] - 1) ** 2 / (step + 1)})
>>> tuner = tune.Tuner(tune.with_resources(trainable, {"cpu": 1}), param_space={"x": tune.uniform(0, 2)},
...                    tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=4, seed=0),
...                    run_config=tune.RunConfig(name="doc", verbose=0))
>>> tuner.trainable.resources
{'cpu': 1, 'gpu': 0}

``tuner.fit()`` then runs the four trials, each in its own process, and returns their
:class:`~ember.tune.ResultGrid`.
"""
from __future__ import annotations

import functools
import os

from . import _budget, journal_checks, registry
from .callbacks import CallbackList
from .config import FailureConfig, RunConfig, TuneConfig
from .executors.base import TrialRun
from .experiment import JOURNAL, Experiment
from .interactive import check_importable
from .journal import Journal, JournalError
from .progress import ProgressReporter
from .spec import NOT_GIVEN, build, component_spec, qualified_name
from .stoppers import stop_all

#: the Tuner's settings when it continues an experiment begun with the ask/tell Experiment
_ASK_TELL_DEFAULTS = {"max_concurrent_trials": None, "verbose": 1, "progress_interval": 5.0}
_POLL_S = 0.2


class _WithResources:
    """A trainable with the resources each of its trials needs (see :func:`with_resources`)."""

    def __init__(self, trainable, resources: dict):
        self.trainable, self.resources = trainable, resources
        functools.update_wrapper(self, trainable)

    def __call__(self, config):
        return self.trainable(config)


def with_resources(trainable, resources: dict):
    """``trainable`` with the resources each trial needs: ``{"cpu": n, "gpu": m}`` (missing keys: 1 CPU,
    0 GPUs). The executor starts a trial only when they are free; GPUs are picked by free memory."""
    if not callable(trainable):
        raise TypeError("with_resources: trainable must be a function trainable(config), got "
                        f"{type(trainable).__name__}")
    if not isinstance(resources, dict) or set(resources) - {"cpu", "gpu"}:
        raise ValueError(f"with_resources: resources must be a dict with keys 'cpu' and/or 'gpu', got {resources!r}")
    for key, value in resources.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"with_resources: resources[{key!r}] must be a number >= 0, got {value!r}")
    full = {"cpu": 1, "gpu": 0, **resources}
    if isinstance(trainable, _WithResources):
        trainable = trainable.trainable
    return _WithResources(trainable, full)


class Tuner:
    """Search ``param_space`` with the function ``trainable(config)``, which reports with ``tune.report``.

    ``tune_config`` (:class:`ember.tune.TuneConfig`): metric, mode, searcher, scheduler, number of trials,
    concurrency, seed, executor. ``run_config`` (:class:`ember.tune.RunConfig`): name and storage folder,
    stop criteria, checkpoints kept, retries, verbosity. :meth:`fit` runs it and returns a
    :class:`ember.tune.ResultGrid`; a killed run continues with :meth:`Tuner.restore`.
    """

    def __init__(self, trainable, *, param_space: dict | None = None, tune_config: TuneConfig | None = None,
                 run_config: RunConfig | None = None):
        if not callable(trainable):
            raise TypeError(f"Tuner: trainable must be a function trainable(config), got {type(trainable).__name__}")
        self.trainable = trainable
        self.param_space = {} if param_space is None else param_space
        self.tune_config = tune_config or TuneConfig()
        self.run_config = run_config or RunConfig()
        if self.tune_config.metric is None or self.tune_config.mode is None:
            raise ValueError("Tuner: TuneConfig(metric=..., mode='min' or 'max') is needed: which reported key to "
                             "optimise, and in which direction")
        self._experiment = None
        self._time_used_s = 0.0

    @classmethod
    def restore(cls, path: str, trainable, *, param_space=NOT_GIVEN, search_alg=NOT_GIVEN, scheduler=NOT_GIVEN,
                stop=NOT_GIVEN, executor=NOT_GIVEN, callbacks: list | None = None, time_budget_s=NOT_GIVEN,
                trial_timeout_s=NOT_GIVEN) -> Tuner:
        """The Tuner of the experiment stored at ``path`` (``<storage_path>/<name>``), to continue with :meth:`fit`.

        Finished trials are kept; trials that were running restart from their latest checkpoint; the
        searcher and scheduler continue where they were. Everything is rebuilt from the JSON specification
        in the journal's first line (no pickle is read; see :meth:`ember.tune.Experiment.restore`); pass
        again what has no JSON form (a ``sample_from`` in ``param_space``, a callable ``stop``, a searcher
        built with a function, an unregistered plugin, an executor built with a ``gpu_picker``): restore says
        which. An argument passed replaces the recorded one, None included (``stop=None``). ``trainable``
        must be the function the experiment ran (its ``module.qualname`` is recorded): another one is
        refused, so that no experiment mixes results of two functions. ``callbacks``: the run's
        :class:`~ember.tune.Callback` instances (code: never recorded). An experiment begun with the
        ask/tell :class:`~ember.tune.Experiment` continues with the Tuner's defaults.

        ``time_budget_s`` counts the time of every run of the experiment (as Ray Tune does): an experiment
        that spent its budget of 60 s continues for 60 s more with ``time_budget_s=120``; the recorded budget
        (and ``trial_timeout_s``) apply when not passed, ``None`` lifts them. Trials the budget stopped stay
        TERMINATED; the search goes on with new ones.

        >>> Tuner.restore("/nonexistent/experiment", print)
        Traceback (most recent call last):
        ...
        ember.tune.journal.JournalError: no experiment journal at '/nonexistent/experiment/journal.jsonl': ...
        """
        if not callable(trainable):
            raise TypeError(f"Tuner.restore: trainable must be a function trainable(config), got "
                            f"{type(trainable).__name__}")
        path = os.path.expanduser(path)
        journal_path = os.path.join(path, JOURNAL)
        records = Journal.read(journal_path)  # changes nothing
        settings = journal_checks.check_header(records, journal_path).get("tuner")
        if settings is None:  # an experiment begun with ask/tell: the trainable of its first Tuner.restore
            settings = {**_ASK_TELL_DEFAULTS, "executor": component_spec("executor", None),
                        "trainable": next((r["trainable"] for r in records if isinstance(r, dict)
                                           and r.get("e") == "restore" and isinstance(r.get("trainable"), str)),
                                          None)}
        recorded = settings.get("trainable")
        if recorded is not None and recorded != qualified_name(trainable):
            raise ValueError(f"Tuner.restore: the experiment at {path!r} ran the trainable {recorded!r}, not "
                             f"{qualified_name(trainable)!r}; restoring it with another function would mix the "
                             "results of two objectives: pass the recorded function (or start a new experiment)")
        given = {key: value for key, value in (("executor", executor),) if value is not NOT_GIVEN}
        executor = build("executor", settings.get("executor"), given, f"{journal_path}: line 1")
        limits = {key: _budget.recorded_setting(records, settings, key) if value is NOT_GIVEN else value
                  for key, value in (("time_budget_s", time_budget_s), ("trial_timeout_s", trial_timeout_s))}
        try:
            TuneConfig(**limits)
        except ValueError as e:
            if time_budget_s is NOT_GIVEN and trial_timeout_s is NOT_GIVEN:
                raise JournalError(f"{journal_path}: a recorded Tuner setting is wrong ({e})") from None
            raise
        note = {"trainable": qualified_name(trainable),
                **{key: limits[key] for key, value in (("time_budget_s", time_budget_s),
                                                       ("trial_timeout_s", trial_timeout_s)) if value is not NOT_GIVEN}}
        given = {key: value for key, value in (("param_space", param_space), ("search_alg", search_alg),
                                               ("scheduler", scheduler), ("stop", stop)) if value is not NOT_GIVEN}
        experiment = Experiment.restore(path, _note=note, **given)
        self = cls.__new__(cls)
        self.trainable, self.param_space = trainable, experiment.space
        self.tune_config = TuneConfig(metric=experiment.metric, mode=experiment.mode,
                                      num_samples=experiment.num_samples,
                                      max_concurrent_trials=settings.get("max_concurrent_trials"),
                                      search_alg=experiment.searcher, scheduler=experiment.scheduler,
                                      seed=experiment.seed, executor=executor,
                                      reuse_actors=settings.get("reuse_actors"), **limits)
        self.run_config = RunConfig(name=os.path.basename(path), storage_path=os.path.dirname(path),
                                    stop=experiment.stop, checkpoint_config=experiment.checkpoint_config,
                                    failure_config=FailureConfig(experiment.max_failures),
                                    callbacks=callbacks, verbose=settings.get("verbose", 1),
                                    progress_interval=settings.get("progress_interval", 5.0))
        self._experiment = experiment
        self._time_used_s = _budget.time_used(records)
        return self

    def fit(self):
        """Run the trials until the searcher is done and every trial ended; returns the ResultGrid."""
        experiment = self._experiment
        if experiment is not None and experiment.closed:  # fit ran before
            if experiment.is_finished():
                return experiment.results()
            raise RuntimeError(f"this Tuner's fit was interrupted: continue with "
                               f"Tuner.restore({experiment.path!r}, trainable)")
        tc, rc = self.tune_config, self.run_config
        executor = registry.resolve("executor", tc.executor)
        check_importable(self.trainable, executor)  # before the experiment's folder is made
        experiment = self._experiment = experiment or self._new_experiment()
        if tc.reuse_actors is not None:
            executor.set_reuse_actors(tc.reuse_actors)
        resources = getattr(self.trainable, "resources", {"cpu": 1, "gpu": 0})
        callbacks = CallbackList(self._callbacks())
        executor.setup(self.trainable, experiment.path)
        deadlines = _budget.Deadlines(tc.time_budget_s, tc.trial_timeout_s, self._time_used_s)
        error = None
        try:
            callbacks.call("setup", stop=rc.stop, num_samples=tc.num_samples,
                           total_num_samples=_total_trials(experiment), experiment=experiment,
                           time_budget_s=deadlines.remaining())
            callbacks.watch(experiment.trials)
            _run(experiment, executor, resources, tc.max_concurrent_trials, callbacks, deadlines)
        except BaseException as e:
            error = e
            raise
        finally:
            executor.shutdown()
            experiment.close()
            callbacks.end(experiment.trials, error)
        return experiment.results()

    def _callbacks(self) -> list:
        """The run's callbacks: the user's, the loggers that are always on, the plugins', the progress view."""
        from .callbacks import plugin_callbacks
        from .loggers import DEFAULT_LOGGERS
        rc = self.run_config
        given = list(rc.callbacks or [])
        found = given + [cls() for cls in DEFAULT_LOGGERS if not any(type(cb) is cls for cb in given)]
        found += plugin_callbacks(rc)
        if rc.verbose and not any(isinstance(cb, ProgressReporter) for cb in found):
            found.append(ProgressReporter(self.tune_config.metric, self.tune_config.mode,
                                          interval=rc.progress_interval))
        return found

    def _new_experiment(self) -> Experiment:
        tc, rc = self.tune_config, self.run_config
        settings = {"executor": component_spec("executor", tc.executor), "trainable": qualified_name(self.trainable),
                    "max_concurrent_trials": tc.max_concurrent_trials, "verbose": rc.verbose,
                    "progress_interval": rc.progress_interval, "time_budget_s": tc.time_budget_s,
                    "trial_timeout_s": tc.trial_timeout_s, "reuse_actors": tc.reuse_actors}
        return Experiment(self.param_space, tc.metric, tc.mode, search_alg=tc.search_alg,
                          scheduler=tc.scheduler, num_samples=tc.num_samples, seed=tc.seed,
                          storage_path=rc.storage_path or "~/ember_results", name=rc.name,
                          max_failures=rc.failure_config.max_failures, stop=rc.stop,
                          checkpoint_config=rc.checkpoint_config, _tuner=settings)


def _total_trials(experiment: Experiment) -> int | None:
    """How many trials the experiment creates at most (None: until its searcher says it is finished)."""
    own = getattr(experiment.searcher, "total", None)
    if isinstance(own, int):
        return own
    return None if experiment._limit == float("inf") else int(experiment._limit)


def _run(experiment: Experiment, executor, resources: dict, max_concurrent: int | None, callbacks,
         deadlines: _budget.Deadlines) -> None:
    """The Tuner's loop: start trials while slots are free, answer their events, until all is done."""
    running: set = set()
    started: set = set()
    may_ask = True  # False after ask() gave nothing, until an event changes the state
    while not experiment.is_finished():
        callbacks.iteration += 1
        callbacks.call("on_step_begin", callbacks.iteration, experiment.trials)
        may_ask |= _enforce_limits(experiment, executor, running, deadlines, callbacks)
        while may_ask and (max_concurrent is None or len(running) < max_concurrent) \
                and executor.has_free_slot(resources):
            trial = experiment.ask()
            if trial is None:
                may_ask = False
                break
            if trial.trial_id in started:  # a retry or resume: its old process may still be exiting
                executor.stop(trial.trial_id)
            started.add(trial.trial_id)
            run = TrialRun(trial.trial_id, trial.config, trial.trial_dir, checkpoint=trial.checkpoint,
                           iteration=trial.checkpoint_iteration, time_total_s=trial.time_base,
                           resources=dict(resources))
            executor.start(run)
            deadlines.started(trial.trial_id)
            running.add(trial.trial_id)
            callbacks.trial_started(experiment.trials, trial)
        if not running and not may_ask:
            if experiment.is_finished():
                break
            raise RuntimeError(f"{type(experiment.searcher).__name__}.suggest gave no configuration while no trial "
                               "is running, so none ever will: a searcher may return None only while trials run")
        trials = experiment.trials
        for event in executor.poll(_POLL_S):
            may_ask = True
            trial = experiment.get_trial(event.trial_id)
            if event.kind == "result":
                before = trial.run_iteration
                executor.respond(event.trial_id, experiment.report(trial, event.metrics, checkpoint=event.checkpoint))
                callbacks.trial_result(trials, trial, before)
                continue
            running.discard(event.trial_id)
            deadlines.ended(event.trial_id)
            if event.kind == "complete":  # with the trainable's returned dict, if it returned one
                before = trial.run_iteration
                experiment.tell(trial, event.metrics)
                if event.metrics is not None:
                    callbacks.trial_result(trials, trial, before)
            elif event.kind == "error":
                experiment.tell(trial, error=event.error or f"trial {event.trial_id} failed (no traceback)")
                callbacks.trial_failed(trials, trial)
            elif event.kind not in ("paused", "stopped"):
                raise RuntimeError(f"{type(executor).__name__} sent an unknown event kind {event.kind!r}")
        for trial_id in experiment.take_decisions():
            if trial_id in running:
                executor.stop(trial_id)
                running.discard(trial_id)
                deadlines.ended(trial_id)
                may_ask = True
        callbacks.notice_ends(trials)
        callbacks.call("on_step_end", callbacks.iteration, trials)
    callbacks.notice_ends(experiment.trials)


def _enforce_limits(experiment: Experiment, executor, running: set, deadlines: _budget.Deadlines, callbacks) -> bool:
    """Kill the runs that exceeded ``trial_timeout_s`` (each a failure, retried per ``max_failures``); halt
    the experiment when its time budget is spent or its stopper's ``stop_all()`` says so (the running
    trials are then stopped through ``take_decisions``). True if a trial's run ended here."""
    # (a trial already stopped or paused by a decision may still be exiting: not a failure)
    overdue = [trial_id for trial_id in deadlines.overdue()
               if trial_id in running and experiment.get_trial(trial_id).status == "RUNNING"]
    for trial_id in overdue:
        error = deadlines.timeout_error(trial_id)
        executor.stop(trial_id)
        running.discard(trial_id)
        deadlines.ended(trial_id)
        trial = experiment.get_trial(trial_id)
        experiment.tell(trial, error=error)
        callbacks.trial_failed(experiment.trials, trial)
    if deadlines.budget_spent():
        experiment.halt(f"time_budget_s={deadlines.time_budget_s:g} spent")
    elif stop_all(experiment.stop):
        experiment.halt(f"{type(experiment.stop).__name__}.stop_all() returned True")
    return bool(overdue)
