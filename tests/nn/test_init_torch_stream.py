"""Layers built after ``ember.manual_seed(0)`` have PyTorch's initial weights, and a deterministic training run of
the benchmark CNN follows PyTorch's loss curve (values from tests/fixtures/make_torch_rng_fixtures.py)."""
import hashlib
import json
import math
import pathlib

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn

FIXTURE = json.loads((pathlib.Path(__file__).parents[1] / "fixtures" / "torch_rng.json").read_text())


def _assert(tensor, entry):
    a = np.ascontiguousarray(tensor.detach().numpy())
    assert (str(a.dtype), list(a.shape)) == (entry["dtype"], entry["shape"])
    if "hex" in entry:
        np.testing.assert_array_equal(a, np.frombuffer(bytes.fromhex(entry["hex"]), dtype=a.dtype).reshape(a.shape))
    else:
        np.testing.assert_array_equal(a.reshape(-1)[:8], np.frombuffer(bytes.fromhex(entry["head"]), dtype=a.dtype))
        assert hashlib.sha256(a.tobytes()).hexdigest() == entry["sha256"]


def test_layers_built_after_manual_seed_have_pytorchs_weights():
    ember.manual_seed(0)
    mods = {"linear": nn.Linear(20, 30), "conv2d": nn.Conv2d(3, 8, 3), "lstm": nn.LSTM(10, 20, num_layers=2),
            "embedding": nn.Embedding(50, 8)}
    for name, m in mods.items():
        for key, value in m.state_dict().items():
            _assert(value, FIXTURE["layers"][f"{name}/{key}"])


INITS = {
    "xavier_uniform_": lambda w: nn.init.xavier_uniform_(w),
    "xavier_normal_": lambda w: nn.init.xavier_normal_(w),
    "kaiming_normal_": lambda w: nn.init.kaiming_normal_(w),
    "kaiming_uniform_": lambda w: nn.init.kaiming_uniform_(w, a=math.sqrt(5)),
    "uniform_": lambda w: nn.init.uniform_(w, -0.1, 0.2),
    "normal_": lambda w: nn.init.normal_(w, 0.1, 0.3),
    "trunc_normal_": lambda w: nn.init.trunc_normal_(w, std=0.02),
    "trunc_normal_window": lambda w: nn.init.trunc_normal_(w, mean=0.5, std=1.0, a=-1.0, b=1.5),
    "trunc_normal_tail": lambda w: nn.init.trunc_normal_(w, mean=0.0, std=1.0, a=1.5, b=3.0),
    "sparse_": lambda w: nn.init.sparse_(w, 0.3),
    "orthogonal_": lambda w: nn.init.orthogonal_(w),
    "orthogonal_wide": lambda w: nn.init.orthogonal_(w.T),
}


@pytest.mark.parametrize("name", list(INITS))
def test_init_functions_draw_pytorchs_numbers(name):
    ember.manual_seed(0)
    w = INITS[name](ember.empty(30, 40))
    entry = FIXTURE["layers"][f"init/{name}"]
    if name.startswith("orthogonal_"):
        # the same normal draws; NumPy's and PyTorch's QR factorisations (LAPACK builds) round differently
        expected = np.frombuffer(bytes.fromhex(entry["head"]), dtype=np.float32)
        np.testing.assert_allclose(w.numpy().reshape(-1)[:8], expected, rtol=1e-6, atol=1e-7)
    else:
        _assert(w, entry)
    _assert(ember.rand(1), FIXTURE["layers"][f"init/{name}/next"])  # the generator moved on as PyTorch's


def test_cnn_training_follows_pytorchs_loss_curve():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Linear(128, 10))
    x = ember.randn(8, 1, 28, 28)
    y = ember.randint(0, 10, (8,))
    opt = ember.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.testing.assert_allclose(losses, FIXTURE["cnn_losses"], rtol=0, atol=1e-5)
