"""BOHBSearcher: the budget the model is fitted on, model quality against random search, conditional and
categorical parameters, reproducibility, state round trips, errors."""
import json
import math

import numpy as np
import pytest

from ember.tune import SearchSpace, choice, grid_search, registry, sample_from, uniform
from ember.tune.searchers.base import FINISHED
from ember.tune.searchers.bohb import BOHBSearcher
from ember.tune.searchers.random import RandomSearcher

from .searchers_model_helpers import (
    check_state_round_trip,
    check_valid,
    mixed_objective,
    mixed_space,
    quadratic,
    quadratic_space,
    run_sequential,
)


def test_registered_as_bohb():
    assert registry.get("searcher", "bohb") is BOHBSearcher


def _feed(searcher, budget, n, start):
    for i in range(start, start + n):
        tid = f"{i:04d}"
        config = searcher.suggest(tid)
        searcher.on_result(tid, {"loss": quadratic(config), "training_iteration": budget})


def test_model_budget_is_the_largest_with_enough_observations():
    s = BOHBSearcher(min_points_in_model=2)   # a budget needs 2 + 2 observations
    s.setup(quadratic_space(2), metric="loss", mode="min", seed=0)
    assert s.model_budget() is None
    _feed(s, 1, 3, 0)
    assert s.model_budget() is None            # three are not enough
    _feed(s, 1, 1, 3)
    assert s.model_budget() == 1
    _feed(s, 9, 3, 10)
    _feed(s, 3, 5, 20)
    assert s.model_budget() == 3               # 9 has only three
    assert [b for b, _ in s.state_dict()["losses"]] == [9.0, 3.0]   # budget 1 is never needed again
    _feed(s, 1, 5, 30)                         # results below the model's budget are dropped
    assert [b for b, _ in s.state_dict()["losses"]] == [9.0, 3.0]
    _feed(s, 9, 1, 40)
    assert s.model_budget() == 9


def test_default_min_points_is_dims_plus_one():
    s = BOHBSearcher()
    s.setup(quadratic_space(3), metric="loss", mode="min", seed=0)
    _feed(s, 1, 5, 0)                          # N_min = 4: six observations needed
    assert s.model_budget() is None
    _feed(s, 1, 1, 5)
    assert s.model_budget() == 1


def test_intermediate_results_are_observations_at_their_iteration():
    s = BOHBSearcher(min_points_in_model=1)
    s.setup(quadratic_space(1), metric="loss", mode="min", seed=0)
    for i in range(3):
        s.suggest(str(i))
        for it in (1, 2, 3):
            s.on_result(str(i), {"loss": 1.0 / it, "training_iteration": it})
    assert s.model_budget() == 3
    assert s.state_dict()["losses"] == [[3.0, {"0": 1 / 3, "1": 1 / 3, "2": 1 / 3}]]


def test_beats_random_search_on_a_quadratic():
    bohb_best, random_best = [], []
    # six dimensions: BOHB's multivariate KDE needs min_points_in_model + 2 = 9 observations before it models
    for seed in range(5):
        _, losses = run_sequential(BOHBSearcher(), quadratic_space(6), quadratic, 100, seed)
        bohb_best.append(losses.min())
        _, losses = run_sequential(RandomSearcher(), quadratic_space(6), quadratic, 100, seed)
        random_best.append(losses.min())
    assert np.median(bohb_best) < 0.4 * np.median(random_best)
    assert sum(b < r for b, r in zip(bohb_best, random_best)) >= 4


def test_model_proposals_concentrate_near_the_optimum():
    configs, losses = run_sequential(BOHBSearcher(random_fraction=0.0), quadratic_space(2), quadratic, 60, seed=3)
    assert np.median(losses[-20:]) < 0.1 * np.median(losses[:5])


def test_random_fraction_one_is_random_search():
    configs, losses = run_sequential(BOHBSearcher(random_fraction=1.0), quadratic_space(2), quadratic, 60, seed=3)
    assert np.median(losses[-20:]) > 0.5 * np.median(losses[:20])


def test_mode_max_maximises():
    _, losses = run_sequential(BOHBSearcher(random_fraction=0.0), quadratic_space(2), quadratic, 60, seed=0,
                               mode="max")
    assert np.median(losses[-20:]) < 0.1 * np.median(losses[:5])


def test_categorical_and_conditional_parameters():
    space = mixed_space()
    configs, losses = run_sequential(BOHBSearcher(), space, mixed_objective, 150, seed=1)
    for config in configs:
        check_valid(space, config)
        assert config["epochs"] == 10
    late = configs[-50:]
    assert np.mean([c["act"] == "gelu" for c in late]) > 0.5
    assert np.mean([c["optim"]["name"] == "adam" for c in late]) > 0.5
    _, random_losses = run_sequential(RandomSearcher(), space, mixed_objective, 150, seed=1)
    assert losses[-50:].mean() < 0.6 * random_losses[-50:].mean()


def test_a_conditional_parameter_follows_its_branch():
    space = SearchSpace({"k": choice([{"n": "a", "u": uniform(0, 1)}, {"n": "b", "v": uniform(0, 1)}])})

    def objective(config):
        return config["k"]["u"] if config["k"]["n"] == "a" else 1.0 + (config["k"]["v"] - 0.5) ** 2
    configs, _ = run_sequential(BOHBSearcher(), space, objective, 60, seed=2)
    for config in configs:
        check_valid(space, config)
    late = configs[-25:]
    assert np.mean([c["k"]["n"] == "a" for c in late]) > 0.6
    assert np.median([c["k"]["u"] for c in late if c["k"]["n"] == "a"]) < 0.3


def test_nan_metric_counts_as_the_worst():
    s = BOHBSearcher(min_points_in_model=1)
    s.setup(quadratic_space(1), metric="loss", mode="min", seed=0)
    s.suggest("a")
    s.on_result("a", {"loss": float("nan"), "training_iteration": 1})
    s.on_complete("b", {"loss": 1.0, "training_iteration": 1})  # not suggested by this searcher: ignored
    s.on_complete("a", None, error=True)
    assert s.state_dict()["losses"] == [[1.0, {"a": None}]]
    state = json.loads(json.dumps(s.state_dict(), allow_nan=False))
    t = BOHBSearcher(min_points_in_model=1)
    t.setup(quadratic_space(1), metric="loss", mode="min", seed=0)
    t.load_state_dict(state)
    # read directly: state_dict writes +inf and NaN alike as None, so only the model's table shows NaN loads as worst
    assert t._losses == {1.0: {"a": math.inf}}


def test_same_seed_same_configurations_different_seed_different():
    a, _ = run_sequential(BOHBSearcher(), mixed_space(), mixed_objective, 40, seed=7)
    b, _ = run_sequential(BOHBSearcher(), mixed_space(), mixed_objective, 40, seed=7)
    c, _ = run_sequential(BOHBSearcher(), mixed_space(), mixed_objective, 40, seed=8)
    assert a == b
    assert a != c


def test_state_dict_round_trip_gives_the_same_next_suggestions():
    space = mixed_space()
    s = BOHBSearcher(random_fraction=0.2)
    run_sequential(s, space, mixed_objective, 30, seed=4, iterations=3)
    assert s.model_budget() == 3
    s.suggest("pending")
    check_state_round_trip(lambda: BOHBSearcher(random_fraction=0.2), s, space, 6,
                           lambda searcher, tid, loss: searcher.on_result(tid, {"loss": loss, "training_iteration": 3}))


def test_finished_after_num_samples():
    s = BOHBSearcher()
    s.setup(quadratic_space(1), metric="loss", mode="min", seed=0, num_samples=2)
    assert isinstance(s.suggest("0"), dict) and isinstance(s.suggest("1"), dict)
    assert s.suggest("2") == FINISHED


def test_a_result_without_training_iteration_is_a_clear_error():
    s = BOHBSearcher()
    s.setup(quadratic_space(1), metric="loss", mode="min", seed=0)
    s.suggest("0")
    with pytest.raises(ValueError, match="training_iteration"):
        s.on_result("0", {"loss": 1.0})


@pytest.mark.parametrize("domain, word", [(grid_search([1, 2]), "grid_search"),
                                          (sample_from(lambda c: 1), "sample_from")])
def test_refuses_grid_search_and_sample_from(domain, word):
    with pytest.raises(ValueError, match=word):
        BOHBSearcher().setup({"x": uniform(0, 1), "y": domain}, metric="loss", mode="min", seed=0)


@pytest.mark.parametrize("kwargs, word", [({"min_points_in_model": 0}, "min_points_in_model"),
                                          ({"top_n_percent": 100}, "top_n_percent"),
                                          ({"num_samples": 0}, "num_samples"),
                                          ({"random_fraction": 1.5}, "random_fraction"),
                                          ({"bandwidth_factor": 0}, "bandwidth_factor"),
                                          ({"min_bandwidth": -1}, "min_bandwidth"),
                                          ({"min_numeric_bandwidth": 1.0}, "min_numeric_bandwidth")])
def test_bad_arguments(kwargs, word):
    with pytest.raises(ValueError, match=word):
        BOHBSearcher(**kwargs)


def test_bad_state():
    s = BOHBSearcher()
    s.setup(quadratic_space(1), metric="loss", mode="min", seed=0)
    with pytest.raises(ValueError, match="bohb searcher's state"):
        s.load_state_dict({"searcher": "tpe", "rng": {}})
