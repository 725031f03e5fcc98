"""Population Based Training against random search on a toy problem whose best learning rate decays.

    python benchmarks/tune/bench_pbt.py [--seeds 11] [--trials 16] [--iterations 40]

The toy (in the spirit of the PBT paper's toy example): noisy gradient descent on the quadratic
``f_t(theta) = h_t / 2 * |theta|^2`` in 8 dimensions, from ``theta = 10 * ones``, whose curvature grows
from ``h_1 = 1`` to ``h_T = 100`` geometrically over the ``T`` training iterations (5 steps each, gradient
noise of standard deviation 1 per coordinate). A step with learning rate ``lr`` contracts by ``1 - lr h_t``
and diverges beyond ``lr = 2 / h_t``; the best learning rate, about ``1 / h_t`` while far from the minimum
and lower near it (noise floor ``~ lr / 4`` per coordinate), falls 100-fold during training. A fixed
learning rate must be small enough for the end (<= 0.02) and is then too small at the start.

The two methods get the same budget: ``--trials`` trials of ``--iterations`` iterations each, the initial
``lr`` drawn from ``loguniform(1e-4, 1)``. Random search keeps it fixed; PBT (``perturbation_interval=4``,
``hyperparam_mutations={"lr": loguniform(1e-4, 1)}``, Ray's defaults otherwise) exploits and explores. All
trials run at once (a deterministic round-robin). The score of a run is the loss of its best trial at the
last iteration (lower is better); the script prints the median and the spread over seeds and exits non-zero
when PBT's median is not below random search's.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile

import numpy as np

DIM, STEPS, NOISE = 8, 5, 1.0


def curvature(t: int, iterations: int) -> float:
    return 100.0 ** ((t - 1) / (iterations - 1))


def train(theta: np.ndarray, lr: float, t: int, iterations: int, rng: np.random.Generator) -> np.ndarray:
    """Iteration ``t``: STEPS noisy gradient steps on f_t."""
    h = curvature(t, iterations)
    for _ in range(STEPS):
        theta = theta - lr * (h * theta + NOISE * rng.standard_normal(DIM))
    return np.clip(theta, -1e6, 1e6)  # a diverged trial stays finite (and hopeless)


def loss(theta: np.ndarray, t: int, iterations: int) -> float:
    return float(curvature(t, iterations) / 2 * np.mean(theta ** 2))


def run(method: str, seed: int, trials: int, iterations: int, bound: float = 1.0) -> float:
    import ember
    from ember import tune
    scheduler = None
    if method == "pbt":
        scheduler = tune.PopulationBasedTraining(perturbation_interval=4,
                                                 hyperparam_mutations={"lr": tune.loguniform(1e-4, 1)})
    elif method == "pb2":
        scheduler = tune.PB2(perturbation_interval=4, hyperparam_bounds={"lr": [1e-4, bound]})
    with tempfile.TemporaryDirectory() as folder:
        exp = tune.Experiment({"lr": tune.loguniform(1e-4, 1)}, "loss", "min", scheduler=scheduler,
                              num_samples=trials, seed=seed, storage_path=folder, name=method)
        noise = np.random.default_rng(seed + 1000)
        running: dict = {}
        while not exp.is_finished():
            while (trial := exp.ask()) is not None:
                if trial.checkpoint_iteration >= iterations:  # exploited at its last iteration: done
                    exp.tell(trial)
                    continue
                theta = (tune.Checkpoint(trial.checkpoint).to_dict()["theta"].numpy() if trial.checkpoint
                         else np.full(DIM, 10.0))
                running[trial.trial_id] = [trial, theta]
            if not running:
                continue
            trial_id = min(running, key=lambda tid: (running[tid][0].run_iteration, tid))
            trial, theta = running[trial_id]
            t = trial.run_iteration + 1
            theta = running[trial_id][1] = train(theta, trial.config["lr"], t, iterations, noise)
            decision = exp.report(trial, {"loss": loss(theta, t, iterations)},
                                  checkpoint={"theta": ember.tensor(theta)})
            if decision is not tune.Decision.CONTINUE:
                del running[trial_id]
            elif t >= iterations:
                exp.tell(trial)
                del running[trial_id]
        exp.close()
        finals = [r["loss"] for trial in exp.trials for r in trial.results if r["training_iteration"] == iterations]
        return min(finals)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=11)
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--pb2", action="store_true", help="also PB2, with lr bounds [1e-4, 1] and [1e-4, 0.05]")
    args = parser.parse_args(argv)
    medians = {}
    print(f"{args.trials} trials x {args.iterations} iterations, {args.seeds} seeds; final loss of the best trial "
          "(lower is better)")
    methods = [("random", 1.0), ("pbt", 1.0)] + ([("pb2", 1.0), ("pb2", 0.05)] if args.pb2 else [])
    for method, bound in methods:
        scores = [run(method, seed, args.trials, args.iterations, bound) for seed in range(args.seeds)]
        if method == "pb2":
            method = f"pb2<{bound:g}"
        q = statistics.quantiles(scores, n=4, method="inclusive") if len(scores) > 1 else [scores[0]] * 3
        medians.setdefault(method, statistics.median(scores))
        print(f"{method:9s} median {medians[method]:.4g}  quartiles [{q[0]:.4g}, {q[2]:.4g}]  "
              f"min {min(scores):.4g}  max {max(scores):.4g}")
    ratio = medians["random"] / medians["pbt"]
    print(f"PBT's median final loss is {ratio:.1f}x lower than random search's")
    return 0 if medians["pbt"] < medians["random"] else 1


if __name__ == "__main__":
    sys.exit(main())
