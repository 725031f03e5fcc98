"""Two ember checkouts side by side: per-op overhead and ``import ember.tune`` time, alternating, one core.

Give each checkout's Python (its ``.venv/bin/python``); run with the OpenBLAS variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/ab_checkouts.py OLD_PYTHON NEW_PYTHON

Each round runs one fresh process per checkout, in alternating order, pinned to one CPU with one BLAS thread;
a process times ``a + b`` and ``(a * a).sum().backward()`` on 4x4 float32 leaves that require grad with the
process CPU clock (``samples`` timings of ``number`` calls each) and ``import ember.tune`` once (wall clock, in a
process of its own). Printed: medians with the interquartile range, and new/old ratios of the medians.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess

_CHILD = r"""
import json, sys, time
if sys.argv[1] == "import":
    t0 = time.perf_counter()
    import ember.tune
    print(json.dumps({"import ember.tune": [time.perf_counter() - t0]}))
    raise SystemExit
import ember
a = ember.randn(4, 4, requires_grad=True)
b = ember.randn(4, 4, requires_grad=True)
cases = {"a + b": lambda: a + b, "(a * a).sum().backward()": lambda: (a * a).sum().backward()}
out = {}
samples, number = int(sys.argv[2]), int(sys.argv[3])
for name, fn in cases.items():
    for _ in range(number):
        fn()
    times = []
    for _ in range(samples):
        t = time.process_time()
        for _ in range(number):
            fn()
        times.append((time.process_time() - t) / number)
    out[name] = times
print(json.dumps(out))
"""


def run(python: str, what: str, samples: int, number: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    cmd = ["taskset", "-c", "0", python, "-c", _CHILD, what, str(samples), str(number)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd="/")
    if proc.returncode:
        raise RuntimeError(proc.stderr)
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--number", type=int, default=200)
    args = parser.parse_args()
    results: dict = {"old": {}, "new": {}}
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for what in ("ops", "import"):
            for side in order:
                for name, times in run(getattr(args, side), what, args.samples, args.number).items():
                    results[side].setdefault(name, []).extend(times)
    for name in results["old"]:
        old, new = results["old"][name], results["new"][name]
        scale, unit = (1e6, "µs") if statistics.median(old) < 1e-3 else (1e3, "ms")

        def fmt(v):
            q = statistics.quantiles(v, n=4)
            return f"{statistics.median(v) * scale:8.2f} {unit} [{q[0] * scale:.2f}, {q[2] * scale:.2f}]"
        ratio = statistics.median(new) / statistics.median(old)
        print(f"{name:28s} old {fmt(old)}   new {fmt(new)}   new/old {ratio:.3f}")


if __name__ == "__main__":
    main()
