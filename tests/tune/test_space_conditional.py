"""Conditional parameters: a choice over dicts holding domains."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember import tune


def same(a, b):
    """Equal configurations, floats to 12 digits (a vector stores a float through its log or unit position)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return isinstance(b, float) and b == pytest.approx(a, rel=1e-12, abs=1e-15)
    return type(a) is type(b) and a == b


def optim_space():
    return tune.SearchSpace({
        "lr": tune.loguniform(1e-4, 1e-1),
        "optim": tune.choice([
            {"name": "sgd", "momentum": tune.uniform(0, 0.99), "nesterov": tune.choice([True, False])},
            {"name": "adam", "beta1": tune.uniform(0.8, 0.999),
             "schedule": tune.choice([{"kind": "cosine", "warmup": tune.randint(0, 100)}, {"kind": "none"}])},
        ]),
        "layers": [tune.randint(1, 4), 64],
        "epochs": 10,
    })


def test_params_order_names_paths_and_parents():
    space = optim_space()
    table = [(p.name, p.path, p.parent, p.branch, p.kind) for p in space.params]
    assert table == [
        ("lr", ("lr",), None, None, "float"),
        ("optim", ("optim",), None, None, "categorical"),
        ("optim/0/momentum", ("optim", "momentum"), 1, 0, "float"),
        ("optim/0/nesterov", ("optim", "nesterov"), 1, 0, "categorical"),
        ("optim/1/beta1", ("optim", "beta1"), 1, 1, "float"),
        ("optim/1/schedule", ("optim", "schedule"), 1, 1, "categorical"),
        ("optim/1/schedule/0/warmup", ("optim", "schedule", "warmup"), 5, 0, "int"),
        ("layers/0", ("layers", 0), None, None, "int"),
    ]
    assert space.param("optim/1/beta1").domain.low == 0.8
    with pytest.raises(KeyError, match="no parameter 'beta2'"):
        space.param("beta2")


def test_inactive_params_never_appear_in_the_other_branch():
    space = optim_space()
    rng = np.random.default_rng(0)
    seen = {"sgd": 0, "adam": 0, "cosine": 0, "none": 0}
    for _ in range(300):
        config = space.sample(rng)
        optim = config["optim"]
        assert config["epochs"] == 10 and config["layers"][1] == 64 and 1 <= config["layers"][0] <= 3
        seen[optim["name"]] += 1
        if optim["name"] == "sgd":
            assert set(optim) == {"name", "momentum", "nesterov"} and 0 <= optim["momentum"] <= 0.99
        else:
            assert set(optim) == {"name", "beta1", "schedule"}
            seen[optim["schedule"]["kind"]] += 1
            if optim["schedule"]["kind"] == "cosine":
                assert set(optim["schedule"]) == {"kind", "warmup"}
            else:
                assert optim["schedule"] == {"kind": "none"}
    assert min(seen.values()) > 40  # every branch is drawn


def test_vector_has_nan_exactly_for_inactive_params():
    space = optim_space()
    rng = np.random.default_rng(1)
    for _ in range(100):
        config = space.sample(rng)
        vec = space.to_vector(config)
        assert vec.dtype == np.float64 and vec.shape == (len(space.params),)
        active = space.active(vec)
        assert np.array_equal(active, ~np.isnan(vec))
        sgd = config["optim"]["name"] == "sgd"
        assert active[2] == active[3] == sgd and active[4] == active[5] == (not sgd)
        assert active[6] == (not sgd and config["optim"]["schedule"]["kind"] == "cosine")
        assert same(space.from_vector(vec), config)


def test_from_vector_ignores_inactive_entries():
    space = optim_space()
    vec = np.array([0.5, 0.0, 0.25, 1.0, 0.7, 1.0, 0.3, 0.5])  # sgd chosen: entries 4..6 are ignored
    config = space.from_vector(vec)
    assert config["optim"] == {"name": "sgd", "momentum": pytest.approx(0.2475), "nesterov": False}
    assert config["lr"] == pytest.approx(10 ** -2.5) and config["layers"] == [2, 64]
    vec[4:7] = np.nan
    assert same(space.from_vector(vec), config)
    assert space.active(vec).tolist() == [True, True, True, True, False, False, False, True]


def test_out_of_range_category_entries_are_clipped_alike_by_from_vector_and_active():
    space = optim_space()
    vec = np.array([0.5, 7.0, np.nan, np.nan, 0.5, -3.0, 0.5, 0.5])  # optim -> adam, schedule -> cosine
    config = space.from_vector(vec)
    assert config["optim"]["name"] == "adam" and config["optim"]["schedule"]["kind"] == "cosine"
    assert space.active(vec).tolist() == [True, True, False, False, True, True, True, True]


def test_nan_in_an_active_entry_is_a_clear_error():
    space = optim_space()
    vec = space.to_vector(space.sample(seed=0))
    vec[0] = np.nan
    with pytest.raises(ValueError, match=r"entry 0 \('lr'\) is nan, but the parameter is active"):
        space.from_vector(vec)
    with pytest.raises(ValueError, match="expected a vector of 8 entries"):
        space.from_vector(vec[:3])


def test_to_vector_rejects_configs_outside_the_space():
    space = optim_space()
    config = space.sample(seed=0)
    with pytest.raises(ValueError, match="has no 'lr'"):
        space.to_vector({k: v for k, v in config.items() if k != "lr"})
    with pytest.raises(ValueError, match="outside its domain"):
        space.to_vector({**config, "lr": 5.0})
    with pytest.raises(ValueError, match="matches none of its categories"):
        space.to_vector({**config, "optim": {"name": "rmsprop"}})


def test_branches_with_the_same_keys_are_told_apart_by_constants_and_bounds():
    space = tune.SearchSpace({"m": tune.choice([{"kind": "a", "x": tune.uniform(0, 1)},
                                                {"kind": "b", "x": tune.uniform(5, 6)},
                                                {"x": tune.uniform(10, 11)}])})
    for seed in range(20):
        config = space.sample(seed=seed)
        vec = space.to_vector(config)
        assert same(space.from_vector(vec), config)
    assert space.to_vector({"m": {"x": 10.5}})[0] == 2.0
    assert space.to_vector({"m": {"kind": "b", "x": 5.5}})[0] == 1.0


def test_configs_share_no_mutable_parts():
    space = tune.SearchSpace({"layers": [1, 2], "opt": {"betas": [0.9, 0.99]}, "x": tune.uniform(0, 1)})
    a, b = space.sample(seed=0), space.sample(seed=0)
    a["layers"].append(3)
    a["opt"]["betas"][0] = 0
    assert b == {"layers": [1, 2], "opt": {"betas": [0.9, 0.99]}, "x": b["x"]}
    assert space.param_space["layers"] == [1, 2]


def test_sample_from_sees_the_rest_of_the_config():
    space = tune.SearchSpace({
        "width": tune.choice([32, 64]),
        "opt": tune.choice([{"name": "a", "scale": tune.sample_from(lambda c: c["width"] * 2)}, {"name": "b"}]),
        "tag": tune.sample_from(lambda c: f"{c['opt']['name']}-{c['width']}"),
    })
    for seed in range(10):
        config = space.sample(seed=seed)
        assert config["tag"] == f"{config['opt']['name']}-{config['width']}"
        if config["opt"]["name"] == "a":
            assert config["opt"]["scale"] == 2 * config["width"]
        else:
            assert config["opt"] == {"name": "b"}
        vec = space.to_vector(config)
        assert np.isnan(vec[2]) and np.isnan(vec[3]) and not space.active(vec)[3]
        assert same(space.from_vector(vec), config)  # the functions run again


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_vector_round_trip_property(seed):
    space = optim_space()
    config = space.sample(seed=seed)
    vec = space.to_vector(config)
    assert np.all((np.isnan(vec)) | ((vec >= 0) & (vec <= max(p.domain.size or 1 for p in space.params))))
    assert same(space.from_vector(vec), config)
