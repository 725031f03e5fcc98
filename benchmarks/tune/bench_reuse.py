"""Reused trial processes: an ember.nn MLP on scikit-learn's digits, tuned with ASHA on 2 workers.

Runs the same experiment with ``LocalExecutor(reuse_actors=False)`` (a process per trial run, as before)
and ``reuse_actors=True``, alternating, and reports for each: wall time, process starts (the trial
processes: each loads this module, whose data set is loaded at module level as a user's script does),
trial runs, the CPU time of all trial processes together (start-up included), and the first and later
epochs' wall and CPU time inside the trials (a trial run's first report also holds building its model).
``--standalone`` also times the same training in this process, without ember-tune. ``--diagnose`` times,
in fresh processes, what a trial process pays before and during its first epoch (imports, data loading, the
first epoch with the default BLAS threads or one).

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

SPLIT = 1437


def epoch_loop(config, epochs, report=None):
    """Train the MLP for ``epochs`` epochs; returns each epoch's seconds and the last validation accuracy."""
    x_train, y_train = ember.from_numpy(X_ALL[:SPLIT]), ember.from_numpy(Y_ALL[:SPLIT])
    x_val, y_val = ember.from_numpy(X_ALL[SPLIT:]), ember.from_numpy(Y_ALL[SPLIT:])
    width = config["width"]
    model = nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    opt = optim.Adam(model.parameters(), lr=config["lr"])
    batch, times, cpu, acc = config["batch"], [], [], 0.0
    for _ in range(epochs):
        t, c = time.perf_counter(), time.process_time()
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
        cpu.append(time.process_time() - c)
        if report is not None:
            report(acc, times, cpu)
    return times, acc


def trainable(config):
    """A trial: one report per epoch, with the epoch's time and this process's id."""
    def report(acc, times, cpu):
        tune.report({"acc": acc, "epoch_s": times[-1], "epoch_cpu_s": cpu[-1], "run_epoch": len(times),
                     "pid": os.getpid(), "process_cpu_s": time.process_time()})
    epoch_loop(config, 9, report)


SPACE = {"lr": tune.loguniform(1e-4, 1e-1), "width": tune.choice([64, 128, 256]), "batch": tune.choice([16, 32, 64])}


def run_experiment(reuse: bool, trials: int, workers: int, scheduler: str, storage: str) -> dict:
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
    first_report = [row["time_this_iter_s"] for row in rows if row["run_epoch"] == 1]  # what tune records
    first_cpu = [row["epoch_cpu_s"] for row in rows if row["run_epoch"] == 1]
    later_cpu = [row["epoch_cpu_s"] for row in rows if row["run_epoch"] > 1]
    process_cpu: dict = {}  # each trial process's CPU time at its last report: its start-up, imports, data, epochs
    for row in rows:
        process_cpu[row["pid"]] = max(process_cpu.get(row["pid"], 0.0), row["process_cpu_s"])
    total_cpu = sum(process_cpu.values())
    return {"reuse": reuse, "wall_s": wall, "process_starts": len(process_cpu), "trial_runs": len(first),
            "epochs": len(rows), "trial_processes_cpu_s": total_cpu,
            # CPU not spent in epochs: process start-up, imports, the data set, building models, reporting
            "cpu_outside_epochs_s": total_cpu - sum(row["epoch_cpu_s"] for row in rows),
            "first_epoch_s": statistics.median(first), "first_epoch_max_s": max(first),
            "first_report_s": statistics.median(first_report), "first_epoch_cpu_s": statistics.median(first_cpu),
            "later_epoch_cpu_s": statistics.median(later_cpu) if later_cpu else None,
            "second_epoch_s": statistics.median(second) if second else None,
            "best_acc": grid.get_best_result().metrics["acc"]}


def standalone(epochs=3) -> list:
    times, _ = epoch_loop({"lr": 1e-2, "width": 256, "batch": 16}, epochs)
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
times, _ = mod.epoch_loop({{"lr": 1e-2, "width": 256, "batch": 16}}, 2)
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
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="OPENBLAS_NUM_THREADS/OMP_NUM_THREADS for the driver and its trial processes")
    args = parser.parse_args()
    if args.blas_threads is not None and os.environ.get("OPENBLAS_NUM_THREADS") != str(args.blas_threads):
        threads = str(args.blas_threads)  # read when NumPy loads: run this script again with them set
        os.execve(sys.executable, [sys.executable, *sys.argv],
                  {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads})
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
    keys = ("wall_s", "process_starts", "trial_runs", "epochs", "trial_processes_cpu_s", "cpu_outside_epochs_s",
            "first_report_s", "first_epoch_s",
            "first_epoch_cpu_s", "second_epoch_s", "later_epoch_cpu_s")
    for reuse in (False, True) if rows else ():
        mine = [r for r in rows if r["reuse"] is reuse]
        figures = ", ".join(f"{key} {statistics.median(r[key] for r in mine):.3g} "
                            f"[{min(r[key] for r in mine):.3g}, {max(r[key] for r in mine):.3g}]"
                            for key in keys if all(r[key] is not None for r in mine))
        print(f"reuse_actors={reuse} (median [min, max] of {len(mine)}): {figures}")

if __name__ == "__main__":
    main()
