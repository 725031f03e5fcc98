"""Several objectives: TuneConfig/Experiment accept lists of metrics and modes, single-metric schedulers and
searchers refuse them, ResultGrid gives the Pareto front and asks which metric "best" means."""
import pytest

from ember import tune


def run(exp, f):
    """Ask/tell every trial of ``exp`` with the metrics ``f(config)``."""
    while (trial := exp.ask()) is not None:
        exp.tell(trial, f(trial.config))
    return exp.results()


def test_tune_config_takes_lists_of_metrics_and_modes_and_checks_them():
    tc = tune.TuneConfig(metric=["loss", "latency"], mode=("min", "min"))
    assert tc.metric == ["loss", "latency"] and tc.mode == ["min", "min"]
    with pytest.raises(ValueError, match=r"several metrics, mode must be a list of as many modes.*'min'"):
        tune.TuneConfig(metric=["loss", "latency"], mode="min")
    with pytest.raises(ValueError, match=r"as many modes.*\['min'\]"):
        tune.TuneConfig(metric=["loss", "latency"], mode=["min"])
    with pytest.raises(ValueError, match=r"mode must be 'min' or 'max', got 'best'"):
        tune.TuneConfig(metric=["loss", "latency"], mode=["min", "best"])
    with pytest.raises(ValueError, match="names each objective once"):
        tune.TuneConfig(metric=["loss", "loss"], mode=["min", "max"])
    with pytest.raises(TypeError, match="non-empty list of names"):
        tune.TuneConfig(metric=[], mode=[])
    with pytest.raises(TypeError, match="or a list of names"):
        tune.TuneConfig(metric=3, mode="min")


def test_single_metric_schedulers_and_searchers_refuse_several_objectives():
    space = {"x": tune.uniform(0, 1)}
    for scheduler in ("asha", "hyperband", "median", tune.ASHAScheduler(max_t=4)):
        with pytest.raises(ValueError, match=r"ranks trials by one metric.*\['a', 'b'\].*FIFO"):
            tune.Experiment(space, ["a", "b"], ["min", "max"], scheduler=scheduler)
    for searcher in ("bohb",):
        with pytest.raises(ValueError, match=r"optimises one metric.*\['a', 'b'\].*nsga2"):
            tune.Experiment(space, ["a", "b"], ["min", "max"], search_alg=searcher)
    exp = tune.Experiment(space, ["a", "b"], ["min", "max"], scheduler="fifo", num_samples=3, seed=0)
    grid = run(exp, lambda c: {"a": c["x"], "b": 2 * c["x"]})
    assert [sorted(r.metrics)[:2] for r in grid] == [["a", "b"]] * 3
    # a one-element list is one objective: every scheduler and searcher takes it
    one = tune.Experiment(space, ["a"], ["min"], scheduler="asha", search_alg="tpe")
    assert one.metric == "a" and one.mode == "min"


def toy_grid():
    """Five points; objectives a (min) and b (max). Front by hand: x=0 (a=0, b=0), x=1 (a=1, b=2),
    x=3 (a=2, b=5); x=2 (a=2, b=1) is dominated by x=3, x=4 (a=3, b=2) by x=1 and x=3."""
    table = {0: (0, 0), 1: (1, 2), 2: (2, 1), 3: (2, 5), 4: (3, 2)}
    exp = tune.Experiment({"x": tune.grid_search(list(table))}, ["a", "b"], ["min", "max"], seed=0)
    return run(exp, lambda c: dict(zip("ab", table[c["x"]])))


def test_pareto_front_on_a_toy_known_by_hand_respects_each_mode():
    grid = toy_grid()
    assert [r.config["x"] for r in grid.get_pareto_front()] == [0, 1, 3]
    # both minimised, the front changes: (0, 0) dominates every other point
    assert [r.config["x"] for r in grid.get_pareto_front(["a", "b"], ["min", "min"])] == [0]
    # b alone, maximised: the single best
    assert [r.config["x"] for r in grid.get_pareto_front(["b"], ["max"])] == [3]


def test_pareto_front_leaves_out_infeasible_nan_and_missing_results():
    rows = {0: {"a": 0, "b": 0, "constraints": [0.5]},  # would be on the front, but infeasible
            1: {"a": 1, "b": 1, "constraints": [-1.0, 0.0]},  # feasible (<= 0)
            2: {"a": float("nan"), "b": 5},
            3: {"a": 2}}  # b missing
    exp = tune.Experiment({"x": tune.grid_search(list(rows))}, ["a", "b"], ["min", "max"], seed=0)
    grid = run(exp, lambda c: rows[c["x"]])
    assert [r.config["x"] for r in grid.get_pareto_front()] == [1]


def test_get_best_result_with_several_objectives_needs_a_metric():
    grid = toy_grid()
    with pytest.raises(ValueError, match=r"several objectives \['a', 'b'\]: give metric=.*get_pareto_front"):
        grid.get_best_result()
    assert grid.get_best_result("b").config["x"] == 3  # mode taken from the experiment's ("max")
    assert grid.get_best_result("a").config["x"] == 0
    assert grid.get_best_result("b", "min").config["x"] == 0
    assert "a" in grid.table() and "b" in grid.table().splitlines()[0]


def test_several_objectives_survive_a_restore(tmp_path):
    exp = tune.Experiment({"x": tune.uniform(0, 1)}, ["a", "b"], ["min", "max"], num_samples=4, seed=0,
                          storage_path=str(tmp_path), name="mo")
    trial = exp.ask()
    exp.tell(trial, {"a": 1.0, "b": 2.0})
    exp.close()
    again = tune.Experiment.restore(str(tmp_path / "mo"))
    assert again.metric == ["a", "b"] and again.mode == ["min", "max"]
    assert [r.config["x"] for r in again.results().get_pareto_front()] == [trial.config["x"]]


def two_objectives(config):
    tune.report({"a": config["x"], "b": (1 - config["x"]) ** 2, "constraints": [config["x"] - 0.9]})


@pytest.mark.timeout(120)
def test_tuner_runs_several_objectives_with_nsga2_and_the_progress_view(tmp_path, capsys):
    tuner = tune.Tuner(two_objectives, param_space={"x": tune.uniform(0, 1)},
                       tune_config=tune.TuneConfig(metric=["a", "b"], mode=["min", "min"], num_samples=6, seed=0,
                                                   search_alg=tune.NSGA2Searcher(population_size=3),
                                                   max_concurrent_trials=2),
                       run_config=tune.RunConfig(storage_path=str(tmp_path), name="mo", progress_interval=0))
    grid = tuner.fit()
    assert len(grid) == 6 and grid.num_errors == 0
    front = grid.get_pareto_front()
    assert front and all(r.metrics["constraints"][0] <= 0 for r in front)
    assert "best a=" in capsys.readouterr().out  # the view ranks by the first objective
