"""The live progress table a :class:`ember.tune.Tuner` prints while it runs (``RunConfig(verbose=1)``).

Every ``interval`` seconds: how many trials are running, paused, pending, terminated and errored, the best
result so far, and a table of the trials (best first). With `rich <https://github.com/Textualize/rich>`_
installed the table is drawn with it; otherwise plain text lines.

>>> import io
>>> from ember.tune.trial import Trial
>>> a, b = Trial("00000", {"lr": 0.1}), Trial("00001", {"lr": 0.01})
>>> a.status, b.status = "TERMINATED", "RUNNING"
>>> a.results.append({"loss": 0.5, "training_iteration": 3}); b.results.append({"loss": 0.7, "training_iteration": 1})
>>> out = io.StringIO()
>>> ProgressReporter("loss", "min", interval=0, out=out, use_rich=False).update([a, b], force=True)
>>> print(out.getvalue())  # doctest: +NORMALIZE_WHITESPACE
== 2 trials: 1 running, 0 paused, 0 pending, 1 terminated, 0 errored | best loss=0.5 (trial 00000, lr=0.1) ==
trial_id  status      lr    loss  training_iteration
00000     TERMINATED  0.1   0.5   3
00001     RUNNING     0.01  0.7   1
<BLANKLINE>
"""
from __future__ import annotations

import sys
import time

from .results import ResultGrid, _flatten


class ProgressReporter:
    """Prints the state of an experiment's trials at most every ``interval`` seconds.

    ``max_rows``: trials shown (the best first when there are more); ``out``: a text stream (default
    stdout); ``use_rich``: None uses rich when it is installed.
    """

    def __init__(self, metric: str, mode: str, interval: float = 5.0, max_rows: int = 20, out=None,
                 use_rich: bool | None = None):
        self.metric, self.mode, self.interval, self.max_rows = metric, mode, interval, max_rows
        self.out = out if out is not None else sys.stdout
        if use_rich is None:
            try:
                import rich  # noqa: F401
                use_rich = True
            except ImportError:
                use_rich = False
        self.use_rich = use_rich
        self._last = -float("inf")

    def update(self, trials: list, force: bool = False) -> None:
        """Print the table if ``interval`` seconds passed since the last one (or ``force``)."""
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        grid = ResultGrid.from_trials(trials, self.metric, self.mode, None)
        summary = self.summary(trials, grid)
        max_rows = self.max_rows if len(trials) > self.max_rows else None
        if self.use_rich:
            self._print_rich(summary, *grid.table_cells(max_rows))
        else:
            self.out.write(f"== {summary} ==\n{grid.table(max_rows)}\n")
            self.out.flush()

    def summary(self, trials: list, grid: ResultGrid) -> str:
        """One line: counts per status and the best result so far."""
        counts = {s: 0 for s in ("RUNNING", "PAUSED", "PENDING", "TERMINATED", "ERROR")}
        for t in trials:
            counts[t.status] += 1
        line = (f"{len(trials)} trials: {counts['RUNNING']} running, {counts['PAUSED']} paused, "
                f"{counts['PENDING']} pending, {counts['TERMINATED']} terminated, {counts['ERROR']} errored")
        try:
            best = grid.get_best_result()
        except RuntimeError:
            return line
        config = ", ".join(f"{k}={v}" for k, v in _flatten(best.config).items())
        return f"{line} | best {self.metric}={best.metrics[self.metric]:.6g} (trial {best.trial_id}, {config})"

    def _print_rich(self, summary: str, header: list, rows: list) -> None:
        from rich.console import Console
        from rich.table import Table
        table = Table()
        for column in header:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        console = Console(file=self.out)
        console.print(summary, soft_wrap=True, highlight=False, markup=False)  # one line, as in plain text
        console.print(table)
