"""NSGA2Searcher: non-dominated sorting, crowding distance, its front against random search's on ZDT1 (by
hypervolume), constraints, determinism and state."""
import math

import numpy as np
import pytest

from ember import tune
from ember.tune.searchers.nsga2 import crowding_distance, non_dominated_fronts

from .multi_objective_helpers import SPACE, front_hypervolume, run, zdt1


def test_sorting_and_crowding_by_hand():
    points = np.array([[1.0, 4.0], [2.0, 2.0], [4.0, 1.0], [3.0, 3.0], [5.0, 5.0], [2.0, 2.0]])
    assert non_dominated_fronts(points) == [[0, 1, 2, 5], [3], [4]]
    # a feasible point beats every infeasible one; infeasible ones rank by their violation
    assert non_dominated_fronts(points[:3], np.array([0.0, 2.0, 1.0])) == [[0], [2], [1]]
    assert crowding_distance(points[[0, 1, 2]]).tolist() == [math.inf, 2.0, math.inf]


def test_registered_and_arguments_checked():
    assert tune.registry.get("searcher", "nsga2") is tune.NSGA2Searcher
    with pytest.raises(ValueError, match="population_size must be at least 2"):
        tune.NSGA2Searcher(population_size=1)
    with pytest.raises(ValueError, match=r"crossover_prob must be a float > 0 and <= 1, got 1.5"):
        tune.NSGA2Searcher(crossover_prob=1.5)


def test_front_dominates_random_search_by_hypervolume_on_zdt1():
    nsga2 = front_hypervolume(run(tune.NSGA2Searcher(population_size=20), zdt1))
    random = front_hypervolume(run("random", zdt1))
    # the true front's hypervolume against (1.1, 1.1) is 1.21 - 1/3 = 0.877
    assert nsga2 > random + 0.2 and nsga2 > 0.65, (nsga2, random)


def test_same_seed_same_configurations_and_state_round_trip():
    first = [r.config for r in run(tune.NSGA2Searcher(population_size=6), zdt1, num_samples=30, seed=3)]
    again = [r.config for r in run(tune.NSGA2Searcher(population_size=6), zdt1, num_samples=30, seed=3)]
    assert first == again
    searcher = tune.NSGA2Searcher(population_size=4)
    searcher.setup(tune.SearchSpace(SPACE), ["f1", "f2"], ["min", "min"], seed=0, num_samples=20)
    for i in range(8):
        searcher.on_complete(str(i), {**zdt1(searcher.suggest(str(i))), "constraints": [float(i % 2)]})
    searcher.suggest("8")
    state = searcher.state_dict()
    copy = tune.NSGA2Searcher(population_size=4)
    copy.setup(tune.SearchSpace(SPACE), ["f1", "f2"], ["min", "min"], seed=0, num_samples=20)
    copy.load_state_dict(state)
    assert [copy.suggest(str(i)) for i in range(9, 14)] == [searcher.suggest(str(i)) for i in range(9, 14)]


def test_mixed_space_with_ints_logs_and_categories():
    space = {"lr": tune.loguniform(1e-4, 1e-1), "width": tune.randint(1, 64), "act": tune.choice(["relu", "tanh"])}

    def f(c):
        return {"f1": abs(math.log10(c["lr"]) + 2) + (c["act"] == "tanh"), "f2": c["width"] / 64}

    grid = run(tune.NSGA2Searcher(population_size=8), f, num_samples=60, space=space)
    assert all(1e-4 <= r.config["lr"] <= 1e-1 and isinstance(r.config["width"], int) for r in grid)
    late = [r.config["act"] for r in list(grid)[-20:]]
    assert late.count("relu") > 15  # "tanh" is dominated: the population learns it


def test_constraints_steer_the_search_to_the_feasible_region_and_out_of_the_front():
    def constrained(config):
        return {**zdt1(config), "constraints": [0.6 - config["x0"]]}  # feasible: x0 >= 0.6

    nsga2 = run(tune.NSGA2Searcher(population_size=20), constrained, seed=1)
    random = run("random", constrained, seed=1)

    def late_feasible(grid):
        return sum(r.config["x0"] >= 0.6 for r in list(grid)[-100:])

    assert late_feasible(nsga2) > 80 and late_feasible(random) < 60  # unconstrained NSGA-II: 19
    front = nsga2.get_pareto_front()
    assert front and all(r.config["x0"] >= 0.6 for r in front)


def test_a_restored_experiment_continues_the_same_sequence(tmp_path):
    def start(name):
        return tune.Experiment(SPACE, ["f1", "f2"], ["min", "min"], search_alg=tune.NSGA2Searcher(population_size=4),
                               num_samples=16, seed=5, storage_path=str(tmp_path), name=name)

    whole = run(tune.NSGA2Searcher(population_size=4), zdt1, num_samples=16, seed=5)
    exp = start("cut")
    for _ in range(9):
        trial = exp.ask()
        exp.tell(trial, zdt1(trial.config))
    exp.close()
    exp = tune.Experiment.restore(str(tmp_path / "cut"))
    while (trial := exp.ask()) is not None:
        exp.tell(trial, zdt1(trial.config))
    assert [r.config for r in exp.results()] == [r.config for r in whole]
