"""lr_find on least squares, where the largest stable learning rate of plain SGD is known exactly.

Full-batch gradient descent on 0.5 * ||Xw - y||^2 / n multiplies the error along the top eigenvector
of H = X^T X / n by (1 - lr * lambda_max) each step: it diverges for lr > 2 / lambda_max.
"""
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.optim as optim
from ember import tune


def _problem(seed=0, n=256, d=8):
    rng = np.random.default_rng(seed)
    scales = np.linspace(0.5, 3.0, d)  # spread the spectrum so lambda_max stands apart
    X = (rng.normal(size=(n, d)) * scales).astype(np.float32)
    w_true = rng.normal(size=(d, 1)).astype(np.float32)
    y = (X @ w_true + 0.01 * rng.normal(size=(n, 1))).astype(np.float32)
    H = X.astype(np.float64).T @ X.astype(np.float64) / n
    lr_max = 2.0 / np.linalg.eigvalsh(H).max()
    return X, y, lr_max


def _half_mse(pred, target):
    return ((pred - target) ** 2).sum() / (2 * pred.shape[0])


def _model(d, seed=1):
    model = nn.Linear(d, 1, bias=False)
    rng = np.random.default_rng(seed)
    with ember.no_grad():
        model.weight.copy_(ember.tensor(rng.normal(size=(1, d)).astype(np.float32)))
    return model


def _weights(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


def test_suggestion_below_largest_stable_lr_and_sweep_stops_at_divergence():
    X, y, lr_max = _problem()
    model = _model(X.shape[1])
    opt = optim.SGD(model.parameters(), lr=1e-3)
    loader = [(ember.tensor(X), ember.tensor(y))]
    found = tune.lr_find(model, _half_mse, opt, loader, start_lr=1e-5, end_lr=100, num_iter=120)

    assert found.suggestion is not None and 0 < found.suggestion < lr_max
    # the suggestion is on the useful part of the curve: not orders of magnitude too small
    assert found.suggestion > lr_max / 100
    # divergence ended the sweep early, after the stability limit and well before end_lr
    assert found.diverged
    assert len(found.lrs) < 120
    assert found.lrs[-1] > lr_max
    assert found.lrs[-1] < 20 * lr_max  # end_lr is ~460 lr_max
    # exponential sweep from start_lr
    ratios = np.diff(np.log(found.lrs))
    assert found.lrs[0] == pytest.approx(1e-5)
    np.testing.assert_allclose(ratios, math.log(100 / 1e-5) / 119, rtol=1e-9)


def test_model_and_optimizer_restored_bit_for_bit():
    X, y, _ = _problem(seed=3)
    ember.manual_seed(0)
    # BatchNorm: buffers (running statistics) must come back too
    model = nn.Sequential(nn.Linear(X.shape[1], 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = [(ember.tensor(X[:128]), ember.tensor(y[:128])), (ember.tensor(X[128:]), ember.tensor(y[128:]))]
    for inputs, targets in loader:  # give the optimizer momentum buffers worth restoring
        opt.zero_grad()
        _half_mse(model(inputs), targets).backward()
        opt.step()
    model.eval()
    before = _weights(model)
    opt_before = {i: s["momentum_buffer"].numpy().copy() for i, s in opt.state_dict()["state"].items()}
    groups_before = [{k: v for k, v in g.items() if k != "params"} for g in opt.state_dict()["param_groups"]]

    found = tune.lr_find(model, _half_mse, opt, loader, num_iter=50)
    assert len(found.lrs) > 2

    after = _weights(model)
    assert "1.running_mean" in after and after.keys() == before.keys()
    for k in before:
        assert np.array_equal(after[k], before[k]), k
    state = opt.state_dict()
    assert {i: s["momentum_buffer"].numpy() for i, s in state["state"].items()}.keys() == opt_before.keys()
    for i, buf in opt_before.items():
        assert np.array_equal(state["state"][i]["momentum_buffer"].numpy(), buf)
    assert [{k: v for k, v in g.items() if k != "params"} for g in state["param_groups"]] == groups_before
    assert model.training is False
    # the optimizer still drives the model's own parameters after the restore
    w0 = model[0].weight.detach().numpy().copy()
    opt.zero_grad()
    _half_mse(model(loader[0][0]), loader[0][1]).backward()
    opt.step()
    assert not np.array_equal(model[0].weight.detach().numpy(), w0)


def test_smoothing_is_bias_corrected_and_no_divergence_runs_all_steps():
    X, y, lr_max = _problem(seed=5)
    model = _model(X.shape[1])
    opt = optim.SGD(model.parameters(), lr=1e-3)
    loader = [(ember.tensor(X), ember.tensor(y))]
    found = tune.lr_find(model, _half_mse, opt, loader, start_lr=1e-6, end_lr=lr_max / 4, num_iter=30, smooth_f=0.2)
    assert not found.diverged and len(found.lrs) == 30
    assert found.lrs[-1] == pytest.approx(lr_max / 4)
    assert found.losses[0] == pytest.approx(found.raw_losses[0])  # bias correction: no pull towards 0
    avg = 0.0
    for i, raw in enumerate(found.raw_losses):
        avg = 0.8 * avg + 0.2 * raw
        assert found.losses[i] == pytest.approx(avg / (1 - 0.8 ** (i + 1)))
    # the suggestion is the steepest descent of the smoothed curve, before its minimum
    best = int(np.argmin(found.losses))
    slope = np.gradient(found.losses[:best + 1], np.log(found.lrs[:best + 1]))
    assert found.suggestion == pytest.approx(found.lrs[int(np.argmin(slope))])
    assert found.suggestion <= found.lrs[best]


def test_plot_draws_the_curve_and_the_suggestion():
    matplotlib = pytest.importorskip("matplotlib", reason="matplotlib is optional")
    matplotlib.use("Agg")
    X, y, _ = _problem()
    model = _model(X.shape[1])
    found = tune.lr_find(model, _half_mse, optim.SGD(model.parameters(), lr=0.1),
                         [(ember.tensor(X), ember.tensor(y))], num_iter=40)
    ax = found.plot()
    curve, marker = ax.get_lines()
    np.testing.assert_allclose(curve.get_xdata(), found.lrs)
    np.testing.assert_allclose(curve.get_ydata(), found.losses)
    assert list(marker.get_xdata()) == [found.suggestion, found.suggestion]
    assert ax.get_xscale() == "log"


@pytest.mark.parametrize("kwargs, message", [
    ({"start_lr": 0}, "start_lr must be > 0"),
    ({"start_lr": 1.0, "end_lr": 0.5}, "end_lr must be greater"),
    ({"num_iter": 1}, "num_iter must be an integer >= 2"),
    ({"smooth_f": 0}, "smooth_f must be in"),
    ({"diverge_th": 1}, "diverge_th must be > 1"),
])
def test_bad_arguments_are_clear_errors(kwargs, message):
    model = _model(2)
    with pytest.raises(ValueError, match=message):
        tune.lr_find(model, _half_mse, optim.SGD(model.parameters(), lr=0.1), [], **kwargs)


def test_bad_loader_is_a_clear_error_and_still_restores():
    model = _model(2)
    before = _weights(model)
    opt = optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="loader yielded no batches"):
        tune.lr_find(model, _half_mse, opt, [])
    with pytest.raises(TypeError, match=r"\(inputs, targets\) pair"):
        tune.lr_find(model, _half_mse, opt, [(ember.ones(1, 2),)])
    assert all(np.array_equal(v, before[k]) for k, v in _weights(model).items())
    assert opt.param_groups[0]["lr"] == 0.1
