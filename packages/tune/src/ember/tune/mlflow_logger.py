"""MLflowLoggerCallback: an MLflow run per trial (extra ``ember-tune[mlflow]``), Ray Tune's name and arguments.

>>> from ember import tune
>>> cb = tune.MLflowLoggerCallback("sqlite:///mlflow.db", experiment_name="digits")  # doctest: +SKIP

``tracking_uri`` is any MLflow store: a server (``http://...``), a local database (``sqlite:///mlflow.db``),
or a folder (``file:///...``, which MLflow 3 refuses unless ``MLFLOW_ALLOW_FILE_STORE=true``).

Each trial becomes a run named after its trial id in the MLflow experiment ``experiment_name`` (created if
missing; None: the ember.tune experiment's folder name): its configuration as parameters (flattened with
"/"), every numeric result key as a metric at step ``training_iteration``, ``tags`` plus ``trial_id`` as
tags, and the run ends FINISHED or FAILED with the trial. ``save_artifact=True`` also uploads the trial's
folder (results, checkpoints) as the run's artifacts when it ends.
"""
from __future__ import annotations

import os

from .cells import flatten, numbers
from .loggers import LoggerCallback


class MLflowLoggerCallback(LoggerCallback):
    """Logs each trial as an MLflow run. ``tracking_uri``: the tracking server or store (None: MLflow's
    default, ``MLFLOW_TRACKING_URI``); ``experiment_name``; ``tags``: added to every run;
    ``save_artifact``: upload the trial's folder when it ends."""

    def __init__(self, tracking_uri: str | None = None, *, experiment_name: str | None = None,
                 tags: dict | None = None, save_artifact: bool = False):
        try:
            from mlflow.tracking import MlflowClient
        except ImportError:
            raise ImportError("MLflowLoggerCallback needs mlflow: pip install 'ember-tune[mlflow]'") from None
        self.tracking_uri, self.experiment_name = tracking_uri, experiment_name
        self.tags, self.save_artifact = dict(tags or {}), save_artifact
        self._client_class = MlflowClient
        self.client = None
        self.experiment_id = None
        self._runs: dict = {}  # trial id -> MLflow run id

    def setup(self, stop=None, num_samples=None, total_num_samples=None, **info):
        self.client = self._client_class(tracking_uri=self.tracking_uri)
        experiment = info.get("experiment")
        name = self.experiment_name or (os.path.basename(experiment.path) if experiment is not None
                                        and experiment.path else "ember-tune")
        found = self.client.get_experiment_by_name(name)
        self.experiment_id = found.experiment_id if found is not None else self.client.create_experiment(name)

    def log_trial_start(self, trial):
        if trial.trial_id in self._runs:
            return
        run = self.client.create_run(self.experiment_id, run_name=trial.trial_id,
                                     tags={**self.tags, "trial_id": trial.trial_id})
        self._runs[trial.trial_id] = run.info.run_id
        for key, value in flatten(trial.config).items():
            self.client.log_param(run.info.run_id, key, value)

    def log_trial_result(self, iteration, trial, result):
        run_id = self._runs.get(trial.trial_id)
        if run_id is None:
            return
        from mlflow.entities import Metric
        step, timestamp = int(result.get("training_iteration", 0)), int(result.get("timestamp", 0) * 1000)
        metrics = [Metric(key, value, timestamp, step) for key, value in numbers(result).items()]
        self.client.log_batch(run_id, metrics=metrics)

    def log_trial_end(self, trial, failed=False):
        run_id = self._runs.pop(trial.trial_id, None)
        if run_id is None:
            return
        if self.save_artifact and trial.trial_dir is not None:
            self.client.log_artifacts(run_id, trial.trial_dir)
        self.client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")

    def on_experiment_end(self, trials, **info):
        for run_id in self._runs.values():  # trials still paused or running when fit left
            self.client.set_terminated(run_id, status="KILLED")
        self._runs.clear()
