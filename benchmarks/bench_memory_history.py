"""The cost of memory history recording on the MLP workload's training step (``workloads/mlp.py``).

Run from the repository root with the OpenBLAS variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/bench_memory_history.py \\
        [--baseline OTHER_CHECKOUT/.venv/bin/python]

Contenders, pinned to one CPU with one BLAS thread and timed with the process CPU clock: this checkout with
``ember.memory.record_memory_history()`` off and on, whose samples alternate within one fresh process per round
(``--samples`` samples of ``--number`` steps each, after warming up), and, with ``--baseline``, another checkout's
ember (e.g. the code before history existed) in a process of its own, the two processes of a round in alternating
order. Printed: the median step time with its interquartile range per contender, and the ratios of the medians
(targets: history on <= 1.10x off; off against the baseline 1.00x within the noise), with each ratio's spread over
the rounds' paired ratios.
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
modes, samples, number = sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4])
step = mlp.setup(ember)
for _ in range(3):
    step()
out = {mode: [] for mode in modes}
for i in range(samples * len(modes)):
    mode = modes[i % len(modes)] if (i // len(modes)) % 2 == 0 else modes[-1 - i % len(modes)]
    if mode == "on":
        ember.memory.record_memory_history()
    step()  # one untimed step in the new state
    t = time.process_time()
    for _ in range(number):
        step()
    out[mode].append((time.process_time() - t) / number)
    if mode == "on":
        out["events"] = len(ember.memory.memory_snapshot()["events"])
        ember.memory.record_memory_history(None)
print(json.dumps(out))
"""


def run(python: str, modes: str, samples: int, number: int) -> dict:
    """Times of the MLP step in a fresh process of ``python``, pinned to one CPU: ``{mode: [seconds per step]}``
    for each of ``modes`` ("off", "on": history recording), whose samples alternate within the process."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cmd = ["taskset", "-c", "0", python, "-c", _CHILD, _ROOT, modes, str(samples), str(number)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=_ROOT)
    if proc.returncode:
        raise RuntimeError(f"{python} ({modes}) failed:\n{proc.stderr}")
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
    contenders = ["history off", "history on"] + (["baseline"] if args.baseline else [])
    times: dict = {name: [] for name in contenders}
    medians: dict = {name: [] for name in contenders}
    events = 0
    for r in range(args.rounds):
        runs = [(sys.executable, "off,on", {"off": "history off", "on": "history on"})]
        if args.baseline:
            runs.append((args.baseline, "off", {"off": "baseline"}))
        for python, modes, names in (runs if r % 2 == 0 else runs[::-1]):
            result = run(python, modes, args.samples, args.number)
            events = result.pop("events", events)
            for mode, name in names.items():
                times[name].extend(result[mode])
                medians[name].append(statistics.median(result[mode]))
    print(f"MLP 784-512-512-10 training step, batch 128, 1 thread, process CPU clock; {args.rounds} rounds x "
          f"{args.samples} samples x {args.number} steps; median [interquartile range]")
    for name in contenders:
        print(f"  {name:12s} {_fmt(times[name])}")
    print(f"  (history on recorded {events} events in a sample)")
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
