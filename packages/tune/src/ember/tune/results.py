"""The outcome of an experiment: one :class:`Result` per trial, gathered in a :class:`ResultGrid`.

>>> from ember import tune
>>> exp = tune.Experiment({"x": tune.grid_search([1, 2, 3])}, metric="loss", mode="min", seed=0)
>>> while (trial := exp.ask()) is not None:
...     exp.tell(trial, {"loss": (trial.config["x"] - 2) ** 2})
>>> grid = exp.results()
>>> len(grid), grid.num_terminated, grid.get_best_result().config
(3, 3, {'x': 2})
>>> print(grid.table())  # doctest: +NORMALIZE_WHITESPACE
trial_id  status      x  loss  training_iteration
00000     TERMINATED  1  1     1
00001     TERMINATED  2  0     1
00002     TERMINATED  3  1     1
"""
from __future__ import annotations

import csv
import dataclasses
import json
import math

from ._objective import MODES, constraint_violation, dominates, is_multi, losses, objectives, value_loss
from .cells import cell, flatten, plain
from .journal import json_default

#: the result keys every result has, shown after the metric in tables
_BOOKKEEPING = ("training_iteration", "trial_id", "timestamp", "time_total_s")


@dataclasses.dataclass
class Result:
    """One trial's outcome: ``config``, ``metrics`` (its last result), ``metrics_history`` (every result, in
    order), ``checkpoint`` (path of its latest kept checkpoint), ``error`` (traceback text if it ended in
    ERROR), ``path`` (its folder), ``trial_id``, ``status`` and ``num_failures``."""
    config: dict
    metrics: dict
    metrics_history: list
    checkpoint: str | None
    error: str | None
    path: str | None
    trial_id: str
    status: str
    num_failures: int = 0

    @classmethod
    def from_trial(cls, trial) -> Result:
        return cls(config=trial.config, metrics=dict(trial.last_result or {}),
                   metrics_history=[dict(r) for r in trial.results], checkpoint=trial.checkpoint,
                   error=trial.error if trial.status == "ERROR" else None, path=trial.trial_dir,
                   trial_id=trial.trial_id, status=trial.status, num_failures=trial.num_failures)


class ResultGrid:
    """The results of an experiment's trials: iterate, index, pick the best, print, export, plot."""

    def __init__(self, results: list, metric: str | None = None, mode: str | None = None, path: str | None = None):
        self._results, self.metric, self.mode, self.path = list(results), metric, mode, path

    @classmethod
    def from_trials(cls, trials, metric, mode, path) -> ResultGrid:
        return cls([Result.from_trial(t) for t in trials], metric, mode, path)

    def __len__(self):
        return len(self._results)

    def __getitem__(self, i) -> Result:
        return self._results[i]

    def __iter__(self):
        return iter(self._results)

    def __repr__(self):
        return (f"ResultGrid({len(self)} trials: {self.num_terminated} terminated, {self.num_errors} errored; "
                f"metric={self.metric!r}, mode={self.mode!r})")

    @property
    def errors(self) -> list:
        """The traceback texts of the trials that ended in ERROR."""
        return [r.error for r in self._results if r.status == "ERROR"]

    @property
    def num_errors(self) -> int:
        """How many trials ended in ERROR."""
        return sum(r.status == "ERROR" for r in self._results)

    @property
    def num_terminated(self) -> int:
        """How many trials ended normally (finished or stopped early)."""
        return sum(r.status == "TERMINATED" for r in self._results)

    def get_best_result(self, metric: str | None = None, mode: str | None = None, scope: str = "last",
                        filter_nan_and_inf: bool = True) -> Result:
        """The trial with the best ``metric`` (default: the experiment's) in ``mode``.

        ``scope="last"`` compares each trial's last result, ``"all"`` its best result over all iterations.
        NaN and infinite values are skipped unless ``filter_nan_and_inf=False``.
        """
        if is_multi(self.metric) and metric is None:
            raise ValueError(f"get_best_result: the experiment has several objectives {self.metric}: give metric= "
                             "(and mode=) to pick the best by one of them, or use get_pareto_front()")
        if is_multi(self.metric) and metric in self.metric and mode is None:
            mode = self.mode[self.metric.index(metric)]
        metric = metric or self.metric
        mode = mode or self.mode
        if metric is None or mode not in MODES:
            raise ValueError("get_best_result: give metric= and mode= ('min' or 'max'); the experiment has "
                             f"metric={self.metric!r}, mode={self.mode!r}")
        if scope not in ("last", "all"):
            raise ValueError(f"get_best_result: scope must be 'last' or 'all', got {scope!r}")
        best, best_loss = None, math.inf
        for result in self._results:
            history = result.metrics_history if scope == "all" else result.metrics_history[-1:]
            for r in history:
                if metric not in r:
                    continue
                value = float(r[metric])
                if filter_nan_and_inf and not math.isfinite(value):
                    continue
                if best is None or value_loss(value, mode) < best_loss:
                    best, best_loss = result, value_loss(value, mode)
        if best is None:
            raise RuntimeError(f"get_best_result: no trial reported {metric!r}"
                               + (" as a finite value" if filter_nan_and_inf else "")
                               + f" ({len(self)} trials, {self.num_errors} errored)")
        return best

    def get_pareto_front(self, metric: list | None = None, mode: list | None = None) -> list:
        """The results no other result dominates in ``metric`` (default: the experiment's objectives), each
        read in its ``mode``: a result dominates another when it is at least as good in every objective and
        better in one. Each trial counts with its last result; results missing an objective or with a NaN
        in one are left out, and so are infeasible ones (a reported ``constraints`` value > 0). In trial
        order.

        >>> from ember import tune
        >>> exp = tune.Experiment({"x": tune.grid_search([0, 1, 2, 3])}, metric=["a", "b"], mode=["min", "min"])
        >>> while (trial := exp.ask()) is not None:
        ...     x = trial.config["x"]
        ...     exp.tell(trial, {"a": x, "b": [3, 1, 2, 0][x]})
        >>> [r.config["x"] for r in exp.results().get_pareto_front()]
        [0, 1, 3]
        """
        metric = self.metric if metric is None else metric
        mode = self.mode if mode is None and metric is self.metric else mode
        if metric is None or mode is None:
            raise ValueError("get_pareto_front: give metric= and mode= (lists of as many keys and 'min'/'max'); "
                             f"the experiment has metric={self.metric!r}, mode={self.mode!r}")
        metrics, modes = objectives(metric, mode, "get_pareto_front")
        points = []
        for result in self._results:
            last = result.metrics
            if constraint_violation(last) > 0 or not all(m in last for m in metrics):
                continue
            point = losses(last, metrics, modes)
            if all(math.isfinite(v) or v == -math.inf for v in point):
                points.append((result, point))
        return [r for r, p in points if not any(dominates(q, p) for _, q in points)]

    # ---------------------------------------------------------------- tables and exports

    def _metrics(self) -> list:
        """The experiment's objectives as a list (empty without one)."""
        return [] if self.metric is None else [self.metric] if isinstance(self.metric, str) else list(self.metric)

    def _rows(self) -> tuple:
        """``(columns, rows)``: one row per trial, config flattened to "a/b" columns, last metrics after."""
        configs = [flatten(r.config) for r in self._results]
        config_cols = _union(c.keys() for c in configs)
        metric_keys = _union(r.metrics.keys() for r in self._results)
        first = [k for k in (*self._metrics(), *_BOOKKEEPING) if k in metric_keys]
        metric_cols = [k for k in first + [k for k in metric_keys if k not in first] if k != "trial_id"]
        columns = ["trial_id", "status", "num_failures", *(f"config/{k}" for k in config_cols), *metric_cols, "error"]
        rows = [[r.trial_id, r.status, r.num_failures, *(c.get(k) for k in config_cols),
                 *(r.metrics.get(k) for k in metric_cols), r.error]
                for r, c in zip(self._results, configs)]
        return columns, rows

    def table(self, max_rows: int | None = None) -> str:
        """A text table: trial id, status, the config's values, the metric and ``training_iteration``
        (and the failure count when any failed); at most ``max_rows`` trials, best first when given."""
        header, rows = self.table_cells(max_rows)
        lines = [header] + rows
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() for line in lines)

    def table_cells(self, max_rows: int | None = None) -> tuple:
        """``(header, rows)`` of :meth:`table`, every cell a string."""
        results = self._results
        if max_rows is not None and self.metric is not None:
            (metric, *_), (mode, *_) = objectives(self.metric, self.mode)  # several objectives: by the first
            results = sorted(results, key=lambda r: (metric not in r.metrics,
                                                     value_loss(r.metrics.get(metric), mode)))[:max_rows]
        configs = [flatten(r.config) for r in results]
        config_cols = _union(c.keys() for c in configs)
        shown = [*self._metrics(), "training_iteration"]
        failures = any(r.num_failures for r in results)
        header = ["trial_id", "status", *config_cols, *shown] + (["failures"] if failures else [])
        rows = [[r.trial_id, r.status, *(cell(c.get(k)) for k in config_cols),
                 *(cell(r.metrics.get(k)) for k in shown)] + ([str(r.num_failures)] if failures else [])
                for r, c in zip(results, configs)]
        return header, rows

    def to_csv(self, path: str) -> None:
        """One row per trial: id, status, failures, ``config/<param>`` columns, the last metrics, the error."""
        columns, rows = self._rows()
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(columns)
            writer.writerows([["" if v is None else plain(v) for v in row] for row in rows])

    def to_json(self, path: str) -> None:
        """Everything: metric, mode and, per trial, config, status, last metrics, full history, checkpoint,
        error and folder."""
        data = {"metric": self.metric, "mode": self.mode, "path": self.path,
                "trials": [dataclasses.asdict(r) for r in self._results]}
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, default=json_default)

    def get_dataframe(self):
        """The CSV's table as a pandas DataFrame (needs pandas, which ember.tune does not depend on)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("ResultGrid.get_dataframe needs pandas: pip install pandas "
                              "(or use to_csv / to_json, which need nothing)") from None
        columns, rows = self._rows()
        return pandas.DataFrame(rows, columns=columns)

    def plot_learning_curves(self, *args, **kwargs):
        """Each trial's metric against ``training_iteration``: see :func:`ember.tune.plot_learning_curves`."""
        from .plot import plot_learning_curves
        return plot_learning_curves(self, *args, **kwargs)

    def plot_best_over_time(self, *args, **kwargs):
        """The best metric so far against time: see :func:`ember.tune.plot_best_over_time`."""
        from .plot import plot_best_over_time
        return plot_best_over_time(self, *args, **kwargs)


def _union(key_lists) -> list:
    seen = {}
    for keys in key_lists:
        seen.update(dict.fromkeys(keys))
    return list(seen)
