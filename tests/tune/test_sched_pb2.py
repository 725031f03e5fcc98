"""PB2: exploit as PBT, explore by a Gaussian-process upper confidence bound inside hyperparam_bounds."""
import os
import shutil

import numpy as np
import pytest

from ember import tune
from ember.tune import PB2, registry
from ember.tune.schedulers.pb2 import ucb_argmax

from .test_sched_pbt import drive, exploit_records, summary


def test_registration_and_argument_errors():
    assert registry.get("scheduler", "pb2") is PB2
    with pytest.raises(ValueError, match="hyperparam_bounds"):
        PB2()
    with pytest.raises(ValueError, match=r"hyperparam_bounds\['lr'\] must be \[low, high\]"):
        PB2(hyperparam_bounds={"lr": [1.0, 0.5]})


def test_ucb_prefers_where_improvement_was_seen_and_unexplored_regions_when_unsure():
    points = np.array([[0.5, x] for x in (0.1, 0.2, 0.8, 0.9)])
    values = np.array([0.0, 0.1, 2.0, 2.1])
    candidates = np.array([[0.5, 0.15], [0.5, 0.85]])
    assert ucb_argmax(points, values, candidates) == 1


def test_explore_learns_that_small_values_improve_and_stays_in_bounds():
    pb2 = PB2(perturbation_interval=1, hyperparam_bounds={"lr": [0.0, 1.0]}, seed=0)
    pb2.setup("loss", "min")
    lrs = [0.05 + 0.9 * i / 7 for i in range(8)]
    for i, lr in enumerate(lrs):
        pb2.on_trial_add(str(i), {"lr": lr, "layers": 4})
    losses = {str(i): 10.0 for i in range(8)}
    for t in (1, 2, 3):  # small lr improves the loss much, large lr little (no checkpoints: no exploits)
        for i, lr in enumerate(lrs):
            losses[str(i)] -= 1.0 - lr
            pb2.on_result(str(i), {"loss": losses[str(i)], "training_iteration": t})
    assert pb2.take_exploits() == {}
    configs = [pb2._explore({"lr": 0.5, "layers": 4}, 3.0) for _ in range(5)]
    assert all(0.0 <= c["lr"] <= 0.25 and c["layers"] == 4 for c in configs)
    ints = PB2(hyperparam_bounds={"layers": [1, 8]}, seed=0)
    assert isinstance(ints._explore({"layers": 3}, 0.0)["layers"], int)


def make(path, name):
    pb2 = PB2(perturbation_interval=4, hyperparam_bounds={"lr": [0.1, 1.6]})
    return tune.Experiment({"lr": tune.grid_search([0.1, 0.2, 0.4, 0.8])}, "w", "max", scheduler=pb2, seed=1,
                           storage_path=str(path), name=name, checkpoint_config=tune.CheckpointConfig(num_to_keep=None))


def test_pb2_in_an_experiment_and_restored_after_a_kill(tmp_path):
    full = drive(make(tmp_path, "full"))
    records = exploit_records(full.path)
    assert records and all(0.1 <= r["c"]["lr"] <= 1.6 for r in records)
    with open(os.path.join(full.path, "journal.jsonl"), "rb") as f:
        lines = f.read().splitlines(keepends=True)
    for n in (len(lines) // 3, 2 * len(lines) // 3):
        killed = os.path.join(tmp_path, f"killed{n}")
        shutil.copytree(full.path, killed)
        with open(os.path.join(killed, "journal.jsonl"), "wb") as f:
            f.writelines(lines[:n])
        restored = drive(tune.Experiment.restore(killed))
        assert summary(restored) == summary(full)
