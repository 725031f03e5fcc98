"""The random functions on 1M elements: two ember checkouts (and PyTorch, if given) side by side, one core.

Give each checkout's Python (its ``.venv/bin/python``), optionally a Python with PyTorch; run with the OpenBLAS
variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_random.py OLD_PYTHON NEW_PYTHON \\
        [--torch TORCH_PYTHON]

Each round runs one fresh process per contender, in alternating order, pinned to one CPU with one thread; a
process times every case with the process CPU clock (``samples`` timings of one call each, after one warm-up
call). Printed: medians with the interquartile range, and new/old (and new/torch) ratios of the medians.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess

_CHILD = r"""
import json, sys, time
lib = __import__(sys.argv[1])
if sys.argv[1] == "torch":
    lib.set_num_threads(1)
    import torch.nn.functional as F
else:
    import ember.nn.functional as F
N = 1 << 20
lib.manual_seed(0)
probs = lib.rand(N)
weights = lib.rand(1000) + 0.01
buf32 = lib.empty(N)
ones = lib.ones(N)
cases = {
    "rand": lambda: lib.rand(N),
    "rand float64": lambda: lib.rand(N, dtype=lib.float64),
    "randn": lambda: lib.randn(N),
    "randn float64": lambda: lib.randn(N, dtype=lib.float64),
    "randint(0, 1000)": lambda: lib.randint(0, 1000, (N,)),
    "randperm": lambda: lib.randperm(N),
    "normal_(0.5, 2)": lambda: buf32.normal_(0.5, 2.0),
    "uniform_(-2, 3)": lambda: buf32.uniform_(-2.0, 3.0),
    "bernoulli(probs)": lambda: lib.bernoulli(probs),
    "bernoulli_(0.3)": lambda: buf32.bernoulli_(0.3),
    "multinomial(1000 cats, 1M, repl.)": lambda: lib.multinomial(weights, N, replacement=True),
    "dropout(p=0.3)": lambda: F.dropout(ones, 0.3),
}
samples = int(sys.argv[2])
out = {}
for name, fn in cases.items():
    fn()
    times = []
    for _ in range(samples):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    out[name] = times
print(json.dumps(out))
"""


def run(python: str, lib: str, samples: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cmd = ["taskset", "-c", "0", python, "-c", _CHILD, lib, str(samples)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200, cwd="/")
    if proc.returncode:
        raise RuntimeError(proc.stderr)
    return json.loads(proc.stdout)


def _fmt(v):
    q = statistics.quantiles(v, n=4)
    return f"{statistics.median(v) * 1e3:8.2f} ms [{q[0] * 1e3:.2f}, {q[2] * 1e3:.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="the Python of the checkout to compare against (e.g. /work/main/.venv/bin/python)")
    parser.add_argument("new", help="the Python of the checkout under test")
    parser.add_argument("--torch", help="a Python with PyTorch installed, timed as a third contender")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    contenders = {"old": (args.old, "ember"), "new": (args.new, "ember")}
    if args.torch:
        contenders["torch"] = (args.torch, "torch")
    results: dict = {side: {} for side in contenders}
    for r in range(args.rounds):
        order = list(contenders) if r % 2 == 0 else list(reversed(contenders))
        for side in order:
            for name, times in run(*contenders[side], args.samples).items():
                results[side].setdefault(name, []).extend(times)
    for name in results["new"]:
        old, new = results["old"][name], results["new"][name]
        ratio = statistics.median(new) / statistics.median(old)
        line = f"{name:36s} old {_fmt(old)}  new {_fmt(new)}  new/old {ratio:6.2f}"
        if "torch" in results:
            ref = results["torch"][name]
            line += f"  torch {_fmt(ref)}  new/torch {statistics.median(new) / statistics.median(ref):6.2f}"
        print(line)


if __name__ == "__main__":
    main()
