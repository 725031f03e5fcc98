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

from . import journal_checks, registry
from .config import FailureConfig, RunConfig, TuneConfig
from .executors.base import TrialRun
from .experiment import JOURNAL, Experiment
from .journal import Journal
from .spec import NOT_GIVEN, build, component_spec, qualified_name

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

    @classmethod
    def restore(cls, path: str, trainable, *, param_space=NOT_GIVEN, search_alg=NOT_GIVEN, scheduler=NOT_GIVEN,
                stop=NOT_GIVEN, executor=NOT_GIVEN) -> Tuner:
        """The Tuner of the experiment stored at ``path`` (``<storage_path>/<name>``), to continue with :meth:`fit`.

        Finished trials are kept; trials that were running restart from their latest checkpoint; the
        searcher and scheduler continue where they were. Everything is rebuilt from the JSON specification
        in the journal's first line (no pickle is read; see :meth:`ember.tune.Experiment.restore`); pass
        again what has no JSON form (a ``sample_from`` in ``param_space``, a callable ``stop``, a searcher
        built with a function, an unregistered plugin, an executor built with a ``gpu_picker``): restore says
        which. An argument passed replaces the recorded one, None included (``stop=None``). ``trainable``
        must be the function the experiment ran (its ``module.qualname`` is recorded): another one is
        refused, so that no experiment mixes results of two functions. An experiment begun with the
        ask/tell :class:`~ember.tune.Experiment` continues with the Tuner's defaults.

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
        given = {key: value for key, value in (("param_space", param_space), ("search_alg", search_alg),
                                               ("scheduler", scheduler), ("stop", stop)) if value is not NOT_GIVEN}
        experiment = Experiment.restore(path, _note={"trainable": qualified_name(trainable)}, **given)
        self = cls.__new__(cls)
        self.trainable, self.param_space = trainable, experiment.space
        self.tune_config = TuneConfig(metric=experiment.metric, mode=experiment.mode,
                                      num_samples=experiment.num_samples,
                                      max_concurrent_trials=settings.get("max_concurrent_trials"),
                                      search_alg=experiment.searcher, scheduler=experiment.scheduler,
                                      seed=experiment.seed, executor=executor)
        self.run_config = RunConfig(name=os.path.basename(path), storage_path=os.path.dirname(path),
                                    stop=experiment.stop, checkpoint_config=experiment.checkpoint_config,
                                    failure_config=FailureConfig(experiment.max_failures),
                                    verbose=settings.get("verbose", 1),
                                    progress_interval=settings.get("progress_interval", 5.0))
        self._experiment = experiment
        return self

    def fit(self):
        """Run the trials until the searcher is done and every trial ended; returns the ResultGrid."""
        experiment = self._experiment
        if experiment is not None and experiment.closed:  # fit ran before
            if experiment.is_finished():
                return experiment.results()
            raise RuntimeError(f"this Tuner's fit was interrupted: continue with "
                               f"Tuner.restore({experiment.path!r}, trainable)")
        experiment = self._experiment = experiment or self._new_experiment()
        tc, rc = self.tune_config, self.run_config
        executor = registry.resolve("executor", tc.executor)
        resources = getattr(self.trainable, "resources", {"cpu": 1, "gpu": 0})
        reporter = None
        if rc.verbose:
            from .progress import ProgressReporter
            reporter = ProgressReporter(tc.metric, tc.mode, interval=rc.progress_interval)
        executor.setup(self.trainable, experiment.path)
        try:
            _run(experiment, executor, resources, tc.max_concurrent_trials, reporter)
        finally:
            executor.shutdown()
            experiment.close()
        if reporter is not None:
            reporter.update(experiment.trials, force=True)
            print(f"ember.tune: experiment finished: {experiment.path}")
        return experiment.results()

    def _new_experiment(self) -> Experiment:
        tc, rc = self.tune_config, self.run_config
        settings = {"executor": component_spec("executor", tc.executor), "trainable": qualified_name(self.trainable),
                    "max_concurrent_trials": tc.max_concurrent_trials, "verbose": rc.verbose,
                    "progress_interval": rc.progress_interval}
        return Experiment(self.param_space, tc.metric, tc.mode, search_alg=tc.search_alg,
                          scheduler=tc.scheduler, num_samples=tc.num_samples, seed=tc.seed,
                          storage_path=rc.storage_path or "~/ember_results", name=rc.name,
                          max_failures=rc.failure_config.max_failures, stop=rc.stop,
                          checkpoint_config=rc.checkpoint_config, _tuner=settings)


def _run(experiment: Experiment, executor, resources: dict, max_concurrent: int | None, reporter) -> None:
    """The Tuner's loop: start trials while slots are free, answer their events, until all is done."""
    running: set = set()
    started: set = set()
    may_ask = True  # False after ask() gave nothing, until an event changes the state
    while not experiment.is_finished():
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
            running.add(trial.trial_id)
        if not running and not may_ask:
            if experiment.is_finished():
                break
            raise RuntimeError(f"{type(experiment.searcher).__name__}.suggest gave no configuration while no trial "
                               "is running, so none ever will: a searcher may return None only while trials run")
        for event in executor.poll(_POLL_S):
            may_ask = True
            trial = experiment.get_trial(event.trial_id)
            if event.kind == "result":
                executor.respond(event.trial_id, experiment.report(trial, event.metrics, checkpoint=event.checkpoint))
                continue
            running.discard(event.trial_id)
            if event.kind == "complete":  # with the trainable's returned dict, if it returned one
                experiment.tell(trial, event.metrics)
            elif event.kind == "error":
                experiment.tell(trial, error=event.error or f"trial {event.trial_id} failed (no traceback)")
            elif event.kind not in ("paused", "stopped"):
                raise RuntimeError(f"{type(executor).__name__} sent an unknown event kind {event.kind!r}")
        for trial_id in experiment.take_decisions():
            if trial_id in running:
                executor.stop(trial_id)
                running.discard(trial_id)
                may_ask = True
        if reporter is not None:
            reporter.update(experiment.trials)
