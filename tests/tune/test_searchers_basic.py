"""GridSearcher and RandomSearcher: completeness, seeds, state round trips, errors."""
import collections
import itertools
import json

import numpy as np
import pytest

from ember import tune
from ember.tune import registry
from ember.tune.searchers.base import FINISHED
from ember.tune.searchers.grid import GridSearcher
from ember.tune.searchers.random import RandomSearcher


def key(config):
    return json.dumps(config, sort_keys=True)


def run(searcher, space, n=None, seed=0, num_samples=None, limit=10_000):
    searcher.setup(space, metric="loss", mode="min", seed=seed, num_samples=num_samples)
    configs = []
    for i in range(limit if n is None else n):
        config = searcher.suggest(f"{i:05d}")
        if config == FINISHED:
            break
        configs.append(config)
    return configs


def test_both_are_registered():
    assert registry.get("searcher", "random") is RandomSearcher
    assert registry.get("searcher", "grid") is GridSearcher
    assert isinstance(registry.resolve("searcher", None), RandomSearcher)  # the default
    assert tune.RandomSearcher is RandomSearcher and tune.GridSearcher is GridSearcher


# --- RandomSearcher -----------------------------------------------------------------------------------------------
def grid_space():
    return tune.SearchSpace({"a": tune.grid_search([1, 2, 3]), "b": tune.grid_search(["x", "y"]),
                             "lr": tune.loguniform(1e-4, 1e-1), "n": tune.randint(0, 1000)})


@pytest.mark.parametrize("num_samples", [1, 3])
def test_random_runs_every_grid_point_num_samples_times(num_samples):
    configs = run(RandomSearcher(), grid_space(), num_samples=num_samples)
    assert len(configs) == 6 * num_samples
    counts = collections.Counter((c["a"], c["b"]) for c in configs)
    assert counts == {pair: num_samples for pair in itertools.product([1, 2, 3], ["x", "y"])}
    # the whole grid comes first, then again
    assert {(c["a"], c["b"]) for c in configs[:6]} == set(counts)
    # the other parameters are drawn afresh for every trial
    assert len({c["lr"] for c in configs}) == len(configs)


def test_random_finishes_and_stays_finished():
    searcher = RandomSearcher()
    assert len(run(searcher, {"x": tune.uniform(0, 1)}, num_samples=4)) == 4
    assert searcher.suggest("again") == FINISHED and searcher.suggest("again2") == FINISHED
    assert searcher.total == 4


def test_random_without_num_samples_never_finishes():
    configs = run(RandomSearcher(), grid_space(), n=50, num_samples=None)
    assert len(configs) == 50 and FINISHED not in configs
    assert collections.Counter((c["a"], c["b"]) for c in configs[:48]) == {
        pair: 8 for pair in itertools.product([1, 2, 3], ["x", "y"])}


def test_random_same_seed_same_sequence():
    space = tune.SearchSpace({"lr": tune.loguniform(1e-4, 1e-1), "act": tune.choice(["relu", "tanh", "gelu"]),
                              "opt": tune.choice([{"name": "sgd", "m": tune.uniform(0, 1)}, {"name": "adam"}])})
    a = run(RandomSearcher(), space, n=20, seed=7)
    b = run(RandomSearcher(), space, n=20, seed=7)
    c = run(RandomSearcher(), space, n=20, seed=8)
    assert [key(x) for x in a] == [key(x) for x in b]
    assert [key(x) for x in a] != [key(x) for x in c]
    assert len({key(x) for x in a}) == 20


def test_random_samples_are_spread_over_the_space():
    configs = run(RandomSearcher(), {"x": tune.uniform(0, 1), "k": tune.randint(0, 4)}, num_samples=2000, seed=3)
    xs = np.array([c["x"] for c in configs])
    assert abs(xs.mean() - 0.5) < 0.03 and xs.min() < 0.01 and xs.max() > 0.99
    counts = np.bincount([c["k"] for c in configs], minlength=4)
    assert (((counts - 500) ** 2) / 500).sum() < 16.27  # chi-square, df 3, p = 0.001


@pytest.mark.parametrize("cut", [0, 1, 4, 7])
def test_random_state_dict_round_trip_continues_identically(cut):
    space = grid_space()
    searcher = RandomSearcher()
    searcher.setup(space, metric="loss", mode="min", seed=11, num_samples=2)
    first = [searcher.suggest(str(i)) for i in range(cut)]
    state = json.loads(json.dumps(searcher.state_dict()))
    rest = [searcher.suggest(str(i)) for i in range(cut, 13)]
    restored = RandomSearcher()
    restored.setup(space, metric="loss", mode="min", seed=999, num_samples=2)  # the state brings the RNG
    restored.load_state_dict(state)
    again = [restored.suggest(str(i)) for i in range(cut, 13)]
    assert [key(c) for c in again] == [key(c) for c in rest]
    assert rest[-1] == FINISHED and len(first) + len(rest) - 1 == 12


def test_random_handles_conditional_and_sample_from():
    space = {"w": tune.choice([1, 2]), "opt": tune.choice([{"name": "sgd", "m": tune.uniform(0, 1)}, {"name": "adam"}]),
             "double": tune.sample_from(lambda c: 2 * c["w"])}
    for c in run(RandomSearcher(), space, num_samples=30, seed=1):
        assert c["double"] == 2 * c["w"]
        assert set(c["opt"]) == ({"name", "m"} if c["opt"]["name"] == "sgd" else {"name"})


def test_searcher_errors_are_clear():
    with pytest.raises(ValueError, match="num_samples must be a positive int"):
        RandomSearcher().setup(grid_space(), "loss", "min", num_samples=0)
    with pytest.raises(ValueError, match="mode must be 'min' or 'max'"):
        RandomSearcher().setup(grid_space(), "loss", "maximum")
    searcher = RandomSearcher()
    searcher.setup(grid_space(), "loss", "min", seed=0)
    with pytest.raises(ValueError, match="not a random searcher's state"):
        searcher.load_state_dict({"searcher": "grid", "position": 3, "rng": {}})
    with pytest.raises(ValueError, match="points_per_axis must be a positive int"):
        GridSearcher(points_per_axis=0)
    with pytest.raises(TypeError, match="param_space must be a dict"):
        RandomSearcher().setup([1, 2], "loss", "min")


# --- GridSearcher -------------------------------------------------------------------------------------------------
def test_grid_covers_every_combination_exactly_once():
    space = {"g": tune.grid_search([0.1, 0.2]), "act": tune.choice(["relu", "tanh", "gelu"]),
             "layers": tune.randint(1, 5), "bs": tune.qrandint(16, 64, 16), "q": tune.quniform(0, 1, 0.5),
             "epochs": 3}
    searcher = GridSearcher()
    configs = run(searcher, space, num_samples=5)  # num_samples does not repeat the grid
    expected = {key({"g": g, "act": a, "layers": n, "bs": b, "q": q, "epochs": 3})
                for g, a, n, b, q in itertools.product([0.1, 0.2], ["relu", "tanh", "gelu"], [1, 2, 3, 4],
                                                      [16, 32, 48, 64], [0.0, 0.5, 1.0])}
    assert len(configs) == len(expected) == searcher.total == 2 * 3 * 4 * 4 * 3
    assert {key(c) for c in configs} == expected  # every one, and (same size) each once
    assert searcher.suggest("x") == FINISHED


def test_grid_enumerates_conditional_branches_separately():
    space = {"opt": tune.choice([{"name": "sgd", "m": tune.choice([0.0, 0.9]), "nesterov": tune.choice([True, False])},
                                 {"name": "adam", "amsgrad": tune.choice([True, False])},
                                 {"name": "plain"}]),
             "wd": tune.grid_search([0, 1e-4])}
    configs = run(GridSearcher(), space)
    opts = [c["opt"] for c in configs]
    assert len(configs) == (4 + 2 + 1) * 2 and len({key(c) for c in configs}) == len(configs)
    assert sum(o["name"] == "sgd" for o in opts) == 8 and sum(o["name"] == "adam" for o in opts) == 4
    assert all(set(o) == {"name", "m", "nesterov"} for o in opts if o["name"] == "sgd")
    assert all(set(o) == {"name", "amsgrad"} for o in opts if o["name"] == "adam")
    assert all(o == {"name": "plain"} for o in opts if o["name"] == "plain")


def test_grid_points_per_axis_spaces_floats_evenly_and_logarithmically():
    space = {"x": tune.uniform(-1, 1), "lr": tune.loguniform(1e-4, 1), "k": tune.randint(0, 1000)}
    configs = run(GridSearcher(points_per_axis=5), space)
    assert len(configs) == 125
    assert sorted({c["x"] for c in configs}) == pytest.approx([-1, -0.5, 0, 0.5, 1])
    assert sorted({c["lr"] for c in configs}) == pytest.approx([1e-4, 1e-3, 1e-2, 1e-1, 1])
    assert sorted({c["k"] for c in configs}) == [0, 250, 500, 749, 999]  # the nearest integers
    one = run(GridSearcher(points_per_axis=1), {"x": tune.uniform(0, 2)})
    assert one == [{"x": 1.0}]
    small = run(GridSearcher(points_per_axis=10), {"k": tune.randint(0, 3)})  # fewer values than points
    assert [c["k"] for c in small] == [0, 1, 2]
    logs = run(GridSearcher(points_per_axis=4), {"n": tune.lograndint(1, 1001), "m": tune.qrandint(0, 100, 10)})
    assert sorted({c["n"] for c in logs}) == [1, 10, 100, 1000] and sorted({c["m"] for c in logs}) == [0, 30, 70, 100]


def test_grid_refuses_continuous_domains_without_points_per_axis():
    with pytest.raises(ValueError, match=r"'x' \(uniform\(low=0, high=1\)\) continuous; give points_per_axis"):
        GridSearcher().setup(tune.SearchSpace({"x": tune.uniform(0, 1)}), "loss", "min")
    with pytest.raises(ValueError, match="has 100000 values; give points_per_axis"):
        GridSearcher().setup(tune.SearchSpace({"k": tune.randint(0, 100_000)}), "loss", "min")


def test_grid_runs_sample_from():
    configs = run(GridSearcher(), {"w": tune.grid_search([1, 2, 3]), "d": tune.sample_from(lambda c: c["w"] * 10)})
    assert configs == [{"w": 1, "d": 10}, {"w": 2, "d": 20}, {"w": 3, "d": 30}]


@pytest.mark.parametrize("cut", [0, 5, 11])
def test_grid_state_dict_round_trip_continues_identically(cut):
    space = {"a": tune.choice([1, 2, 3]), "b": tune.randint(0, 4)}
    searcher = GridSearcher()
    searcher.setup(tune.SearchSpace(space), "loss", "max")
    [searcher.suggest(str(i)) for i in range(cut)]
    state = json.loads(json.dumps(searcher.state_dict()))
    rest = [searcher.suggest(str(i)) for i in range(cut, 13)]
    restored = GridSearcher()
    restored.setup(tune.SearchSpace(space), "loss", "max")
    restored.load_state_dict(state)
    assert [restored.suggest(str(i)) for i in range(cut, 13)] == rest
    assert rest[-1] == FINISHED
    with pytest.raises(ValueError, match="not a grid searcher's state"):
        restored.load_state_dict({"searcher": "random", "count": 1, "rng": state["rng"]})
