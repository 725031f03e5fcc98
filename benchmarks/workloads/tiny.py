"""Workload 3: Linear(32,32)-Tanh-Linear(32,1), batch 8, MSE, SGD: a training step (bound by per-op overhead)."""
import numpy as np

from ._training import training_step

NAME = "tiny"
TITLE = "Tiny Linear(32,32)-Tanh-Linear(32,1), batch 8, MSE, SGD: training step"
TARGETS = (0.5, 0.7)

BATCH, LR = 8, 0.01


def setup(lib):
    """A training step of the tiny net in ``lib`` (ember or torch)."""
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = lib.optim.SGD(model.parameters(), lr=LR)
    x, y = lib.randn(BATCH, 32), lib.randn(BATCH, 1)

    step = training_step(model, opt, nn.functional.mse_loss, x, y)
    return step


def setup_numpy():
    """The same step by hand in NumPy."""
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((32, 32), dtype=np.float32) / np.float32(np.sqrt(32))
    w2 = rng.standard_normal((32, 1), dtype=np.float32) / np.float32(np.sqrt(32))
    b1, b2 = np.zeros(32, np.float32), np.zeros(1, np.float32)
    x = rng.standard_normal((BATCH, 32), dtype=np.float32)
    y = rng.standard_normal((BATCH, 1), dtype=np.float32)
    lr = np.float32(LR)

    def step():
        a = np.tanh(x @ w1 + b1)
        diff = a @ w2 + b2 - y
        loss = (diff * diff).mean()
        d_out = diff * np.float32(2 / diff.size)
        d_hidden = (d_out @ w2.T) * (1 - a * a)
        for p, g in ((w2, a.T @ d_out), (b2, d_out.sum(axis=0)), (w1, x.T @ d_hidden), (b1, d_hidden.sum(axis=0))):
            p -= lr * g
        return loss
    return step
