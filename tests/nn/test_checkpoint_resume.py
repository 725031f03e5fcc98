"""Training resumed from an ember.save checkpoint continues bit-identically to training never interrupted."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.optim as optim

ROOT = Path(__file__).resolve().parents[2]
N_STEPS, M_STEPS = 6, 5


def make(seed, scheduler):
    """A fresh MLP with dropout, Adam and a scheduler; ``seed`` sets the initial weights."""
    ember.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
    opt = optim.Adam(model.parameters(), lr=0.01)
    if scheduler == "step":
        sched = optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    else:
        sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=N_STEPS + M_STEPS)
    return model, opt, sched


def batches():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N_STEPS + M_STEPS, 8, 4)).astype(np.float32)
    y = rng.integers(0, 3, (N_STEPS + M_STEPS, 8))
    return [(ember.from_numpy(x[i]), ember.from_numpy(y[i])) for i in range(N_STEPS + M_STEPS)]


def train(model, opt, sched, steps):
    model.train()
    data = batches()
    loss = None
    for x, y in data[steps.start:steps.stop]:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
    return loss.item()


def checkpoint(model, opt, sched, loss):
    return {"epoch": N_STEPS, "model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(),
            "scheduler_state_dict": sched.state_dict(), "rng_state": ember.get_rng_state(), "loss": loss}


def resume(path, scheduler):
    """Fresh objects (other initial weights, other RNG state) restored from ``path``, then trained M steps."""
    model, opt, sched = make(seed=999, scheduler=scheduler)
    ckpt = ember.load(path)
    model.load_state_dict(ckpt["model_state_dict"])
    opt.load_state_dict(ckpt["optimizer_state_dict"])
    sched.load_state_dict(ckpt["scheduler_state_dict"])
    ember.set_rng_state(ckpt["rng_state"])
    assert ckpt["epoch"] == N_STEPS
    train(model, opt, sched, range(ckpt["epoch"], N_STEPS + M_STEPS))
    return model


def uninterrupted_and_checkpoint(path, scheduler):
    model, opt, sched = make(seed=0, scheduler=scheduler)
    loss = train(model, opt, sched, range(0, N_STEPS))
    ember.save(checkpoint(model, opt, sched, loss), path)
    train(model, opt, sched, range(N_STEPS, N_STEPS + M_STEPS))
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}, loss


def assert_bit_identical(expected, model):
    got = model.state_dict()
    assert list(got) == list(expected)
    for k, v in expected.items():
        assert np.array_equal(got[k].detach().numpy(), v), k


@pytest.mark.parametrize("scheduler", ["step", "onecycle"])
def test_resumed_training_is_bit_identical(tmp_path, scheduler):
    path = tmp_path / "ckpt.safetensors"
    expected, loss = uninterrupted_and_checkpoint(path, scheduler)
    assert ember.load(path, keys=["loss"])["loss"] == loss
    assert_bit_identical(expected, resume(path, scheduler))


def test_without_the_rng_state_dropout_differs(tmp_path):
    """The RNG state in the checkpoint matters: without it the resumed run departs (so the test above can fail)."""
    path = tmp_path / "ckpt.safetensors"
    expected, _ = uninterrupted_and_checkpoint(path, "step")
    ckpt = ember.load(path)
    ember.save({**ckpt, "rng_state": ember.manual_seed(5).get_state()}, path)
    model = resume(path, "step")
    assert not all(np.array_equal(model.state_dict()[k].numpy(), v) for k, v in expected.items())


@pytest.mark.slow
def test_resume_in_a_fresh_interpreter(tmp_path):
    path, out = tmp_path / "ckpt.safetensors", tmp_path / "resumed.safetensors"
    expected, _ = uninterrupted_and_checkpoint(path, "onecycle")
    code = ("import sys, ember; from tests.nn.test_checkpoint_resume import resume; "
            "ember.save(resume(sys.argv[1], 'onecycle').state_dict(), sys.argv[2])")
    subprocess.run([sys.executable, "-c", code, str(path), str(out)], cwd=ROOT, check=True, timeout=120,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    resumed = ember.load(out)
    assert list(resumed) == list(expected)
    for k, v in expected.items():
        assert np.array_equal(resumed[k].numpy(), v), k


def test_tied_weights_are_saved_once_and_load_into_the_model(tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Embedding(5, 4), nn.Linear(4, 5, bias=False))
    model[1].weight = model[0].weight  # tied input and output embeddings
    path = tmp_path / "tied.safetensors"
    ember.save(model.state_dict(), path)
    import safetensors
    with safetensors.safe_open(str(path), "np") as f:
        assert set(f.keys()) == {"0.weight"}
    sd = ember.load(path)
    assert list(sd) == ["0.weight", "1.weight"] and sd["1.weight"] is sd["0.weight"]
    fresh = nn.Sequential(nn.Embedding(5, 4), nn.Linear(4, 5, bias=False))
    fresh.load_state_dict(sd)
    assert np.array_equal(fresh[1].weight.detach().numpy(), model[0].weight.detach().numpy())
