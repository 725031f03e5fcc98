"""TPESearcher: the Tree-structured Parzen Estimator (Bergstra et al. 2011).

After ``n_startup_trials`` random configurations, the observed trials are split into the
best ``gamma(n)`` ("below") and the rest ("above"); for each parameter one Parzen estimator
l(x) is fitted on the below group and one g(x) on the above group, ``n_ei_candidates`` values
are drawn from l and the one maximising l(x) / g(x) (the expected-improvement criterion) is
kept. Parameters are chosen one at a time in the space's order, so a conditional parameter is
modelled only on the trials where it was active and drawn only when its parent took its branch.

Each trial counts with its latest result. Under early stopping (ASHA, Hyperband) trials end at
different ``training_iteration`` values: a trial that got further ranks above one stopped
earlier, and trials of equal length rank by their metric (as Optuna ranks pruned trials below
complete ones). A trial whose metric is nan ranks last; one that errored before reporting is
not counted.

With several objectives (``metric`` and ``mode`` lists) it is MOTPE (Ozaki et al. 2020, as Optuna's
``TPESampler``): the good group is filled by non-dominated rank, front by front, and the front that does
not fit whole is cut by hypervolume contribution (two objectives) or crowding distance (more: a
simplification), see :mod:`._motpe`. Trials may report ``constraints`` (each satisfied when <= 0, as for
``NSGA2Searcher``): infeasible trials rank after every feasible one, so they are in the bad group unless
fewer than ``gamma(n)`` trials are feasible. The good group's observations all weigh the same (Optuna
weighs them by hypervolume contribution).

>>> from ember.tune import SearchSpace, uniform, choice
>>> space = SearchSpace({"x": uniform(-5, 5), "kind": choice(["a", "b"])})
>>> s = TPESearcher(n_startup_trials=5)
>>> s.setup(space, metric="loss", mode="min", seed=0)
>>> for i in range(20):
...     config = s.suggest(str(i))
...     s.on_complete(str(i), {"loss": config["x"] ** 2 + (config["kind"] == "b"), "training_iteration": 1})
>>> config = s.suggest("20")
>>> abs(config["x"]) < 5
True
"""
from __future__ import annotations

import math

import numpy as np

from ember import hookimpl

from .._objective import constraint_violation, losses
from ..space import SearchSpace
from ._motpe import good_indices
from ._parzen import Layout, UnivariateParzen, check_setup, check_state, decode_vector, encode_vector
from .base import FINISHED, Searcher


def default_gamma(n: int) -> int:
    """How many of ``n`` observed trials form the good group: ``min(ceil(0.1 * n), 25)``.

    >>> default_gamma(10), default_gamma(11), default_gamma(1000)
    (1, 2, 25)
    """
    return min(math.ceil(0.1 * n), 25)


def default_weights(n: int) -> np.ndarray:
    """Weights of ``n`` trials, oldest first: all 1 up to 25 trials; beyond, the oldest ``n - 25``
    ramp up linearly from ``1 / n`` (old observations matter less as the search moves on).

    >>> default_weights(3).tolist()
    [1.0, 1.0, 1.0]
    >>> w = default_weights(30)
    >>> round(float(w[0]), 4), float(w[-1])
    (0.0333, 1.0)
    """
    if n < 25:
        return np.ones(n)
    return np.concatenate([np.linspace(1.0 / n, 1.0, n - 25), np.ones(25)])


class TPESearcher(Searcher):
    """Tree-structured Parzen Estimator searcher (defaults as Optuna's ``TPESampler``).

    Args:
        n_startup_trials: configurations drawn at random (from the space's own distributions)
            before the model is used; fewer observed trials than this also means a random draw.
        n_ei_candidates: values drawn from l(x) per parameter, of which the best l/g is kept.
        gamma: ``gamma(n) -> int``, the size of the good group among ``n`` observed trials
            (default :func:`default_gamma`).
        prior_weight: weight of the prior kernel (uniform over the parameter's range) in each
            estimator, relative to weight 1 per observation.
        constant_liar: count the trials suggested but not yet reported as the worst ones (in the
            "above" group), so that trials running at the same time are not all drawn near the same
            point (as Optuna's ``constant_liar``); for parallel searches.

    Raises ValueError at :meth:`setup` for a space with ``grid_search`` or ``sample_from``.
    """
    multi_objective = True  # MOTPE, see the module docstring

    def __init__(self, n_startup_trials: int = 10, n_ei_candidates: int = 24, gamma=None, prior_weight: float = 1.0,
                 constant_liar: bool = False):
        if n_startup_trials < 0:
            raise ValueError(f"n_startup_trials must be >= 0, got {n_startup_trials}")
        if n_ei_candidates < 1:
            raise ValueError(f"n_ei_candidates must be >= 1, got {n_ei_candidates}")
        if prior_weight <= 0:
            raise ValueError(f"prior_weight must be > 0, got {prior_weight}")
        self.n_startup_trials = n_startup_trials
        self.n_ei_candidates = n_ei_candidates
        self.gamma = gamma or default_gamma
        self.prior_weight = prior_weight
        if not isinstance(constant_liar, bool):
            raise TypeError(f"constant_liar must be a bool, got {constant_liar!r}")
        self.constant_liar = constant_liar

    def setup(self, space, metric, mode, seed=None, num_samples=None):
        check_setup("TPESearcher", num_samples)
        super().setup(space if isinstance(space, SearchSpace) else SearchSpace(space), metric, mode, seed, num_samples)
        self.layout = Layout(self.space, "TPESearcher")
        self._vectors: dict[str, np.ndarray] = {}   # trial_id -> encoding of its configuration, in suggestion order
        # trial_id -> (training_iteration, loss or nan); with several objectives (training_iteration, losses,
        # constraint violation)
        self._latest: dict[str, tuple] = {}
        self._ended: set = set()                    # trials that completed (with a result or not)

    # -- the interface -------------------------------------------------------------------------------------
    def suggest(self, trial_id):
        if self.num_samples is not None and len(self._vectors) >= self.num_samples:
            return FINISHED
        observed = [tid for tid in self._vectors if tid in self._latest]
        if len(observed) < max(self.n_startup_trials, 1):
            vector = self.layout.random_vector(self.rng)
        else:
            pending = [tid for tid in self._vectors if tid not in self._latest and tid not in self._ended] \
                if self.constant_liar else []
            vector = self._model_vector(observed, pending)
        config = self.space.from_vector(vector)
        self._vectors[trial_id] = self.space.to_vector(config)
        return config

    def on_result(self, trial_id, result):
        self._record(trial_id, result)

    def on_complete(self, trial_id, result, error=False):
        self._ended.add(trial_id)
        if result is not None and all(m in result for m in self.metrics):
            self._record(trial_id, result)

    def state_dict(self):
        return {
            "searcher": "tpe",
            "rng": self.rng.bit_generator.state,
            "vectors": {tid: encode_vector(v) for tid, v in self._vectors.items()},
            "latest": {tid: [it, None if math.isnan(loss) else loss] if len(rest) == 0 else
                       [it, encode_vector(loss), encode_vector(rest)[0]]
                       for tid, (it, loss, *rest) in self._latest.items()},
            "ended": sorted(self._ended),
        }

    def load_state_dict(self, state):
        check_state(state, "tpe", ("rng", "vectors", "latest"))
        self.rng.bit_generator.state = state["rng"]
        self._vectors = {tid: decode_vector(v) for tid, v in state["vectors"].items()}
        self._latest = {tid: (it, math.nan if entry[0] is None else float(entry[0])) if len(entry) == 1 else
                        (it, tuple(decode_vector(entry[0]).tolist()), float(decode_vector(entry[1:])[0]))
                        for tid, (it, *entry) in state["latest"].items()}
        self._ended = set(state.get("ended", ()))  # absent in states saved before constant_liar existed

    # -- the model -----------------------------------------------------------------------------------------
    def _record(self, trial_id, result):
        if trial_id not in self._vectors:
            return  # a trial this searcher did not suggest (e.g. from before a change of searcher)
        iteration = int(result.get("training_iteration", 1))
        if len(self.metrics) > 1:
            self._latest[trial_id] = (iteration, losses(result, self.metrics, self.modes), constraint_violation(result))
            return
        loss = self.loss(result)
        self._latest[trial_id] = (iteration, loss if math.isfinite(loss) else math.nan)

    def _model_vector(self, observed: list, pending: list) -> np.ndarray:
        def rank(tid):
            if tid not in self._latest:
                return (2, 0, 0.0)  # pending, under the constant liar: the worst
            iteration, loss = self._latest[tid]
            return (int(math.isnan(loss)), -iteration, loss)

        trials = observed + pending
        n_below = min(self.gamma(len(trials)), len(observed))
        data = np.stack([self._vectors[tid] for tid in trials])
        if len(self.metrics) > 1:   # pending trials (the constant liar's) are never good
            below = good_indices(*zip(*(self._latest[tid] for tid in observed)), n_below)
            above = np.setdiff1d(np.arange(len(trials)), below)
        else:
            order = sorted(range(len(trials)), key=lambda i: rank(trials[i]))  # stable: ties keep suggestion order
            below = np.sort(np.asarray(order[:n_below], dtype=np.int64))   # back in chronological order
            above = np.sort(np.asarray(order[n_below:], dtype=np.int64))
        layout = self.layout
        vector = np.full(layout.dims, np.nan)
        for d in range(layout.dims):
            if not layout.is_active(vector[None, :], d)[0]:
                continue
            l_est = self._estimator(data[below, d], d)
            g_est = self._estimator(data[above, d], d)
            candidates = l_est.sample(self.rng, self.n_ei_candidates)
            if not layout.n_choices[d]:
                candidates = layout.snap(candidates, d)
            score = l_est.log_pdf(candidates) - g_est.log_pdf(candidates)
            vector[d] = candidates[int(np.argmax(score))]
        return vector

    def _estimator(self, column: np.ndarray, d: int) -> UnivariateParzen:
        column = column[~np.isnan(column)]   # trials in which this parameter was inactive say nothing about it
        return UnivariateParzen(column, default_weights(len(column)), self.layout.n_choices[d], self.prior_weight)


@hookimpl
def ember_tune_searchers():
    return {"tpe": TPESearcher}
