"""Multi-fidelity test functions for the search-quality benchmark, and the problems built on them.

* Counting Ones (Falkner et al. 2018, BOHB paper, sec. 5.1): ``n_cat`` binary and ``n_cont`` continuous
  parameters in [0, 1]; f(x) = -(sum of the binary x_i + sum over the continuous x_j of E[Bernoulli(x_j)]).
  At budget b the expectation of each continuous term is estimated from b Bernoulli samples (the budget
  is the number of samples). Minimum: -(n_cat + n_cont), at all ones.
* Augmented Branin (the multi-fidelity Branin used by BoTorch): x1 in [-5, 10], x2 in [0, 15], fidelity
  s in [0, 1] enters the quadratic coefficient, b - 0.1 (1 - s). At s = 1 it is Branin, minimum 0.397887
  (x1 = -pi, pi, 3pi).
* Augmented Hartmann-6 (BoTorch's): x in [0, 1]^6, fidelity s in [0, 1] lowers the first alpha weight,
  alpha_1 = 1 - 0.1 (1 - s). At s = 1 it is Hartmann-6, minimum -3.32237 at
  (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573).

Definitions from the papers / BoTorch's documented formulas; the code is written here.

A :class:`Problem` maps a trial's ``training_iteration`` t = 1..max_t to the fidelity: the budget
grows linearly with t (Counting Ones: ``samples_per_iteration * t`` samples; Branin, Hartmann: s = t / max_t),
so a trial's cost is the iteration it reached. Regret is always measured at full fidelity without
noise: ``problem.regret(config)``.

Tests: tests/tune/test_bench_functions.py loads this file by path (benchmarks/ is not a package).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BRANIN_MIN = 0.397887
HARTMANN6_MIN = -3.32237
HARTMANN6_ARGMIN = (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573)

_H_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H_A = np.array([[10, 3, 17, 3.5, 1.7, 8],
                 [0.05, 10, 17, 0.1, 8, 14],
                 [3, 3.5, 1.7, 10, 17, 8],
                 [17, 8, 0.05, 10, 0.1, 14]])
_H_P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886],
                        [2329, 4135, 8307, 3736, 1004, 9991],
                        [2348, 1451, 3522, 2883, 3047, 6650],
                        [4047, 8828, 8732, 5743, 1091, 381]])


def augmented_branin(x1, x2, s):
    """Augmented Branin at fidelity ``s`` (broadcasts over arrays)."""
    x1, x2, s = (np.asarray(v, dtype=np.float64) for v in (x1, x2, s))
    b = 5.1 / (4 * math.pi ** 2) - 0.1 * (1 - s)
    t1 = x2 - b * x1 ** 2 + 5 / math.pi * x1 - 6
    return t1 ** 2 + 10 * (1 - 1 / (8 * math.pi)) * np.cos(x1) + 10


def augmented_hartmann6(x, s):
    """Augmented Hartmann-6 at fidelity ``s``; ``x`` has shape (..., 6)."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape[-1] != 6:
        raise ValueError(f"augmented_hartmann6 needs 6 coordinates in the last axis, got shape {x.shape}")
    s = np.asarray(s, dtype=np.float64)
    bumps = np.exp(-np.sum(_H_A * (x[..., None, :] - _H_P) ** 2, axis=-1))  # (..., 4)
    alpha1 = _H_ALPHA[0] - 0.1 * (1 - s)
    return -(alpha1 * bumps[..., 0] + bumps[..., 1:] @ _H_ALPHA[1:])


def counting_ones(bits, probs, n_samples=None, rng=None):
    """Counting Ones: ``-(sum(bits) + sum of each prob's Bernoulli mean)``.

    ``n_samples`` None: the exact expectation (``sum(probs)``); otherwise each mean is estimated from
    ``n_samples`` Bernoulli(prob) draws of ``rng``.
    """
    bits = np.asarray(bits, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    if np.any((bits != 0) & (bits != 1)):
        raise ValueError(f"counting_ones: bits must be 0 or 1, got {bits}")
    if np.any((probs < 0) | (probs > 1)):
        raise ValueError(f"counting_ones: probs must lie in [0, 1], got {probs}")
    if n_samples is None:
        return -(bits.sum() + probs.sum())
    if n_samples < 1:
        raise ValueError(f"counting_ones: n_samples must be >= 1, got {n_samples}")
    means = rng.binomial(int(n_samples), probs) / n_samples  # the mean of n Bernoulli draws, drawn at once
    return -(bits.sum() + means.sum())


def _irwin_hall_sf(n: int, y: float) -> float:
    """P(U_1 + ... + U_n >= y) for independent uniforms on [0, 1] (by symmetry, the CDF at n - y)."""
    x = n - y
    if x <= 0:
        return 0.0
    if x >= n:
        return 1.0
    return sum((-1) ** k * math.comb(n, k) * (x - k) ** n for k in range(int(math.floor(x)) + 1)) / math.factorial(n)


@dataclass(frozen=True)
class Param:
    """One parameter of a problem: ``kind`` "float" (uniform on [low, high]) or "binary" (choice of 0, 1)."""
    name: str
    kind: str
    low: float = 0.0
    high: float = 1.0


class Problem:
    """A benchmark problem: parameters, loss at a training iteration, regret at full fidelity."""
    name: str
    params: tuple
    optimum: float
    max_t: int = 81
    #: regret the "budget to reach" columns ask for
    target: float

    def param_space(self) -> dict:
        """The ember.tune ``param_space`` of this problem."""
        from ember import tune
        return {p.name: tune.uniform(p.low, p.high) if p.kind == "float" else tune.choice([0, 1])
                for p in self.params}

    def suggest_optuna(self, trial) -> dict:
        """Draw a configuration through an Optuna trial (same names and ranges)."""
        return {p.name: trial.suggest_float(p.name, p.low, p.high) if p.kind == "float"
                else trial.suggest_categorical(p.name, [0, 1]) for p in self.params}

    def evaluate(self, config: dict, t: int, rng) -> float:
        """The loss a trial reports at training iteration ``t`` (1..max_t)."""
        raise NotImplementedError

    def true_value(self, config: dict) -> float:
        """The noise-free value at full fidelity."""
        raise NotImplementedError

    def regret(self, config: dict) -> float:
        return self.true_value(config) - self.optimum


class CountingOnes(Problem):
    """Counting Ones with ``n_cat`` + ``n_cont`` dims, budgets 9..729 samples (iterations 1..81).

    The loss and the regret are divided by the dimension (normalised regret in [0, 1]).
    """

    def __init__(self, n_cat: int = 8, n_cont: int = 8, samples_per_iteration: int = 9, target: float = 0.1):
        self.name = f"counting_ones_{n_cat}+{n_cont}"
        self.n_cat, self.n_cont, self.samples_per_iteration = n_cat, n_cont, samples_per_iteration
        self.params = tuple([Param(f"b{i}", "binary") for i in range(n_cat)]
                            + [Param(f"c{i}", "float") for i in range(n_cont)])
        self.optimum, self.target = -1.0, target

    def _split(self, config):
        return ([config[f"b{i}"] for i in range(self.n_cat)], [config[f"c{i}"] for i in range(self.n_cont)])

    def evaluate(self, config, t, rng):
        return counting_ones(*self._split(config), self.samples_per_iteration * t, rng) / (self.n_cat + self.n_cont)

    def random_hit_probability(self, target: float) -> float:
        """P(regret <= target) for one configuration drawn uniformly at random (exact).

        The binary sum is Binomial(n_cat, 1/2), the continuous sum Irwin-Hall(n_cont); regret <= target
        means continuous sum >= d (1 - target) - binary sum, with d = n_cat + n_cont.
        """
        d = self.n_cat + self.n_cont
        return sum(math.comb(self.n_cat, k) / 2 ** self.n_cat * _irwin_hall_sf(self.n_cont, d * (1 - target) - k)
                   for k in range(self.n_cat + 1))

    def random_budget_quantiles(self, target: float, quantiles=(0.25, 0.5, 0.75)) -> list:
        """Full-fidelity evaluations random search needs to reach ``target`` (its first success is geometric
        with :meth:`random_hit_probability`): the smallest n with P(reached within n) >= q, per quantile q."""
        p = self.random_hit_probability(target)
        if p >= 1:
            return [1 for _ in quantiles]
        if p <= 0:
            return [math.inf for _ in quantiles]
        return [max(1, math.ceil(math.log1p(-q) / math.log1p(-p))) for q in quantiles]

    def true_value(self, config):
        return counting_ones(*self._split(config)) / (self.n_cat + self.n_cont)


class AugmentedBranin(Problem):
    """Augmented Branin, fidelity s = t / max_t."""

    def __init__(self, target: float = 0.05):
        self.name = "augmented_branin"
        self.params = (Param("x1", "float", -5.0, 10.0), Param("x2", "float", 0.0, 15.0))
        self.optimum, self.target = BRANIN_MIN, target

    def evaluate(self, config, t, rng):
        return float(augmented_branin(config["x1"], config["x2"], t / self.max_t))

    def true_value(self, config):
        return float(augmented_branin(config["x1"], config["x2"], 1.0))


class AugmentedHartmann6(Problem):
    """Augmented Hartmann-6, fidelity s = t / max_t."""

    def __init__(self, target: float = 0.1):
        self.name = "augmented_hartmann6"
        self.params = tuple(Param(f"x{i + 1}", "float") for i in range(6))
        self.optimum, self.target = HARTMANN6_MIN, target

    def _x(self, config):
        return [config[f"x{i + 1}"] for i in range(6)]

    def evaluate(self, config, t, rng):
        return float(augmented_hartmann6(self._x(config), t / self.max_t))

    def true_value(self, config):
        return float(augmented_hartmann6(self._x(config), 1.0))


PROBLEMS = {"counting_ones": CountingOnes, "branin": AugmentedBranin, "hartmann6": AugmentedHartmann6}
