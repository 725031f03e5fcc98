"""Reused trial processes: an ember.nn MLP on scikit-learn's digits, tuned with ASHA on 2 workers.

Runs the same experiment with ``LocalExecutor(reuse_actors=False)`` (a process per trial run, as before)
and ``reuse_actors=True``, alternating, and reports for each: wall time, process starts (processes that
imported this module: the data set is loaded at module level, as a user's script does), trial runs, and
the first and second epoch's time inside the trials. ``--standalone`` also times the same training in this
process, without ember-tune. ``--diagnose`` times, in fresh processes, what a trial process pays before and
during its first epoch (imports, data loading, the first epoch with 1 or 2 BLAS threads).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE uv run python benchmarks/tune/bench_reuse.py --rounds 2
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

_T_IMPORT = time.perf_counter()
import numpy as np  # noqa: E402

import ember  # noqa: E402
from ember import nn, optim, tune  # noqa: E402
from ember.tune.executors.local import LocalExecutor  # noqa: E402

try:  # the data set of the issue; a synthetic one of the same shape where scikit-learn is missing
    from sklearn.datasets import load_digits
    _DIGITS = load_digits()
    X_ALL, Y_ALL = _DIGITS.data.astype(np.float32) / 16.0, _DIGITS.target.astype(np.int64)
except ImportError:
    _rng = np.random.default_rng(0)
    Y_ALL = _rng.integers(0, 10, 1797)
    X_ALL = (_rng.standard_normal((10, 64)) [Y_ALL] + _rng.standard_normal((1797, 64))).astype(np.float32)
MODULE_LOAD_S = time.perf_counter() - _T_IMPORT  # this module's imports and data set, once per process

_marks = os.environ.get("BENCH_REUSE_MARKS")  # a folder: each process that loads this module leaves a file
if _marks and __name__ != "__main__":
    open(os.path.join(_marks, f"{os.getpid()}"), "w").close()

SPLIT = 1437


def epoch_loop(config, epochs, report=None):
    """Train the MLP for ``epochs`` epochs; returns each epoch's seconds and the last validation accuracy."""
    x_train, y_train = ember.from_numpy(X_ALL[:SPLIT]), ember.from_numpy(Y_ALL[:SPLIT])
    x_val, y_val = ember.from_numpy(X_ALL[SPLIT:]), ember.from_numpy(Y_ALL[SPLIT:])
    width = config["width"]
    model = nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    opt = optim.Adam(model.parameters(), lr=config["lr"])
    batch, times, acc = config["batch"], [], 0.0
    for _ in range(epochs):
        t = time.perf_counter()
        order = np.random.default_rng(len(times)).permutation(SPLIT)
        for i in range(0, SPLIT, batch):
            idx = ember.from_numpy(order[i:i + batch])
            loss = nn.functional.cross_entropy(model(x_train[idx]), y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with ember.no_grad():
            acc = (model(x_val).argmax(1) == y_val).float().mean().item()
        times.append(time.perf_counter() - t)
        if report is not None:
            report(acc, times)
    return times, acc


def trainable(config):
    """A trial: one report per epoch, with the epoch's time and this process's id."""
    def report(acc, times):
        tune.report({"acc": acc, "epoch_s": times[-1], "run_epoch": len(times), "pid": os.getpid()})
    epoch_loop(config, 9, report)


SPACE = {"lr": tune.loguniform(1e-4, 1e-1), "width": tune.choice([32, 64, 128]), "batch": tune.choice([32, 64, 128])}


def run_experiment(reuse: bool, trials: int, workers: int, scheduler: str, storage: str) -> dict:
    marks = tempfile.mkdtemp(prefix="marks_", dir=storage)
    os.environ["BENCH_REUSE_MARKS"] = marks
    sched = (tune.ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3) if scheduler == "asha"
             else tune.HyperBandScheduler(max_t=9, reduction_factor=3))
    tuner = tune.Tuner(trainable, param_space=SPACE,
                       tune_config=tune.TuneConfig(metric="acc", mode="max", num_samples=trials, seed=0,
                                                   scheduler=sched, max_concurrent_trials=workers,
                                                   executor=LocalExecutor(max_concurrent=workers,
                                                                          reuse_actors=reuse)),
                       run_config=tune.RunConfig(name=f"reuse_{reuse}_{time.time_ns()}", storage_path=storage,
                                                 verbose=0))
    t = time.perf_counter()
    grid = tuner.fit()
    wall = time.perf_counter() - t
    rows = [row for result in grid for row in result.metrics_history]
    first = [row["epoch_s"] for row in rows if row["run_epoch"] == 1]  # the first epoch after a (re)start
    second = [row["epoch_s"] for row in rows if row["run_epoch"] == 2]
    return {"reuse": reuse, "wall_s": wall, "process_starts": len(os.listdir(marks)), "trial_runs": len(first),
            "first_epoch_s": statistics.median(first), "first_epoch_max_s": max(first),
            "second_epoch_s": statistics.median(second) if second else None,
            "best_acc": grid.get_best_result().metrics["acc"]}


def standalone(epochs=3) -> list:
    times, _ = epoch_loop({"lr": 1e-2, "width": 64, "batch": 64}, epochs)
    return times


_PROBE = """
import time, os
t0 = time.perf_counter()
import ember
from ember import nn, optim
t1 = time.perf_counter()
import importlib.util, sys
spec = importlib.util.spec_from_file_location("bench_reuse", {path!r})
mod = importlib.util.module_from_spec(spec); sys.modules["bench_reuse"] = mod; spec.loader.exec_module(mod)
t2 = time.perf_counter()
times, _ = mod.epoch_loop({{"lr": 1e-2, "width": 64, "batch": 64}}, 2)
print(t1 - t0, t2 - t1, times[0], times[1])
"""


def diagnose(repeats=3) -> None:
    """Fresh-process costs: ember + nn import, this module (sklearn + digits), first and second epoch."""
    probe = _PROBE.format(path=os.path.abspath(__file__))
    for label, extra in (("default threads", {}), ("1 BLAS thread", {"OPENBLAS_NUM_THREADS": "1",
                                                                      "OMP_NUM_THREADS": "1"})):
        rows = []
        for _ in range(repeats):
            out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, **extra}, capture_output=True,
                                 text=True, timeout=300, check=True).stdout.split()
            rows.append([float(v) for v in out])
        med = [statistics.median(c) for c in zip(*rows)]
        print(f"fresh process, {label}: import ember+nn+optim {med[0]:.2f} s, module (sklearn, digits) "
              f"{med[1]:.2f} s, first epoch {med[2]:.3f} s, second epoch {med[3]:.3f} s (median of {repeats})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--scheduler", choices=["asha", "hyperband"], default="asha")
    parser.add_argument("--standalone", action="store_true")
    parser.add_argument("--diagnose", action="store_true")
    args = parser.parse_args()
    if args.diagnose:
        diagnose()
    if args.standalone:
        print("standalone (this process) epochs:", ", ".join(f"{t:.3f} s" for t in standalone()))
    rows = []
    with tempfile.TemporaryDirectory() as storage:
        for r in range(args.rounds):
            for reuse in ((False, True) if r % 2 == 0 else (True, False)):
                row = run_experiment(reuse, args.trials, args.workers, args.scheduler, storage)
                rows.append(row)
                print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}),
                      flush=True)
    for reuse in (False, True):
        mine = [r for r in rows if r["reuse"] is reuse]
        print(f"reuse_actors={reuse}: wall {statistics.median(r['wall_s'] for r in mine):.1f} s "
              f"[{min(r['wall_s'] for r in mine):.1f}, {max(r['wall_s'] for r in mine):.1f}], process starts "
              f"{[r['process_starts'] for r in mine]}, trial runs {[r['trial_runs'] for r in mine]}, first epoch "
              f"median {statistics.median(r['first_epoch_s'] for r in mine):.3f} s, second epoch median "
              f"{statistics.median(r['second_epoch_s'] for r in mine if r['second_epoch_s']):.3f} s")


if __name__ == "__main__":
    main()
