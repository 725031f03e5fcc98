"""The cost of memory history recording on the MLP workload's training step (``workloads/mlp.py``).

Run from the repository root with the OpenBLAS variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/bench_memory_history.py \\
        [--baseline OTHER_CHECKOUT/.venv/bin/python]

Contenders, each in a fresh process per round, in alternating order, pinned to one CPU with one BLAS thread and
timed with the process CPU clock: this checkout with ``ember.memory.record_memory_history()`` off and on, and,
with ``--baseline``, another checkout's ember (e.g. the code before history existed) with nothing on. Each
process times ``--samples`` samples of ``--number`` steps after warming up. Printed: the median step time with
its interquartile range per contender, and the ratios of the medians (targets: history on <= 1.10x off; off
against the baseline 1.00x within the noise), with each ratio's spread over the rounds' paired ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import ember
from benchmarks.workloads import mlp
mode, samples, number = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
step = mlp.setup(ember)
if mode == "on":
    ember.memory.record_memory_history()
for _ in range(3):
    step()
times = []
for _ in range(samples):
    t = time.process_time()
    for _ in range(number):
        step()
    times.append((time.process_time() - t) / number)
out = {"times": times}
if mode == "on":
    out["events"] = len(ember.memory.memory_snapshot()["events"])
print(json.dumps(out))
"""


def run(python: str, mode: str, samples: int, number: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cmd = ["taskset", "-c", "0", python, "-c", _CHILD, _ROOT, mode, str(samples), str(number)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=_ROOT)
    if proc.returncode:
        raise RuntimeError(f"{python} ({mode}) failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def _fmt(values) -> str:
    q = statistics.quantiles(values, n=4)
    return f"{statistics.median(values) * 1e3:7.3f} ms [{q[0] * 1e3:.3f}, {q[2] * 1e3:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="another checkout's Python, timed with nothing on")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--number", type=int, default=5)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    contenders = {"history off": (sys.executable, "off"), "history on": (sys.executable, "on")}
    if args.baseline:
        contenders["baseline"] = (args.baseline, "off")
    times: dict = {name: [] for name in contenders}
    medians: dict = {name: [] for name in contenders}
    events = 0
    for r in range(args.rounds):
        order = list(contenders) if r % 2 == 0 else list(reversed(contenders))
        for name in order:
            result = run(*contenders[name], args.samples, args.number)
            times[name].extend(result["times"])
            medians[name].append(statistics.median(result["times"]))
            events = result.get("events", events)
    print(f"MLP 784-512-512-10 training step, batch 128, 1 thread, process CPU clock; {args.rounds} rounds x "
          f"{args.samples} samples x {args.number} steps; median [interquartile range]")
    for name in contenders:
        print(f"  {name:12s} {_fmt(times[name])}")
    print(f"  (history on kept {events} events at the end of a process)")
    figures = {name: statistics.median(v) for name, v in times.items()}
    pairs = [("history on", "history off", 1.10)] + ([("history off", "baseline", 1.0)] if args.baseline else [])
    for new, old, target in pairs:
        paired = [a / b for a, b in zip(medians[new], medians[old])]
        q = statistics.quantiles(paired, n=4) if len(paired) > 1 else [paired[0]] * 3
        ratio = figures[new] / figures[old]
        print(f"  {new} / {old}: {ratio:.3f}x (per-round paired ratios: median {statistics.median(paired):.3f}, "
              f"IQR [{q[0]:.3f}, {q[2]:.3f}]); target <= {target:.2f}x")
        figures[f"{new} / {old}"] = ratio
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seconds": figures, "samples": times}, f, indent=1)


if __name__ == "__main__":
    main()
