"""SearchSpace: sampling and seeds, grid points, JSON round trips, errors."""
import itertools
import json

import numpy as np
import pytest

from ember import tune


def test_sample_with_seed_or_rng_repeats():
    space = tune.SearchSpace({"lr": tune.loguniform(1e-4, 1e-1), "layers": tune.choice([1, 2, 3]),
                              "n": tune.qrandint(8, 64, 8), "net": {"act": tune.choice(["relu", "tanh"])}})
    assert space.sample(seed=0) == space.sample(seed=0)
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    seq_a, seq_b = [space.sample(rng_a) for _ in range(10)], [space.sample(rng=rng_b) for _ in range(10)]
    assert seq_a == seq_b and len({json.dumps(c, sort_keys=True) for c in seq_a}) == 10
    assert space.sample(seed=1) != space.sample(seed=2)
    with pytest.raises(ValueError, match="either rng or seed"):
        space.sample(rng=np.random.default_rng(0), seed=0)


def test_constants_pass_through_unchanged():
    param_space = {"a": 1, "b": "text", "c": [1, "x", None], "d": {"e": {"f": 2.5}}, "t": (1, 2),
                   "x": tune.uniform(0, 1)}
    config = tune.SearchSpace(param_space).sample(seed=0)
    assert {k: v for k, v in config.items() if k != "x"} == {k: v for k, v in param_space.items() if k != "x"}
    assert type(config["t"]) is tuple and 0 <= config["x"] <= 1


def test_grid_points_cover_every_combination_once():
    space = tune.SearchSpace({"a": tune.grid_search([1, 2, 3]), "b": {"c": tune.grid_search(["x", "y"])},
                              "d": tune.grid_search([None, True]), "e": tune.uniform(0, 1)})
    assert space.grid_size() == 12 and [p.name for p in space.grid_params] == ["a", "b/c", "d"]
    points = list(space.grid_points())
    assert len(points) == 12
    assert sorted((p["a"], p["b/c"], str(p["d"])) for p in points) == sorted(
        (a, c, str(d)) for a, c, d in itertools.product([1, 2, 3], ["x", "y"], [None, True]))
    assert points[0] == {"a": 1, "b/c": "x", "d": None} and points[1]["d"] is True  # the last varies fastest
    with pytest.raises(IndexError, match="the grid has 12 points"):
        space.grid_point(12)
    config = space.sample(seed=0, fixed=points[7])
    assert (config["a"], config["b"]["c"], config["d"]) == (points[7]["a"], points[7]["b/c"], points[7]["d"])


def test_grid_without_grid_search_has_one_point():
    space = tune.SearchSpace({"x": tune.uniform(0, 1)})
    assert space.grid_size() == 1 and list(space.grid_points()) == [{}]


def test_grid_search_vector_entry_is_the_index():
    space = tune.SearchSpace({"g": tune.grid_search([10, 20, 30]), "x": tune.uniform(0, 2)})
    vec = space.to_vector({"g": 30, "x": 0.5})
    assert vec.tolist() == [2.0, 0.25]
    assert space.from_vector(vec) == {"g": 30, "x": 0.5}


def test_fixed_values_are_checked():
    space = tune.SearchSpace({"x": tune.uniform(0, 1), "c": tune.choice(["a", "b"])})
    assert space.sample(seed=0, fixed={"x": 0.25, "c": "b"}) == {"x": 0.25, "c": "b"}
    with pytest.raises(ValueError, match="outside its domain"):
        space.sample(seed=0, fixed={"x": 2.0})
    with pytest.raises(ValueError, match="matches none of its categories"):
        space.sample(seed=0, fixed={"c": "z"})
    with pytest.raises(KeyError, match="no parameter 'y'"):
        space.sample(seed=0, fixed={"y": 1})


def test_json_round_trip_keeps_every_domain():
    space = tune.SearchSpace({
        "u": tune.uniform(-1, 1), "lu": tune.loguniform(1e-5, 1e-1, base=2), "qu": tune.quniform(0, 1, 0.1),
        "qlu": tune.qloguniform(1, 100, 5), "ri": tune.randint(0, 10), "lri": tune.lograndint(1, 512),
        "qri": tune.qrandint(0, 100, 10), "c": tune.choice([1, "a", None, [1, 2], {"k": 1}]),
        "g": tune.grid_search([0.1, 0.2]), "t": (1, tune.uniform(0, 1)),
        "cond": tune.choice([{"name": "a", "x": tune.uniform(0, 1)}, {"name": "b", "y": tune.randint(1, 3)}]),
        "const": {"nested": [1, 2, {"deep": True}]},
    })
    text = json.dumps(space.to_json())
    again = tune.SearchSpace.from_json(json.loads(text))
    assert json.dumps(again.to_json()) == text
    assert tune.SearchSpace.from_json(text).to_json() == again.to_json()  # JSON text works too
    assert [(p.name, p.domain) for p in again.params] == [(p.name, p.domain) for p in space.params]
    for seed in range(5):
        assert again.sample(seed=seed) == space.sample(seed=seed)


def test_json_turns_numpy_scalars_into_numbers():
    space = tune.SearchSpace({"x": tune.uniform(np.float64(0.5), np.int64(3)), "k": tune.randint(np.int64(1), 9),
                              "c": tune.choice([np.int64(4), np.float32(0.5)])})
    again = tune.SearchSpace.from_json(json.dumps(space.to_json()))
    assert again.to_json() == {"param_space": {"x": {"__domain__": "uniform", "low": 0.5, "high": 3},
                                               "k": {"__domain__": "randint", "low": 1, "high": 9},
                                               "c": {"__domain__": "choice", "categories": [4, 0.5]}}}


def test_json_refuses_what_it_cannot_hold():
    with pytest.raises(TypeError, match="a function has no JSON form"):
        tune.SearchSpace({"f": tune.sample_from(lambda c: 1)}).to_json()
    with pytest.raises(TypeError, match="dict keys must be strings"):
        tune.SearchSpace({"d": {1: tune.uniform(0, 1)}}).to_json()
    with pytest.raises(TypeError, match="has no JSON form"):
        tune.SearchSpace({"c": tune.choice([object(), 1])}).to_json()
    with pytest.raises(ValueError, match="expected the output of SearchSpace.to_json"):
        tune.SearchSpace.from_json({"x": 1})
    with pytest.raises(ValueError, match="unknown domain 'normal'"):
        tune.SearchSpace.from_json({"param_space": {"x": {"__domain__": "normal"}}})


@pytest.mark.parametrize("param_space, error, message", [
    ([tune.uniform(0, 1)], TypeError, "param_space must be a dict"),
    ({"c": tune.choice([{"g": tune.grid_search([1, 2])}, {}])}, ValueError, "must be unconditional"),
    ({"g": tune.grid_search([tune.uniform(0, 1)])}, ValueError, "must be plain values, not domains"),
    ({"t": (tune.sample_from(lambda c: 1),)}, ValueError, "inside a tuple"),
])
def test_bad_param_spaces_are_clear_errors(param_space, error, message):
    with pytest.raises(error, match=message):
        tune.SearchSpace(param_space)


def test_package_exports_the_space_api():
    for name in ["uniform", "loguniform", "quniform", "qloguniform", "randint", "qrandint", "lograndint",
                 "choice", "grid_search", "sample_from", "SearchSpace", "Domain"]:
        assert getattr(tune, name) is not None
    assert isinstance(tune.uniform(0, 1), tune.Domain)
