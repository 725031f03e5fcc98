"""ember's threaded CPU kernels (ReLU, max and average pool, forward and backward) on the CNN workload's shapes:
wall clock at 2 threads against 1 thread, and against PyTorch at 2 threads when it is installed.

Paired rounds, contenders alternated within each round; medians and p25-p75 of the per-round ratios. The machine
is shared: quote ``os.getloadavg()`` (printed) with the figures.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE uv run --with torch==2.13.0 python benchmarks/bench_threads.py
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import ember
import ember.nn.functional as F

CASES = {  # name: (input shape, function of one tensor, whose forward and backward is timed)
    "relu conv1 64x32x26x26": ((64, 32, 26, 26), "relu"),
    "relu conv2 64x64x24x24": ((64, 64, 24, 24), "relu"),
    "max_pool2d(2) 64x64x24x24": ((64, 64, 24, 24), "pool"),
    "avg_pool2d(2) 64x64x24x24": ((64, 64, 24, 24), "avg"),
}
POOLS = {"pool": "max_pool2d", "avg": "avg_pool2d"}


def _step(lib, kind, x, g):
    fn = lib.relu if kind == "relu" else (lambda t: getattr(lib.nn.functional, POOLS[kind])(t, 2))
    x.grad = None
    fn(x).backward(g)


def _ember_case(shape, kind):
    x = ember.randn(*shape, requires_grad=True)
    g = ember.randn(*(F.max_pool2d(x.detach(), 2).shape if kind in POOLS else shape))
    return lambda: _step(ember, kind, x, g)


def _torch_case(torch, shape, kind):
    x = torch.randn(*shape, requires_grad=True)
    g = torch.randn(*(torch.nn.functional.max_pool2d(x.detach(), 2).shape if kind in POOLS else shape))
    return lambda: _step(torch, kind, x, g)


def _time(fn, reps):
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) / reps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    try:
        import torch
        torch.set_num_threads(2)
    except ImportError:
        torch = None
    print(f"load average before: {os.getloadavg()}")
    for name, (shape, kind) in CASES.items():
        run = _ember_case(shape, kind)
        contenders = {"ember 1 thread": (1, run), "ember 2 threads": (2, run)}
        if torch is not None:
            contenders["torch 2 threads"] = (None, _torch_case(torch, shape, kind))
        times = {key: [] for key in contenders}
        for _ in range(args.rounds):
            for key, (threads, fn) in contenders.items():
                if threads:
                    ember.set_num_threads(threads)
                fn()  # warm
                times[key].append(_time(fn, args.reps))
        base = np.array(times["ember 2 threads"])
        print(f"{name}: ember 2 threads {np.median(base) * 1e3:.2f} ms")
        for key in contenders:
            if key != "ember 2 threads":
                r = base / np.array(times[key])
                q25, q50, q75 = np.percentile(r, [25, 50, 75])
                print(f"  ember 2 threads / {key}: {q50:.2f} (p25-p75 {q25:.2f}-{q75:.2f})")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
