"""plot_learning_curves / plot_best_over_time: the data they draw (Agg backend; no pixels compared)."""
import sys

import numpy as np
import pytest

from ember import tune
from ember.tune.results import Result, ResultGrid
from ember.tune.searchers.base import Searcher

matplotlib = pytest.importorskip("matplotlib", reason="matplotlib is optional for ember.tune's plots")
matplotlib.use("Agg")


def _result(trial_id, history):
    return Result(config={}, metrics=history[-1] if history else {}, metrics_history=history, checkpoint=None,
                  error=None, path=None, trial_id=trial_id, status="TERMINATED")


def _grid(mode="min"):
    # trial A starts at t=100 (time_total_s counts from its start), B at t=101; C never reported the metric
    a = [{"loss": 3.0, "training_iteration": 1, "timestamp": 101.0, "time_total_s": 1.0},
         {"loss": 2.0, "training_iteration": 2, "timestamp": 102.0, "time_total_s": 2.0},
         {"loss": 1.5, "training_iteration": 3, "timestamp": 105.0, "time_total_s": 5.0}]
    b = [{"loss": 2.5, "training_iteration": 1, "timestamp": 103.0, "time_total_s": 2.0},
         {"loss": 0.5, "training_iteration": 4, "timestamp": 106.0, "time_total_s": 5.0}]
    c = [{"other": 1.0, "training_iteration": 1, "timestamp": 104.0, "time_total_s": 1.0}]
    return ResultGrid([_result("A", a), _result("B", b), _result("C", c)], metric="loss", mode=mode)


def test_learning_curves_one_line_per_trial_with_its_values():
    ax = tune.plot_learning_curves(_grid())
    lines = ax.get_lines()
    assert len(lines) == 2  # C has no "loss"
    assert [line.get_label() for line in lines] == ["trial A", "trial B"]
    assert lines[0].get_xdata().tolist() == [1, 2, 3] and lines[0].get_ydata().tolist() == [3.0, 2.0, 1.5]
    assert lines[1].get_xdata().tolist() == [1, 4] and lines[1].get_ydata().tolist() == [2.5, 0.5]
    assert ax.get_ylabel() == "loss"
    # another metric, on a given Axes
    import matplotlib.pyplot as plt
    _, given = plt.subplots()
    assert tune.plot_learning_curves(_grid(), metric="other", ax=given) is given
    assert [line.get_ydata().tolist() for line in given.get_lines()] == [[1.0]]


def test_best_over_time_min_and_max_by_time_and_budget():
    ax = tune.plot_best_over_time(_grid())  # metric and mode from the grid
    (line,) = ax.get_lines()
    # start = 100 (A's first timestamp minus its time_total_s); improvements at 101, 102, 105, 106
    assert line.get_xdata().tolist() == [1.0, 2.0, 5.0, 6.0]
    assert line.get_ydata().tolist() == [3.0, 2.0, 1.5, 0.5]
    assert line.get_drawstyle() == "steps-post"
    ax = tune.plot_best_over_time(_grid(), x="budget")
    # iterations used in timestamp order: A1 (1), A2 (2), B1 (3), C1 (4), A3 (5), B4 (8)
    assert ax.get_lines()[0].get_xdata().tolist() == [1, 2, 5, 8]
    ax = tune.plot_best_over_time(_grid(), mode="max")
    assert ax.get_lines()[0].get_xdata().tolist() == [1.0]
    assert ax.get_lines()[0].get_ydata().tolist() == [3.0]


def test_plots_of_a_real_experiment_through_the_result_grid():
    class Scripted(Searcher):
        def suggest(self, trial_id):
            return {"x": [0.9, 0.1, 0.5][int(trial_id)]}

    exp = tune.Experiment({"x": tune.uniform(0, 1)}, metric="loss", mode="min", search_alg=Scripted(),
                          num_samples=3, seed=0)
    while (trial := exp.ask()) is not None:
        for step in range(1, 4):
            exp.report(trial, {"loss": trial.config["x"] / step})
        exp.tell(trial)
    grid = exp.results()
    lines = grid.plot_learning_curves().get_lines()
    assert len(lines) == 3
    for line, x in zip(lines, [0.9, 0.1, 0.5]):
        np.testing.assert_allclose(line.get_ydata(), [x, x / 2, x / 3])
    best = grid.plot_best_over_time(x="budget").get_lines()[0]
    # the best so far improves at trial 0's three reports, then trial 1's three (budget 4, 5, 6)
    assert best.get_xdata().tolist() == [1, 2, 3, 4, 5, 6]
    np.testing.assert_allclose(best.get_ydata(), [0.9, 0.45, 0.3, 0.1, 0.05, 0.1 / 3])
    times = grid.plot_best_over_time().get_lines()[0].get_xdata()
    assert len(times) == 6 and np.all(np.diff(times) >= 0) and times[0] >= 0


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="x must be 'time' or 'budget'"):
        tune.plot_best_over_time(_grid(), x="epochs")
    with pytest.raises(ValueError, match="no metric given"):
        tune.plot_learning_curves(ResultGrid([]))
    with pytest.raises(ValueError, match="mode must be 'min' or 'max'"):
        tune.plot_best_over_time(ResultGrid([], metric="loss"))


def test_missing_matplotlib_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # import fails as if not installed
    with pytest.raises(ImportError, match="plotting needs matplotlib.*pip install matplotlib"):
        tune.plot_learning_curves(_grid())
