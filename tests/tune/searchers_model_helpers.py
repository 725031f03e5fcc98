"""Small drivers shared by the TPE and BOHB tests: feed a searcher scripted objective values."""
import json

import numpy as np

from ember.tune import SearchSpace, choice, loguniform, qrandint, quniform, randint, uniform


def quadratic_space(dims=3):
    return SearchSpace({f"x{i}": uniform(-5.0, 5.0) for i in range(dims)})


def quadratic(config):
    """Minimum 0 at x_i = 1."""
    return float(sum((v - 1.0) ** 2 for k, v in config.items() if k.startswith("x")))


def run_sequential(searcher, space, objective, n_trials, seed, mode="min", iterations=1):
    """Suggest, report ``iterations`` results (the objective at each), complete; returns the configs and losses."""
    searcher.setup(space, metric="loss", mode=mode, seed=seed)
    configs, losses = [], []
    for i in range(n_trials):
        tid = f"{i:05d}"
        config = searcher.suggest(tid)
        loss = objective(config)
        for it in range(1, iterations + 1):
            result = {"loss": loss if mode == "min" else -loss, "training_iteration": it}
            searcher.on_result(tid, result)
        searcher.on_complete(tid, result)
        configs.append(config)
        losses.append(loss)
    return configs, np.array(losses)


def mixed_space():
    """Every kind of parameter, a conditional one included."""
    return SearchSpace({
        "lr": loguniform(1e-4, 1e-1),
        "layers": randint(1, 5),
        "width": qrandint(16, 128, 16),
        "drop": quniform(0.0, 0.5, 0.1),
        "act": choice(["relu", "tanh", "gelu"]),
        "optim": choice([{"name": "sgd", "momentum": uniform(0.0, 0.99)},
                         {"name": "adam", "beta1": uniform(0.8, 0.999), "eps": loguniform(1e-10, 1e-6)}]),
        "epochs": 10,
    })


def mixed_objective(config):
    """Best: lr 1e-2, 3 layers, width 64, drop 0.2, gelu, adam with beta1 0.9."""
    loss = (np.log10(config["lr"]) + 2.0) ** 2 + abs(config["layers"] - 3) + abs(config["width"] - 64) / 32
    loss += abs(config["drop"] - 0.2) * 4 + {"relu": 1.0, "tanh": 2.0, "gelu": 0.0}[config["act"]]
    optim = config["optim"]
    loss += 2.0 + (optim["momentum"] - 0.9) ** 2 if optim["name"] == "sgd" else 10 * (optim["beta1"] - 0.9) ** 2
    return float(loss)


def check_valid(space, config):
    """The configuration is one the space can produce: right keys, every value in its domain."""
    vec = space.to_vector(config)  # raises for a value outside its domain
    assert space.from_vector(vec) == config
    active = space.active(vec)
    assert np.isnan(vec[~active]).all() and not np.isnan(vec[active]).any()


def check_state_round_trip(make, searcher, space, steps, report):
    """A fresh searcher (``make()``, set up with another seed) that loads ``searcher``'s state through JSON
    suggests what ``searcher`` suggests, ``steps`` times; ``report(s, trial_id, loss)`` feeds each of the two
    the result of :func:`mixed_objective` on that suggestion."""
    state = json.loads(json.dumps(searcher.state_dict(), allow_nan=False))
    twin = make()
    twin.setup(space, metric="loss", mode="min", seed=99)
    twin.load_state_dict(state)
    for i in range(steps):
        ca, cb = searcher.suggest(f"x{i}"), twin.suggest(f"x{i}")
        assert ca == cb
        for s in (searcher, twin):
            report(s, f"x{i}", mixed_objective(ca))
