"""The Tuner's clocks: the experiment's time budget (``TuneConfig.time_budget_s``, counted over all runs of
an experiment) and the timeout of each trial's run (``TuneConfig.trial_timeout_s``).

>>> clock = Deadlines(time_budget_s=60.0, trial_timeout_s=5.0, used_s=59.0)
>>> clock.started("00000")
>>> clock.overdue(), clock.budget_spent(), 0.9 < clock.remaining() <= 1.0
([], False, True)
"""
from __future__ import annotations

import time


class Deadlines:
    """When the budget runs out (``used_s``: spent by earlier runs) and which running trials are overdue."""

    def __init__(self, time_budget_s: float | None, trial_timeout_s: float | None, used_s: float = 0.0):
        self.time_budget_s, self.trial_timeout_s = time_budget_s, trial_timeout_s
        self._end = None if time_budget_s is None else time.monotonic() + time_budget_s - used_s
        self._started: dict = {}  # trial_id -> when its current run started

    def started(self, trial_id: str) -> None:
        self._started[trial_id] = time.monotonic()

    def ended(self, trial_id: str) -> None:
        self._started.pop(trial_id, None)

    def remaining(self) -> float | None:
        """Seconds left of the budget (None: no budget)."""
        return None if self._end is None else max(0.0, self._end - time.monotonic())

    def budget_spent(self) -> bool:
        return self._end is not None and time.monotonic() >= self._end

    def overdue(self) -> list:
        """The trials whose run has lasted longer than ``trial_timeout_s``, oldest first."""
        if self.trial_timeout_s is None:
            return []
        limit = time.monotonic() - self.trial_timeout_s
        return [trial_id for trial_id, t in sorted(self._started.items(), key=lambda kv: kv[1]) if t <= limit]

    def timeout_error(self, trial_id: str) -> str:
        return (f"trial {trial_id} exceeded trial_timeout_s={self.trial_timeout_s:g}: its run was killed after "
                f"{time.monotonic() - self._started[trial_id]:.1f} s")


def time_used(records: list) -> float:
    """Seconds the runs recorded in a journal took: for each run (begun by the header or a restore record),
    from its start to the last time it recorded (a result's ``timestamp``, a halt). A run that was killed
    counts until its last record."""
    used, start, last = 0.0, None, None
    for record in records:
        if not isinstance(record, dict):
            continue
        kind = record.get("e")
        if kind in ("experiment", "restore") and _is_time(record.get("time")):
            if start is not None:
                used += max(0.0, min(last, record["time"]) - start)
            start = last = record["time"]
            continue
        stamp = record.get("time") if kind == "halt" else (record.get("m") or {}).get("timestamp") \
            if kind == "report" and isinstance(record.get("m"), dict) else None
        if start is not None and _is_time(stamp):
            last = max(last, stamp)
    if start is not None:
        used += last - start
    return used


def _is_time(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def recorded_setting(records: list, settings: dict, key: str):
    """The value of Tuner setting ``key`` in effect after the journal's runs: the header's, or the latest a
    ``Tuner.restore`` recorded."""
    value = settings.get(key)
    for record in records[1:]:
        if isinstance(record, dict) and record.get("e") == "restore" and key in record:
            value = record[key]
    return value
