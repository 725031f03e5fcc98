"""ResultGrid and Result: best result, table, CSV and JSON exports; the configs."""
import csv
import json
import math

import numpy as np
import pytest

from ember import tune


@pytest.fixture
def grid():
    """Four trials: 00000 and 00002 finished, 00001 errored after one report, 00003 with a NaN loss."""
    exp = tune.Experiment({"lr": tune.grid_search([0.1, 0.01, 0.001, 0.5]), "net": {"width": 16}}, "loss", "min",
                          seed=0)
    histories = {"00000": [3.0, 2.0, 1.5], "00001": [4.0], "00002": [2.5, 0.5, 1.0], "00003": [np.float64("nan")]}
    while (trial := exp.ask()) is not None:
        for value in histories[trial.trial_id]:
            exp.report(trial, {"loss": value, "acc": np.float32(1 - value / 10)})
        if trial.trial_id == "00001":
            exp.tell(trial, error="Traceback (most recent call last):\nValueError: diverged")
        else:
            exp.tell(trial)
    return exp.results()


def test_result_fields(grid):
    assert len(grid) == 4 and [r.trial_id for r in grid] == ["00000", "00001", "00002", "00003"]
    r = grid[2]
    assert r.config == {"lr": 0.001, "net": {"width": 16}} and r.status == "TERMINATED"
    assert r.metrics["loss"] == 1.0 and r.metrics["training_iteration"] == 3 and r.metrics["trial_id"] == "00002"
    assert [m["loss"] for m in r.metrics_history] == [2.5, 0.5, 1.0]
    assert r.error is None and r.checkpoint is None and r.path is None
    assert grid.num_terminated == 3 and grid.num_errors == 1
    assert grid.errors == ["Traceback (most recent call last):\nValueError: diverged"]
    assert grid[1].status == "ERROR" and grid[1].metrics["loss"] == 4.0


def test_best_result_scopes_modes_and_nan(grid):
    assert grid.get_best_result().trial_id == "00002"  # last losses 1.5, 4.0, 1.0, nan (skipped)
    assert grid.get_best_result(scope="all").trial_id == "00002"  # 0.5
    assert grid.get_best_result(mode="max").trial_id == "00001"  # 4.0 (nan skipped)
    assert grid.get_best_result("acc", "max").trial_id == "00002"
    # kept, a NaN is the worst value in either mode (it never wins over a number, whatever the trials' order)
    assert grid.get_best_result(mode="max", filter_nan_and_inf=False).trial_id == "00001"
    assert grid.get_best_result(mode="min", filter_nan_and_inf=False).trial_id == "00002"
    with pytest.raises(RuntimeError, match="no trial reported 'bogus'"):
        grid.get_best_result("bogus")
    with pytest.raises(ValueError, match="scope must be 'last' or 'all'"):
        grid.get_best_result(scope="best")
    with pytest.raises(ValueError, match="give metric= and mode="):
        tune.ResultGrid([]).get_best_result()


def test_table_lists_every_trial_and_best_first_when_limited(grid):
    lines = grid.table().splitlines()
    assert lines[0].split() == ["trial_id", "status", "lr", "net/width", "loss", "training_iteration", "failures"]
    assert lines[1].split() == ["00000", "TERMINATED", "0.1", "16", "1.5", "3", "0"]
    assert lines[2].split() == ["00001", "ERROR", "0.01", "16", "4", "1", "1"]
    assert lines[4].split() == ["00003", "TERMINATED", "0.5", "16", "nan", "1", "0"]
    best_two = grid.table(max_rows=2).splitlines()
    assert [line.split()[0] for line in best_two[1:]] == ["00002", "00000"]


def test_csv_export(grid, tmp_path):
    path = tmp_path / "results.csv"
    grid.to_csv(str(path))
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4
    assert list(rows[0])[:6] == ["trial_id", "status", "num_failures", "config/lr", "config/net/width", "loss"]
    assert rows[2]["config/lr"] == "0.001" and float(rows[2]["loss"]) == 1.0 and rows[2]["training_iteration"] == "3"
    assert math.isclose(float(rows[2]["acc"]), 0.9, rel_tol=1e-6)
    assert rows[1]["error"].endswith("ValueError: diverged") and rows[1]["num_failures"] == "1"
    assert rows[0]["error"] == "" and math.isnan(float(rows[3]["loss"]))


def test_json_export(grid, tmp_path):
    path = tmp_path / "results.json"
    grid.to_json(str(path))
    data = json.loads(path.read_text())
    assert data["metric"] == "loss" and data["mode"] == "min"
    trials = data["trials"]
    assert [t["trial_id"] for t in trials] == ["00000", "00001", "00002", "00003"]
    assert trials[2]["config"] == {"lr": 0.001, "net": {"width": 16}}
    assert [m["loss"] for m in trials[2]["metrics_history"]] == [2.5, 0.5, 1.0]
    assert trials[1]["status"] == "ERROR" and "diverged" in trials[1]["error"]
    assert trials[0]["metrics"]["training_iteration"] == 3


def test_dataframe_needs_pandas(grid):
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs pandas"):
            grid.get_dataframe()
    else:
        frame = grid.get_dataframe()
        assert list(frame["trial_id"]) == ["00000", "00001", "00002", "00003"]


def test_config_validation_errors():
    with pytest.raises(ValueError, match="TuneConfig: num_samples must be an int >= 1"):
        tune.TuneConfig(num_samples=0)
    with pytest.raises(ValueError, match="max_concurrent_trials must be an int >= 1"):
        tune.TuneConfig(max_concurrent_trials=0)
    with pytest.raises(TypeError, match="metric must be the name"):
        tune.TuneConfig(metric=3)
    with pytest.raises(ValueError, match="checkpoint_score_order"):
        tune.CheckpointConfig(checkpoint_score_order="up")
    with pytest.raises(ValueError, match="num_to_keep must be an int >= 1"):
        tune.CheckpointConfig(num_to_keep=0)
    with pytest.raises(ValueError, match="max_failures must be an int >= 0 .or -1"):
        tune.FailureConfig(max_failures=-2)
    with pytest.raises(TypeError, match="stop must be a dict"):
        tune.RunConfig(stop=3)
    with pytest.raises(ValueError, match="name must be a non-empty folder name"):
        tune.RunConfig(name="a/b")
    rc = tune.RunConfig()
    assert rc.failure_config.max_failures == 0 and rc.checkpoint_config.num_to_keep == 2
    assert tune.TuneConfig(num_samples=-1).num_samples == -1


def test_plots_delegate_to_the_plot_module(grid):
    try:
        import matplotlib
    except ImportError:
        for plot in (grid.plot_learning_curves, grid.plot_best_over_time):
            with pytest.raises(ImportError, match="plotting needs matplotlib"):
                plot()
    else:
        matplotlib.use("Agg")
        assert grid.plot_learning_curves() is not None
        assert grid.plot_best_over_time() is not None
