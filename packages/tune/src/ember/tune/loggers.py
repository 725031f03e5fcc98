"""Loggers: callbacks that write each trial's results for another tool (Ray Tune's ``LoggerCallback``).

Every Tuner run writes, in each trial's folder, ``params.json`` (its configuration), ``result.json`` (one
JSON object per line, one line per result) and ``progress.csv`` (one row per result): :class:`JsonLoggerCallback`
and :class:`CSVLoggerCallback` are always on. TensorBoard (:class:`~ember.tune.TBXLoggerCallback`, extra
``ember-tune[tensorboard]``) and MLflow (:class:`~ember.tune.MLflowLoggerCallback`, extra ``ember-tune[mlflow]``)
are added with ``RunConfig(callbacks=[...])``.

Nested results are flattened with "/" (``{"val": {"loss": 1}}`` is the column ``val/loss``). A trial that
restarts from a checkpoint reports the iterations after it again: the files then hold both reports.

>>> import csv, json, os, tempfile
>>> from ember.tune.trial import Trial
>>> trial = Trial("00000", {"lr": 0.1}, tempfile.mkdtemp())
>>> for logger in (JsonLoggerCallback(), CSVLoggerCallback()):
...     logger.on_trial_start(0, [trial], trial)
...     logger.on_trial_result(0, [trial], trial, {"loss": 0.5, "training_iteration": 1})
...     logger.on_trial_complete(0, [trial], trial)
>>> json.load(open(os.path.join(trial.trial_dir, "params.json")))
{'lr': 0.1}
>>> list(csv.DictReader(open(os.path.join(trial.trial_dir, "progress.csv"))))
[{'loss': '0.5', 'training_iteration': '1'}]
"""
from __future__ import annotations

import csv
import json
import os

from .callbacks import Callback
from .cells import flatten, plain
from .journal import json_default


class LoggerCallback(Callback):
    """A callback that logs per trial: override :meth:`log_trial_start`, :meth:`log_trial_result` and
    :meth:`log_trial_end` (Ray Tune's names); trials without a folder (no storage) are skipped by the
    file loggers."""

    def log_trial_start(self, trial) -> None:
        """The trial's process started (first start, resume or retry)."""

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        """The trial reported ``result``."""

    def log_trial_end(self, trial, failed: bool = False) -> None:
        """The trial ended for good (``failed``: as ERROR)."""

    def on_trial_start(self, iteration, trials, trial, **info):
        self.log_trial_start(trial)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self.log_trial_result(iteration, trial, result)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.log_trial_end(trial, failed=False)

    def on_trial_error(self, iteration, trials, trial, **info):
        self.log_trial_end(trial, failed=True)


class JsonLoggerCallback(LoggerCallback):
    """``params.json`` (the configuration) and ``result.json`` (a JSON line per result) in each trial's folder."""

    def log_trial_start(self, trial):
        if trial.trial_dir is None:
            return
        with open(os.path.join(trial.trial_dir, "params.json"), "w", encoding="utf-8") as f:
            json.dump(trial.config, f, indent=1, default=json_default)

    def log_trial_result(self, iteration, trial, result):
        if trial.trial_dir is None:
            return
        with open(os.path.join(trial.trial_dir, "result.json"), "a", encoding="utf-8") as f:
            f.write(json.dumps(result, default=json_default) + "\n")


class CSVLoggerCallback(LoggerCallback):
    """``progress.csv`` in each trial's folder: a row per result, a column per (flattened) key. A key that
    first appears in a later result widens the file (it is rewritten with the new header once)."""

    FILE = "progress.csv"

    def __init__(self):
        self._columns: dict = {}  # trial id -> the file's columns (read once: the file may predate a restore)

    def log_trial_result(self, iteration, trial, result):
        if trial.trial_dir is None:
            return
        path = os.path.join(trial.trial_dir, self.FILE)
        row = {key: plain(value) for key, value in flatten(result).items()}
        if trial.trial_id not in self._columns:
            self._columns[trial.trial_id] = _header(path)
        columns = self._columns[trial.trial_id]
        if columns is not None and set(row) <= set(columns):
            with open(path, "a", newline="", encoding="utf-8") as f:
                csv.DictWriter(f, columns).writerow(row)
            return
        rows = []
        if columns is not None:
            with open(path, newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        columns = self._columns[trial.trial_id] = list(dict.fromkeys([*(columns or []), *row]))
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, columns)
            writer.writeheader()
            writer.writerows([*rows, row])


def _header(path: str) -> list | None:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return next(csv.reader(f), None)
    except FileNotFoundError:
        return None


#: the loggers every Tuner run has (a callback of the same class in RunConfig.callbacks replaces one)
DEFAULT_LOGGERS = (JsonLoggerCallback, CSVLoggerCallback)
