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

from . import registry
from .config import FailureConfig, RunConfig, TuneConfig
from .executors.base import TrialRun
from .experiment import Experiment, load_components, save_components

#: the Tuner's own settings, pickled next to the experiment's for :meth:`Tuner.restore`
TUNER_STATE = "tuner.pkl"
_TUNER_KEYS = ("executor", "max_concurrent_trials", "verbose", "progress_interval")
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
    def restore(cls, path: str, trainable, *, param_space=None, search_alg=None, scheduler=None, stop=None,
                executor=None) -> Tuner:
        """The Tuner of the experiment stored at ``path`` (``<storage_path>/<name>``), to continue with :meth:`fit`.

        Finished trials are kept; trials that were running restart from their latest checkpoint; the
        searcher and scheduler continue where they were. Pass again whatever could not be saved with the
        experiment (a lambda in ``param_space``, an unpicklable searcher, ...): restore says which. An
        experiment begun with the ask/tell :class:`~ember.tune.Experiment` continues with the Tuner's defaults.
        """
        path = os.path.expanduser(path)
        experiment = Experiment.restore(path, param_space=param_space, search_alg=search_alg,
                                        scheduler=scheduler, stop=stop)
        state_path = os.path.join(path, TUNER_STATE)
        if os.path.exists(state_path):
            state = load_components(state_path, {"executor": executor}, _TUNER_KEYS)
        else:  # an experiment driven by ask/tell so far: the Tuner's defaults
            state = {"executor": executor or "local", "max_concurrent_trials": None, "verbose": 1,
                     "progress_interval": 5.0}
        self = cls.__new__(cls)
        self.trainable, self.param_space = trainable, experiment.space
        self.tune_config = TuneConfig(metric=experiment.metric, mode=experiment.mode,
                                      num_samples=experiment.num_samples,
                                      max_concurrent_trials=state["max_concurrent_trials"],
                                      search_alg=experiment.searcher, scheduler=experiment.scheduler,
                                      seed=experiment.seed, executor=state["executor"])
        self.run_config = RunConfig(name=os.path.basename(path), storage_path=os.path.dirname(path),
                                    stop=experiment.stop, checkpoint_config=experiment.checkpoint_config,
                                    failure_config=FailureConfig(experiment.max_failures),
                                    verbose=state["verbose"], progress_interval=state["progress_interval"])
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
        if tc.reuse_actors is not None:
            executor.set_reuse_actors(tc.reuse_actors)
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
        experiment = Experiment(self.param_space, tc.metric, tc.mode, search_alg=tc.search_alg,
                                scheduler=tc.scheduler, num_samples=tc.num_samples, seed=tc.seed,
                                storage_path=rc.storage_path or "~/ember_results", name=rc.name,
                                max_failures=rc.failure_config.max_failures, stop=rc.stop,
                                checkpoint_config=rc.checkpoint_config)
        save_components(os.path.join(experiment.path, TUNER_STATE),
                        {"executor": tc.executor, "max_concurrent_trials": tc.max_concurrent_trials,
                         "verbose": rc.verbose, "progress_interval": rc.progress_interval})
        return experiment


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
