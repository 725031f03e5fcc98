"""The live progress view of a :class:`ember.tune.Tuner` (``RunConfig(verbose=1)``), a :class:`~ember.tune.Callback`.

Every ``interval`` seconds it shows one status line: time elapsed, an estimate of the time left (from the
trials ended so far against the number the experiment will create, and from ``TuneConfig.time_budget_s``
where there is one), the trials per status, why the paused ones wait, and the best result so far. With
`rich <https://github.com/Textualize/rich>`_ installed and a terminal (or notebook) to draw on, the status line
and a table of the trials (best first) are redrawn in place; otherwise the status line is printed, one line
per interval, and the table once at the end. The table shows each trial's configuration (4 significant
digits), the metric, the other reported values, and what the scheduler says of it (its bracket and rung;
for a PAUSED trial what it waits for).

>>> import io
>>> from ember.tune.trial import Trial
>>> a, b = Trial("00000", {"lr": 0.123456}), Trial("00001", {"lr": 0.01})
>>> a.status, b.status = "TERMINATED", "RUNNING"
>>> a.results.append({"loss": 0.5, "acc": 0.9, "training_iteration": 3})
>>> b.results.append({"loss": 0.7, "acc": 0.8, "training_iteration": 1})
>>> view = ProgressReporter("loss", "min", out=io.StringIO(), use_rich=False)
>>> print(view.table([a, b]))  # doctest: +NORMALIZE_WHITESPACE
trial_id  status      lr      loss  training_iteration  acc
00000     TERMINATED  0.1235  0.5   3                   0.9
00001     RUNNING     0.01    0.7   1                   0.8
>>> view.status_line([a, b], elapsed=30)
'[0:00:30] 2 trials: 1 running, 0 paused, 0 pending, 1 terminated, 0 errored | best loss=0.5 (trial 00000, lr=0.1235)'
"""
from __future__ import annotations

import os
import sys
import time

from ._objective import value_loss
from .callbacks import Callback
from .cells import cell, flatten

#: result keys not shown as metric columns (every result has them)
_HIDDEN = ("trial_id", "timestamp", "time_total_s")
_STATUSES = ("RUNNING", "PAUSED", "PENDING", "TERMINATED", "ERROR")


class ProgressReporter(Callback):
    """Shows the experiment's progress at most every ``interval`` seconds.

    ``metric``/``mode``: taken from the experiment when None. ``max_rows``: trials in the table (the best
    first when there are more); ``max_metrics``: reported keys shown besides the metric; ``out``: a text
    stream (default stdout); ``use_rich``: None draws with rich when it is installed and ``out`` is a
    terminal or a notebook, True always (on ``out`` as a terminal), False never.
    """

    def __init__(self, metric: str | None = None, mode: str | None = None, interval: float = 5.0,
                 max_rows: int = 20, max_metrics: int = 5, out=None, use_rich: bool | None = None):
        self.metric, self.mode, self.interval = metric, mode, interval
        self.max_rows, self.max_metrics = max_rows, max_metrics
        self.out = out if out is not None else sys.stdout
        self._force_terminal = use_rich is True
        self.use_rich = _rich_usable(self.out) if use_rich is None else use_rich
        self.total: int | None = None
        self.time_budget_s: float | None = None
        self.scheduler = None
        self.path: str | None = None
        self._started = time.monotonic()
        self._ended_before = 0  # trials that had ended before this run (a restore): not counted in the pace
        self._last = -float("inf")
        self._live = None

    # ---------------------------------------------------------------- Callback hooks

    def setup(self, stop=None, num_samples=None, total_num_samples=None, **info):
        experiment = info.get("experiment")
        if experiment is not None:
            self.metric, self.mode = self.metric or experiment.metric, self.mode or experiment.mode
            self.scheduler, self.path = experiment.scheduler, experiment.path
            self._ended_before = sum(t.is_finished for t in experiment.trials)
        if isinstance(self.metric, list):  # several objectives: ranked by the first, the others shown after it
            self.metric, self.mode = self.metric[0], self.mode[0]
        self.total, self.time_budget_s = total_num_samples, info.get("time_budget_s")
        self._started = time.monotonic()

    def on_step_end(self, iteration, trials, **info):
        self.update(trials)

    def on_experiment_end(self, trials, **info):
        self.update(trials, force=True)
        if self._live is not None:
            self._live.stop()
            self._live = None
        else:
            self.out.write(self.table(trials) + "\n")
        if self.path is not None:
            self.out.write(f"ember.tune: experiment {'stopped' if info.get('error') else 'finished'}: {self.path}"
                           f"\n{checkpoint_use(trials)}\n")
        self.out.flush()

    # ---------------------------------------------------------------- drawing

    def update(self, trials: list, force: bool = False) -> None:
        """Show the progress if ``interval`` seconds passed since the last time (or ``force``)."""
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        line = self.status_line(trials, now - self._started)
        if not self.use_rich:
            self.out.write(line + "\n")
            self.out.flush()
            return
        from rich.console import Group
        from rich.live import Live
        from rich.table import Table
        from rich.text import Text
        header, rows = self.table_cells(trials)
        table = Table()
        for column in header:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        view = Group(Text(line), table)
        if self._live is None:
            from rich.console import Console
            console = Console(file=self.out, force_terminal=True if self._force_terminal else None)
            self._live = Live(view, console=console, auto_refresh=False, redirect_stdout=False,
                              redirect_stderr=False)
            self._live.start()
        self._live.update(view, refresh=True)

    def status_line(self, trials: list, elapsed: float) -> str:
        """Elapsed time, time left, trials per status (why the paused wait), and the best result so far."""
        counts = dict.fromkeys(_STATUSES, 0)
        for t in trials:
            counts[t.status] += 1
        clock = _duration(elapsed)
        eta = self.eta(trials, elapsed)
        if eta is not None:
            clock += f", about {_duration(eta)} left"
        if self.total is not None:
            clock += f", {counts['TERMINATED'] + counts['ERROR']}/{self.total} trials ended"
        paused = f"{counts['PAUSED']} paused"
        waits = [self._describe(t.trial_id) for t in trials if t.status == "PAUSED"]
        if any(waits):
            paused += " (at a rung barrier: resumed when their rung is complete)" \
                if all("barrier" in w for w in waits) else " (see the table)"
        line = (f"[{clock}] {len(trials)} trials: {counts['RUNNING']} running, {paused}, {counts['PENDING']} pending, "
                f"{counts['TERMINATED']} terminated, {counts['ERROR']} errored")
        best = self._best(trials)
        if best is None:
            return line
        config = ", ".join(f"{k}={_short(v)}" for k, v in flatten(best.config).items())
        return f"{line} | best {self.metric}={cell(best.last_result[self.metric])} (trial {best.trial_id}, {config})"

    def eta(self, trials: list, elapsed: float) -> float | None:
        """Seconds left: at the pace trials ended so far, the rest of ``total``; at most what is left of the
        time budget. None when neither is known."""
        estimates = []
        ended = sum(t.is_finished for t in trials) - self._ended_before
        if self.total is not None and ended > 0:
            estimates.append(elapsed * max(0, self.total - ended - self._ended_before) / ended)
        if self.time_budget_s is not None:
            estimates.append(max(0.0, self.time_budget_s - elapsed))
        return min(estimates) if estimates else None

    def table_cells(self, trials: list) -> tuple:
        """``(header, rows)``, every cell a string: the best ``max_rows`` trials (all if fewer)."""
        shown = list(trials)
        if self.metric is not None and len(shown) > self.max_rows:
            shown = sorted(shown, key=self._rank)[:self.max_rows]
        configs = [flatten(t.config) for t in shown]
        config_cols = list(dict.fromkeys(k for c in configs for k in c))
        last = [t.last_result or {} for t in shown]
        first = [k for k in (self.metric, "training_iteration") if k is not None]
        others = list(dict.fromkeys(k for r in last for k, v in flatten(r).items()
                                    if k not in first and k not in _HIDDEN and isinstance(v, (int, float, str))))
        metric_cols = first + others[:self.max_metrics]
        notes = [self._note(t) for t in shown]
        header = ["trial_id", "status", *config_cols, *metric_cols] + (["scheduler"] if any(notes) else [])
        rows = []
        for t, c, r, note in zip(shown, configs, last, notes):
            flat = flatten(r)
            rows.append([t.trial_id, t.status, *(_short(c.get(k)) for k in config_cols),
                         *(cell(flat.get(k)) for k in metric_cols)] + ([note] if any(notes) else []))
        return header, rows

    def table(self, trials: list) -> str:
        """:meth:`table_cells` as aligned text."""
        header, rows = self.table_cells(trials)
        lines = [header] + rows
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() for line in lines)

    def _note(self, trial) -> str:
        if trial.status == "PENDING" and trial.num_failures:
            return f"retry {trial.num_failures} after a failure"
        if trial.status == "ERROR":
            return f"failed {trial.num_failures} times"
        return self._describe(trial.trial_id) if not trial.is_finished else ""

    def _describe(self, trial_id: str) -> str:
        describe = getattr(self.scheduler, "describe_trial", None)
        return describe(trial_id) if describe is not None else ""

    def _rank(self, trial):
        value = (trial.last_result or {}).get(self.metric)
        return (value is None, value_loss(value, self.mode) if value is not None else 0.0)

    def _best(self, trials: list):
        ranked = [t for t in trials if (t.last_result or {}).get(self.metric) is not None]
        return min(ranked, key=self._rank) if ranked and self.metric is not None else None


def checkpoint_use(trials: list) -> str:
    """One line: how many checkpoints the trials' folders hold and their size on disk."""
    count = size = 0
    for trial in trials:
        if trial.trial_dir is None or not os.path.isdir(trial.trial_dir):
            continue
        for name in os.listdir(trial.trial_dir):
            if name.startswith("checkpoint_"):
                count += 1
                size += _size(os.path.join(trial.trial_dir, name))
    return (f"checkpoints kept: {count} ({size / 2**20:.1f} MiB); "
            "RunConfig(checkpoint_config=CheckpointConfig(num_to_keep=k)) keeps the best k per trial (default: "
            "the 2 most recent)")


def _size(path: str) -> int:
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def _short(value) -> str:
    """A configuration value for the view: floats to 4 significant digits."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return cell(value)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _rich_usable(out) -> bool:
    try:
        from rich.console import Console
    except ImportError:
        return False
    isatty = getattr(out, "isatty", None)
    return bool(isatty is not None and isatty()) or Console(file=out).is_jupyter
