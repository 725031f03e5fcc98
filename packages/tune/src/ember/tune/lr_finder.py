"""The learning-rate range test (Smith 2017): sweep the learning rate upwards, watch the loss.

:func:`lr_find` trains ``model`` for up to ``num_iter`` steps while the learning rate
grows exponentially from ``start_lr`` to ``end_lr``, records an exponentially
smoothed loss, stops when the loss diverges, and puts the model and the optimizer
back as they were. It works on any objects with the ember.nn / ember.optim (or
PyTorch) interfaces; ember.nn is not imported here.

>>> import numpy as np, ember, ember.nn as nn, ember.optim as optim
>>> from ember import tune
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(64, 4)).astype(np.float32)
>>> y = (X @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32))
>>> model = nn.Linear(4, 1)
>>> opt = optim.SGD(model.parameters(), lr=0.01)
>>> found = tune.lr_find(model, nn.MSELoss(), opt, [(ember.tensor(X), ember.tensor(y))], num_iter=60)
>>> found.diverged, 1e-3 < found.suggestion < 1.0
(True, True)
>>> opt.param_groups[0]["lr"]  # restored
0.01
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class LRFinderResult:
    """The outcome of :func:`lr_find`.

    ``lrs[i]`` is the learning rate of step ``i`` and ``losses[i]`` the smoothed loss after it
    (``raw_losses[i]`` unsmoothed). ``suggestion`` is the learning rate :func:`lr_find` proposes
    (None when no step gave a finite loss); ``diverged`` tells whether the sweep stopped early.
    """
    lrs: list
    losses: list
    raw_losses: list = field(default_factory=list)
    suggestion: float | None = None
    diverged: bool = False

    def plot(self, ax=None, log_x: bool = True):
        """Plot the smoothed loss against the learning rate (log scale), marking the suggestion.

        Returns the matplotlib ``Axes`` (a new figure's when ``ax`` is None).
        """
        from .plot import _pyplot
        plt = _pyplot()
        if ax is None:
            _, ax = plt.subplots()
        ax.plot(self.lrs, self.losses, label="smoothed loss")
        if log_x:
            ax.set_xscale("log")
        if self.suggestion is not None:
            ax.axvline(self.suggestion, color="red", linestyle="--", label=f"suggested lr = {self.suggestion:.3g}")
        ax.set_xlabel("learning rate")
        ax.set_ylabel("loss")
        ax.legend()
        return ax


def lr_find(model, loss_fn, optimizer, loader, start_lr: float = 1e-7, end_lr: float = 10, num_iter: int = 100,
            smooth_f: float = 0.05, diverge_th: float = 5) -> LRFinderResult:
    """Run the learning-rate range test and suggest a learning rate.

    Step ``i`` (0-based) trains on the next batch of ``loader`` (restarted when it runs out) with
    learning rate ``start_lr * (end_lr / start_lr) ** (i / (num_iter - 1))`` set on every parameter
    group of ``optimizer``. Each batch is an ``(inputs, targets)`` pair; the step computes
    ``loss_fn(model(inputs), targets)``, backpropagates and calls ``optimizer.step()``.

    The recorded loss is an exponential moving average with weight ``smooth_f`` on the newest loss,
    bias-corrected (divided by ``1 - (1 - smooth_f) ** (i + 1)``, so the first points are not pulled
    towards zero). The sweep stops early ("diverged") when a loss is not finite or the smoothed loss
    exceeds ``diverge_th`` times the smallest smoothed loss so far.

    **How the suggestion is chosen**: the learning rate where the smoothed loss falls fastest, i.e.
    the most negative slope of smoothed loss against ``log(lr)`` (``numpy.gradient``), searched over
    the points up to the minimum of the smoothed loss (past the minimum the loss is no longer
    falling; that region is where training starts to become unstable). The steepest descent lies
    well inside the stable range, where a larger step still buys faster progress. With fewer than
    three points up to the minimum there is no slope to read, and the suggestion is the
    learning rate at the minimum divided by 10 (the older rule of thumb). Only finite points count.

    Afterwards the model's parameters and buffers, its train/eval mode, and the optimizer's state and
    parameter groups (learning rates included) are restored exactly, and the gradients are cleared;
    random number generators (e.g. for dropout) are not rewound.
    """
    _check_args(start_lr, end_lr, num_iter, smooth_f, diverge_th)
    if not getattr(optimizer, "param_groups", None):
        raise TypeError(f"optimizer must have param_groups (an ember.optim optimizer), got {type(optimizer).__name__}")
    model_state = _snapshot(model.state_dict())
    optim_state = _snapshot(optimizer.state_dict())
    was_training = model.training
    lrs, losses, raw = [], [], []
    diverged = False
    try:
        model.train()
        ratio = end_lr / start_lr
        batches = _cycle(loader)
        avg, best = 0.0, math.inf
        for i in range(num_iter):
            lr = start_lr * ratio ** (i / (num_iter - 1))
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss = _train_step(model, loss_fn, optimizer, next(batches))
            avg = (1 - smooth_f) * avg + smooth_f * loss
            smoothed = avg / (1 - (1 - smooth_f) ** (i + 1))
            lrs.append(lr)
            raw.append(loss)
            losses.append(smoothed)
            if not math.isfinite(smoothed) or smoothed > diverge_th * best:
                diverged = True
                break
            best = min(best, smoothed)
    finally:
        model.load_state_dict(model_state)
        optimizer.load_state_dict(optim_state)
        optimizer.zero_grad()
        model.train(was_training)
    return LRFinderResult(lrs, losses, raw, _suggest(lrs, losses), diverged)


def _check_args(start_lr, end_lr, num_iter, smooth_f, diverge_th):
    if not start_lr > 0:
        raise ValueError(f"start_lr must be > 0, got {start_lr}")
    if not end_lr > start_lr:
        raise ValueError(f"end_lr must be greater than start_lr ({start_lr}), got {end_lr}")
    if not isinstance(num_iter, int) or num_iter < 2:
        raise ValueError(f"num_iter must be an integer >= 2, got {num_iter!r}")
    if not 0 < smooth_f <= 1:
        raise ValueError(f"smooth_f must be in (0, 1] (1: no smoothing), got {smooth_f}")
    if not diverge_th > 1:
        raise ValueError(f"diverge_th must be > 1 (a multiple of the best smoothed loss), got {diverge_th}")


def _suggest(lrs, losses):
    finite = [(lr, loss) for lr, loss in zip(lrs, losses) if math.isfinite(loss)]
    if not finite:
        return None
    lr, loss = (np.array(v, dtype=np.float64) for v in zip(*finite))
    lowest = int(np.argmin(loss))
    if lowest < 2:
        return float(lr[lowest]) / 10
    slope = np.gradient(loss[:lowest + 1], np.log(lr[:lowest + 1]))
    return float(lr[int(np.argmin(slope))])


def _cycle(loader):
    """Batches of ``loader`` forever, iterating it again each time it runs out."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise ValueError("loader yielded no batches; lr_find needs at least one (inputs, targets) batch")


def _train_step(model, loss_fn, optimizer, batch) -> float:
    if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
        raise TypeError(f"each batch must be an (inputs, targets) pair, got {type(batch).__name__}"
                        + (f" of length {len(batch)}" if isinstance(batch, (tuple, list)) else ""))
    inputs, targets = batch
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return float(loss.item())


def _snapshot(value):
    """A deep copy of nested dicts/lists/tuples in which every tensor (or array) is cloned."""
    if hasattr(value, "detach") and hasattr(value, "clone"):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        out = type(value)() if type(value) is not dict else {}
        for k, v in value.items():
            out[k] = _snapshot(v)
        if hasattr(value, "_metadata"):
            out._metadata = value._metadata
        return out
    if isinstance(value, (list, tuple)):
        return type(value)(_snapshot(v) for v in value)
    return value
