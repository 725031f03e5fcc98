"""Workload 1: MLP 784-512-512-10 with ReLU, batch 128, cross-entropy, SGD with momentum 0.9: a training step."""
import itertools
import os

import numpy as np

from ._training import training_step

NAME = "mlp"
TITLE = "MLP 784-512-512-10, ReLU, batch 128, cross-entropy, SGD momentum 0.9: training step"
TARGETS = (0.85, 1.0)

BATCH, SIZES, LR, MOMENTUM = 128, (784, 512, 512, 10), 0.01, 0.9


#: ``fused=True`` for both libraries' optimizers with ``BENCH_FUSED=1`` (default: their per-parameter update)
FUSED = True if os.environ.get("BENCH_FUSED") == "1" else None

def build(lib):
    """The model, its optimizer, a batch and a training step, in ``lib`` (ember or torch)."""
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = lib.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, fused=FUSED)
    x, y = lib.randn(BATCH, 784), lib.randint(0, 10, (BATCH,))

    step = training_step(model, opt, nn.functional.cross_entropy, x, y)
    return model, opt, x, y, step


def setup(lib):
    """A training step of the MLP in ``lib`` (ember or torch)."""
    return build(lib)[-1]


def setup_numpy():
    """The same step by hand: forward, softmax cross-entropy, backward and momentum update, in place where it can be."""
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((i, o), dtype=np.float32) / np.float32(np.sqrt(i)) for i, o in itertools.pairwise(SIZES)]
    bs = [np.zeros(o, np.float32) for o in SIZES[1:]]
    params = ws + bs
    bufs = [np.zeros_like(p) for p in params]
    x = rng.standard_normal((BATCH, 784), dtype=np.float32)
    y = rng.integers(0, 10, BATCH)
    rows = np.arange(BATCH)
    lr = np.float32(LR)

    def step():
        (w1, w2, w3), (b1, b2, b3) = ws, bs
        a1 = x @ w1
        a1 += b1
        np.maximum(a1, 0, out=a1)
        a2 = a1 @ w2
        a2 += b2
        np.maximum(a2, 0, out=a2)
        z = a2 @ w3
        z += b3
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)        # softmax; the loss itself is -mean(log z[rows, y])
        loss = -np.log(z[rows, y]).mean()
        z[rows, y] -= 1
        z /= BATCH                               # d loss / d logits
        grads = [None] * 6
        grads[2], grads[5] = a2.T @ z, z.sum(axis=0)
        d2 = z @ w3.T
        d2 *= a2 > 0
        grads[1], grads[4] = a1.T @ d2, d2.sum(axis=0)
        d1 = d2 @ w2.T
        d1 *= a1 > 0
        grads[0], grads[3] = x.T @ d1, d1.sum(axis=0)
        for p, g, buf in zip(params, grads, bufs):
            buf *= MOMENTUM
            buf += g
            p -= lr * buf
        return loss
    return step
