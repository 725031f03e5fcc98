"""PB2: Population Based Training whose explore step is a Gaussian-process bandit (Parker-Holder et al. 2020).

Exploit is PBT's (a bottom-quantile trial copies a top-quantile trial's checkpoint). Explore does not
perturb at random: at each perturbation point the scheduler records ``(time, config) -> improvement of the
metric since the trial's previous perturbation point``; a new configuration is the candidate (of 256 drawn
uniformly in ``hyperparam_bounds``) with the highest upper confidence bound ``mean + 2 std`` of a Gaussian
process fitted to those records (squared-exponential kernel on time and hyperparameters scaled to [0, 1]),
at the current time. With fewer than two records it is drawn uniformly. This is a simplified PB2: a fixed
kernel where Ray Tune's fits a time-varying one.

>>> from ember.tune import PB2
>>> pb2 = PB2(perturbation_interval=2, hyperparam_bounds={"lr": [0.0, 1.0]}, seed=0)
>>> pb2.setup(metric="loss", mode="min")
>>> for trial, loss in [("a", 0.1), ("b", 0.9)]:
...     pb2.on_trial_add(trial, {"lr": 0.5})
...     pb2.on_checkpoint(trial, 2)
...     _ = pb2.on_result(trial, {"loss": loss, "training_iteration": 2})
>>> source, config = pb2.take_exploits()["b"]
>>> source, 0.0 <= config["lr"] <= 1.0
('a', True)
"""
from __future__ import annotations

import numbers

import numpy as np

from ember import hookimpl

from .pbt import PopulationBasedTraining

CANDIDATES, KAPPA, LENGTHSCALE, NOISE = 256, 2.0, 0.25, 0.1


def _kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return np.exp(-0.5 * d2 / LENGTHSCALE ** 2)


def ucb_argmax(points: np.ndarray, values: np.ndarray, candidates: np.ndarray) -> int:
    """The index of the candidate with the highest ``mean + KAPPA * std`` of a GP fitted to (points, values).

    >>> pts = np.array([[0.0, 0.1], [0.0, 0.9]]); vals = np.array([0.0, 1.0])
    >>> ucb_argmax(pts, vals, np.array([[0.0, 0.1], [0.0, 0.9]]))
    1
    """
    y = (values - values.mean()) / (values.std() or 1.0)
    chol = np.linalg.cholesky(_kernel(points, points) + NOISE * np.eye(len(points)))
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, y))
    cross = _kernel(candidates, points)
    v = np.linalg.solve(chol, cross.T)
    std = np.sqrt(np.maximum(1.0 - (v ** 2).sum(0), 0.0))
    return int(np.argmax(cross @ alpha + KAPPA * std))


class PB2(PopulationBasedTraining):
    """Population Based Bandits with Ray Tune's argument names (``time_attr`` defaults to training_iteration).

    ``hyperparam_bounds``: ``{key: [low, high]}`` of the continuous hyperparameters explored (an int pair
    gives ints); each key must be in the param space. The other arguments are
    :class:`PopulationBasedTraining`'s.
    """

    def __init__(self, time_attr: str = "training_iteration", metric: str | None = None, mode: str | None = None,
                 perturbation_interval: float = 60.0, hyperparam_bounds: dict | None = None,
                 quantile_fraction: float = 0.25, log_config: bool = True, require_attrs: bool = True,
                 synch: bool = False, custom_explore_fn=None, seed: int | None = None):
        if not isinstance(hyperparam_bounds, dict) or not hyperparam_bounds:
            raise ValueError(f"PB2 needs hyperparam_bounds {{key: [low, high]}}, got {hyperparam_bounds!r}")
        for key, bounds in hyperparam_bounds.items():
            if not isinstance(bounds, (list, tuple)) or len(bounds) != 2 \
                    or not all(isinstance(b, numbers.Real) and not isinstance(b, bool) for b in bounds) \
                    or not bounds[0] < bounds[1]:
                raise ValueError(f"hyperparam_bounds[{key!r}] must be [low, high] with low < high, got {bounds!r}")
        super().__init__(time_attr, metric, mode, perturbation_interval,
                         hyperparam_mutations={key: list(b) for key, b in hyperparam_bounds.items()},
                         quantile_fraction=quantile_fraction, custom_explore_fn=custom_explore_fn,
                         log_config=log_config, require_attrs=require_attrs, synch=synch, seed=seed)
        self.hyperparam_bounds = {key: list(b) for key, b in hyperparam_bounds.items()}
        self._records: list = []  # [time, [hyperparameters], improvement of the loss since the last point]

    def _observe(self, trial_id: str, t: float, loss: float) -> None:
        last_time, last_loss, _, _, config = self._trials[trial_id]
        if last_loss is not None and np.isfinite(loss) and np.isfinite(last_loss):
            self._records.append([t, [float(config[k]) for k in self.hyperparam_bounds], last_loss - loss])

    def _explore(self, config: dict, t: float) -> dict:
        keys = list(self.hyperparam_bounds)
        low = np.array([self.hyperparam_bounds[k][0] for k in keys], dtype=float)
        high = np.array([self.hyperparam_bounds[k][1] for k in keys], dtype=float)
        candidates = self._rng.random((CANDIDATES, len(keys)))
        if len(self._records) >= 2:
            horizon = max(max(r[0] for r in self._records), t) or 1.0
            points = np.array([[r[0] / horizon, *((np.array(r[1]) - low) / (high - low))] for r in self._records])
            values = np.array([r[2] for r in self._records])
            with_time = np.hstack([np.full((CANDIDATES, 1), t / horizon), candidates])
            chosen = candidates[ucb_argmax(points, values, with_time)]
        else:
            chosen = candidates[0]
        new = dict(config)
        for key, unit, lo, hi in zip(keys, chosen, low, high):
            value = float(lo + unit * (hi - lo))
            bounds = self.hyperparam_bounds[key]
            new[key] = int(round(value)) if all(isinstance(b, numbers.Integral) for b in bounds) else value
        if self.custom_explore_fn is not None:
            new = self.custom_explore_fn(new)
        return new

    def state_dict(self) -> dict:
        return {**super().state_dict(), "records": [list(r) for r in self._records]}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self._records = [list(r) for r in state["records"]]


@hookimpl
def ember_tune_schedulers():
    return {"pb2": PB2}
