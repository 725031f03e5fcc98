"""The Tuner's clocks (ember.tune._budget): the time budget spanning restores, trial timeouts, and the
settings a restore records."""
import json
import os

import pytest

from ember import tune
from ember.tune import _budget
from ember.tune.journal import JournalError


def test_time_used_sums_each_run_from_its_start_to_its_last_record():
    records = [
        {"e": "experiment", "time": 1000.0},
        {"e": "ask", "t": "00000", "c": {}},
        {"e": "report", "t": "00000", "m": {"timestamp": 1004.0}},
        {"e": "report", "t": "00000", "m": {"timestamp": 1007.5}},
        {"e": "tell", "t": "00000", "err": None},            # killed here: the run counts 7.5 s
        {"e": "restore", "time": 2000.0},
        {"e": "report", "t": "00000", "m": {"timestamp": "x"}},  # not a time: ignored
        {"e": "halt", "why": "time_budget_s=10 spent", "time": 2002.5},
        {"e": "restore", "time": 3000.0},
    ]
    assert _budget.time_used(records) == 7.5 + 2.5 + 0.0
    assert _budget.time_used(records[:1]) == 0.0 and _budget.time_used([]) == 0.0
    # a report stamped after the next run began (a wrong clock) counts no further than that run's start
    assert _budget.time_used([{"e": "experiment", "time": 10.0}, {"e": "report", "m": {"timestamp": 99.0}},
                              {"e": "restore", "time": 20.0}]) == 10.0


def test_deadlines_budget_and_overdue_trials(monkeypatch):
    clock = [50.0]
    monkeypatch.setattr(_budget.time, "monotonic", lambda: clock[0])
    deadlines = _budget.Deadlines(time_budget_s=10.0, trial_timeout_s=2.0, used_s=4.0)
    assert deadlines.remaining() == 6.0 and not deadlines.budget_spent()
    deadlines.started("00001")
    clock[0] = 51.0
    deadlines.started("00000")
    clock[0] = 51.9
    assert deadlines.overdue() == []
    clock[0] = 53.5
    assert deadlines.overdue() == ["00001", "00000"]  # the oldest first
    assert deadlines.timeout_error("00001") == \
        "trial 00001 exceeded trial_timeout_s=2: its run was killed after 3.5 s"
    deadlines.ended("00001")
    clock[0] = 56.0
    assert deadlines.overdue() == ["00000"] and deadlines.budget_spent() and deadlines.remaining() == 0.0
    unlimited = _budget.Deadlines(None, None)
    unlimited.started("00000")
    clock[0] = 1e9
    assert unlimited.remaining() is None and not unlimited.budget_spent() and unlimited.overdue() == []


def quick(config):
    tune.report({"loss": config["x"]})


def test_restore_records_the_limits_it_is_given_and_refuses_a_wrong_recorded_one(tmp_path):
    tuner = tune.Tuner(quick, param_space={"x": tune.uniform(0, 1)},
                       tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=2, seed=0,
                                                   time_budget_s=60, trial_timeout_s=30),
                       run_config=tune.RunConfig(storage_path=str(tmp_path), name="limits", verbose=0))
    tuner.fit()
    path = os.path.join(str(tmp_path), "limits")

    def limits(**given):
        restored = tune.Tuner.restore(path, quick, **given)
        restored._experiment.close()  # (the journal stays locked while an experiment holds it)
        return restored.tune_config.time_budget_s, restored.tune_config.trial_timeout_s
    assert limits() == (60, 30)
    assert limits(time_budget_s=None, trial_timeout_s=5) == (None, 5)
    assert limits() == (None, 5)  # the values the last restore was given
    with pytest.raises(ValueError, match="TuneConfig: trial_timeout_s must be seconds > 0"):
        tune.Tuner.restore(path, quick, trial_timeout_s=-1)

    with open(os.path.join(path, "journal.jsonl")) as f:
        lines = f.readlines()
    header = json.loads(lines[0])
    header["tuner"]["time_budget_s"] = "forever"
    with open(os.path.join(path, "journal.jsonl"), "w") as f:
        f.writelines([json.dumps(header) + "\n"] + lines[1:])
    with pytest.raises(JournalError, match="line 1: the experiment header's tuner 'time_budget_s' must be seconds"):
        tune.Tuner.restore(path, quick)
