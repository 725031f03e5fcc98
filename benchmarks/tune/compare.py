"""Search quality: random search, Hyperband, ASHA, TPE and BOHB on multi-fidelity test functions.

Every method runs through ``tune.Experiment``'s ask/tell loop, one trial at a time, until the same
total budget is spent; with Optuna installed, Optuna's TPESampler + HyperbandPruner and RandomSampler +
SuccessiveHalvingPruner run in the same loop on the same problems. See README.md for the definitions
(budget, incumbent, regret) and how to run it:

    python benchmarks/tune/compare.py            # the full comparison (20 seeds)
    python benchmarks/tune/compare.py --quick    # a smoke run
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mf_functions import PROBLEMS  # noqa: E402

ETA = 3
EMBER_METHODS = ("random", "hyperband", "asha", "tpe", "bohb")
OPTUNA_METHODS = ("optuna_tpe_hb", "optuna_random_sh")
#: total budget of each problem, in full-fidelity evaluations (max_t iterations each)
BUDGETS = {"counting_ones": 100, "branin": 50, "hartmann6": 100}
#: budgets (in full-fidelity evaluations) at which regret quartiles are tabulated
CHECKPOINTS = (1, 3, 10, 20, 30, 50, 100)


def rungs(max_t: int, multi_fidelity: bool) -> list:
    """Iterations at which a trial reports: the Hyperband rungs 1, 3, 9, ... max_t, or only max_t."""
    if not multi_fidelity:
        return [max_t]
    points, t = [], 1
    while t < max_t:
        points.append(t)
        t *= ETA
    return points + [max_t]


class Incumbent:
    """The recommendation after each result: the best loss among results at the highest iteration seen
    so far. Its regret (noise-free, full fidelity) is recorded each time it changes."""

    def __init__(self, problem):
        self.problem = problem
        self.top_t, self.best = 0, math.inf
        self.curve = []  # (budget spent, regret)

    def add(self, spent: int, config: dict, t: int, loss: float) -> None:
        if t > self.top_t or (t == self.top_t and loss < self.best):
            self.top_t, self.best = t, loss
            regret = self.problem.regret(config)
            if not self.curve or self.curve[-1][1] != regret:
                self.curve.append((spent, regret))


def make_ember(method: str, max_t: int):
    """(searcher, scheduler, multi_fidelity) of an ember method: BOHB is the BOHB searcher with Hyperband."""
    from ember import tune
    searcher = getattr(tune, {"tpe": "TPESearcher", "bohb": "BOHBSearcher"}.get(method, "RandomSearcher"))()
    if method in ("hyperband", "bohb"):
        return searcher, tune.HyperBandScheduler(max_t=max_t, reduction_factor=ETA), True
    if method == "asha":
        return searcher, tune.ASHAScheduler(max_t=max_t, grace_period=1, reduction_factor=ETA), True
    return searcher, tune.FIFOScheduler(), False


def run_ember(problem, method: str, seed: int, budget: int) -> dict:
    """One run of an ember method; ``budget`` in iterations. Returns the incumbent's regret curve."""
    from ember import tune
    searcher, scheduler, multi_fidelity = make_ember(method, problem.max_t)
    exp = tune.Experiment(problem.param_space(), metric="loss", mode="min", search_alg=searcher,
                          scheduler=scheduler, num_samples=-1, seed=seed)
    rng = np.random.default_rng([seed, 1])
    points = rungs(problem.max_t, multi_fidelity)
    incumbent, spent, n_trials = Incumbent(problem), 0, 0
    started = time.perf_counter()
    while spent < budget:
        trial = exp.ask()
        if trial is None:
            if exp.is_finished():
                break
            raise RuntimeError(f"{method}: ask() gave no trial while none is running")
        n_trials += not trial.results
        done = trial.last_result["training_iteration"] if trial.results else 0  # resumed: continue from there
        decision = tune.Decision.CONTINUE
        for t in points:
            if t <= done:
                continue
            spent, done = spent + t - done, t
            loss = problem.evaluate(trial.config, t, rng)
            decision = exp.report(trial, {"loss": loss, "training_iteration": t})
            incumbent.add(spent, trial.config, t, loss)
            if decision is not tune.Decision.CONTINUE or spent >= budget:
                break
        if decision is tune.Decision.CONTINUE and done == problem.max_t:
            exp.tell(trial)
    return {"curve": incumbent.curve, "spent": spent, "trials": n_trials, "seconds": time.perf_counter() - started}


def run_optuna(problem, method: str, seed: int, budget: int) -> dict:
    """One run of an Optuna sampler + pruner in the same loop (reports at the same rungs)."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if method == "optuna_tpe_hb":
        sampler = optuna.samplers.TPESampler(seed=seed)
        pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=problem.max_t, reduction_factor=ETA)
    else:
        sampler = optuna.samplers.RandomSampler(seed=seed)
        pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=ETA)
    # HyperbandPruner picks a trial's bracket from a hash of the study name: name it, for repeatable runs
    study = optuna.create_study(study_name=f"{problem.name}-{method}-{seed}", direction="minimize",
                                sampler=sampler, pruner=pruner)
    rng = np.random.default_rng([seed, 1])
    incumbent, spent, n_trials = Incumbent(problem), 0, 0
    started = time.perf_counter()
    while spent < budget:
        trial = study.ask()
        config = problem.suggest_optuna(trial)
        n_trials += 1
        done, loss = 0, None
        for t in rungs(problem.max_t, True):
            spent, done = spent + t - done, t
            loss = problem.evaluate(config, t, rng)
            trial.report(loss, t)
            incumbent.add(spent, config, t, loss)
            if trial.should_prune():
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                break
            if spent >= budget:
                break
        else:
            study.tell(trial, loss)
    return {"curve": incumbent.curve, "spent": spent, "trials": n_trials, "seconds": time.perf_counter() - started}


def _task(args):
    problem_name, method, seed, budget = args
    problem = PROBLEMS[problem_name]()
    run = run_optuna if method.startswith("optuna") else run_ember
    return problem_name, method, seed, run(problem, method, seed, budget)


def regret_at(curve: list, spent: float) -> float:
    """The incumbent's regret once ``spent`` iterations are used (inf before the first result)."""
    regret = math.inf
    for used, value in curve:
        if used > spent:
            break
        regret = value
    return regret


def budget_to_reach(curve: list, target: float) -> float:
    """Iterations used when the incumbent's regret first falls to ``target`` or below (inf: never)."""
    return next((used for used, value in curve if value <= target), math.inf)


def quartiles(values) -> tuple:
    """(q25, median, q75), with inf where more than that share of the values are inf."""
    values = np.sort(np.asarray(values, dtype=np.float64))
    out = []
    for q in (0.25, 0.5, 0.75):
        position = q * (len(values) - 1)
        lo, hi = values[int(math.floor(position))], values[int(math.ceil(position))]
        out.append(lo if lo == hi else lo + (position - math.floor(position)) * (hi - lo))
    return tuple(out)


def _fmt(value, scale=1.0):
    return "never" if not math.isfinite(value) else f"{value / scale:.3g}"


def summarise(problem, runs: dict, budget: int) -> dict:
    """Print the tables of one problem; return {method: (q25, median, q75) of the budget to the target}."""
    problem_name, target, max_t = problem.name, problem.target, problem.max_t
    methods = [m for m in EMBER_METHODS + OPTUNA_METHODS if m in runs]
    checkpoints = [c for c in CHECKPOINTS if c * max_t <= budget]
    print(f"\n## {problem_name}: total budget {budget // max_t} full-fidelity evaluations "
          f"({budget} iterations), {len(next(iter(runs.values())))} seeds, target regret {target}")
    print("regret of the incumbent, median [25%, 75%], at a budget of N full-fidelity evaluations")
    print(f"{'method':<18}" + "".join(f"{'N=' + str(c):>24}" for c in checkpoints))
    for m in methods:
        cells = []
        for c in checkpoints:
            q25, q50, q75 = quartiles([regret_at(r["curve"], c * max_t) for r in runs[m]])
            cells.append(f"{_fmt(q50)} [{_fmt(q25)}, {_fmt(q75)}]")
        print(f"{m:<18}" + "".join(f"{cell:>24}" for cell in cells))
    print(f"budget to reach regret <= {target}, in full-fidelity evaluations: median [25%, 75%]; "
          "trials and seconds per run (median)")
    reach = {}
    for m in methods:
        reach[m] = quartiles([budget_to_reach(r["curve"], target) for r in runs[m]])
        q25, q50, q75 = (_fmt(v, max_t) for v in reach[m])
        trials = np.median([r["trials"] for r in runs[m]])
        seconds = np.median([r["seconds"] for r in runs[m]])
        print(f"{m:<18}{q50:>10} [{q25}, {q75}]{'':>6}{trials:>8.0f} trials {seconds:>8.2f} s")
    if hasattr(problem, "random_budget_quantiles"):
        q25, q50, q75 = problem.random_budget_quantiles(target)
        print(f"{'random (exact)':<18}{q50:>10} [{q25}, {q75}]   geometric waiting time, P(regret <= {target}) = "
              f"{problem.random_hit_probability(target):.3g} per random configuration")
    return reach


def check_targets(problem, reach: dict, runs: dict, budget: int) -> list:
    """The issue's targets on Counting Ones, as (text, passed) pairs."""
    max_t, target = problem.max_t, problem.target
    checks = []
    bohb, measured = reach["bohb"][1], reach["random"][1]
    exact = problem.random_budget_quantiles(target)[1] * max_t
    # random search's budget to the target: measured when it got there within the budget, else the exact
    # median of its geometric waiting time (each random configuration succeeds with a known probability)
    random = measured if math.isfinite(measured) else exact
    source = "measured" if math.isfinite(measured) else (
        f"not reached within {budget / max_t:.3g} in the runs; exact median of its geometric waiting time")
    checks.append((f"BOHB reaches regret {target} with <= 1/5 of random search's budget: BOHB {_fmt(bohb, max_t)}, "
                   f"random {_fmt(random, max_t)} ({source}) full-fidelity evaluations",
                   math.isfinite(bohb) and bohb <= random / 5))
    # a sharper form: the regret random search reaches with the whole budget, and what BOHB needs for it
    random_final = quartiles([regret_at(r["curve"], budget) for r in runs["random"]])[1]
    bohb_needs = quartiles([budget_to_reach(r["curve"], random_final) for r in runs["bohb"]])[1]
    checks.append((f"at random search's final median regret {random_final:.3g} (after {budget / max_t:.3g} "
                   f"full-fidelity evaluations): BOHB needs {_fmt(bohb_needs, max_t)} "
                   f"({budget / bohb_needs if bohb_needs else math.inf:.1f}x less)", bohb_needs <= budget / 5))
    if "optuna_tpe_hb" in reach:
        optuna = reach["optuna_tpe_hb"][1]
        checks.append((f"BOHB reaches regret {target} no later than Optuna TPE + Hyperband: BOHB "
                       f"{_fmt(bohb, max_t)}, Optuna {_fmt(optuna, max_t)} full-fidelity evaluations",
                       math.isfinite(bohb) and bohb <= optuna))
    return checks


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 seeds, a fifth of the budget: a smoke run")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per method and problem (default 20)")
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--methods", nargs="+", default=None, help="default: all (Optuna's when installed)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    parser.add_argument("--out", default=None, help="write every run's regret curve to this JSON file")
    args = parser.parse_args(argv)
    seeds = args.seeds or (5 if args.quick else 20)
    methods = args.methods or list(EMBER_METHODS)
    if args.methods is None:
        try:
            import optuna  # noqa: F401
            methods += list(OPTUNA_METHODS)
        except ImportError:
            print("Optuna is not installed: comparing ember's methods only (pip install optuna to add it)")
    tasks = []
    for name in args.problems:
        max_t = PROBLEMS[name]().max_t
        budget = BUDGETS[name] * max_t // (5 if args.quick else 1)
        tasks += [(name, m, s, budget) for m in methods for s in range(seeds)]
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        done = pool.map(_task, tasks, chunksize=1)
    runs: dict = {}
    for name, method, seed, run in done:
        runs.setdefault(name, {}).setdefault(method, []).append(run)
    print(f"# ember.tune search quality: {len(tasks)} runs in {time.perf_counter() - started:.0f} s "
          f"on {args.jobs} worker(s)")
    all_checks = []
    for name in args.problems:
        problem = PROBLEMS[name]()
        budget = BUDGETS[name] * problem.max_t // (5 if args.quick else 1)
        reach = summarise(problem, runs[name], budget)
        if name == "counting_ones" and {"bohb", "random"} <= set(reach):
            all_checks += check_targets(problem, reach, runs[name], budget)
    if all_checks:
        print("\n## targets (Counting Ones 8+8)" + (" -- a --quick run has a fifth of the budget and 5 seeds: "
                                                    "shown, not enforced" if args.quick else ""))
        for text, passed in all_checks:
            print(f"{'PASS' if passed else 'FAIL'}  {text}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({name: {m: [{"seed": s, **r} for s, r in enumerate(rs)] for m, rs in by_method.items()}
                       for name, by_method in runs.items()}, f)
    return 0 if args.quick or all(passed for _, passed in all_checks) else 1


if __name__ == "__main__":
    sys.exit(main())
