"""Mixed-precision training: a small MLP on scikit-learn's bundled digits data (no download) trained under
``ember.autocast`` (bfloat16) with ``ember.amp.GradScaler`` reaches the test accuracy of float32 training."""
from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits

import ember
import ember.nn.functional as F
from ember import nn


def _data():
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    cut = 1400
    return (ember.from_numpy(x[:cut]), ember.from_numpy(y[:cut]),
            ember.from_numpy(x[cut:]), ember.from_numpy(y[cut:]))


class GradScalerStats:
    """What a training run saw: the loss and gradient dtypes, the scaler's final scale."""

    def __init__(self):
        self.loss_dtypes: set = set()
        self.grad_dtypes: set = set()
        self.final_scale = None


def _train(mixed: bool) -> tuple[float, GradScalerStats]:
    ember.manual_seed(0)
    x, y, x_test, y_test = _data()
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = ember.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=20, enabled=mixed)
    stats = GradScalerStats()
    for _epoch in range(8):
        perm = ember.randperm(len(x))
        for start in range(0, len(x), 64):
            idx = perm[start:start + 64]
            with ember.autocast("cpu", dtype=ember.bfloat16, enabled=mixed):
                logits = model(x[idx])
                loss = F.cross_entropy(logits, y[idx])
            stats.loss_dtypes.add(loss.dtype)
            opt.zero_grad()
            scaler.scale(loss).backward()
            stats.grad_dtypes.update(p.grad.dtype for p in model.parameters())
            scaler.step(opt)
            scaler.update()
    stats.final_scale = scaler.get_scale()
    with ember.no_grad(), ember.autocast("cpu", enabled=mixed):
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    return accuracy, stats


def test_bfloat16_autocast_with_grad_scaler_reaches_float32_accuracy():
    acc32, stats32 = _train(mixed=False)
    acc_mixed, stats = _train(mixed=True)
    assert acc32 > 0.93
    assert acc_mixed >= acc32 - 0.02, (acc_mixed, acc32)
    assert stats.loss_dtypes == {ember.float32}  # cross_entropy runs in float32 under autocast
    assert stats.grad_dtypes == {ember.float32}  # the parameters' own dtype
    assert stats.final_scale > 2.0 ** 10  # no inf in bfloat16: the scale only grew
    assert stats32.final_scale == 1.0  # disabled scaler
