"""What this machine gives a framework on NumPy: BLAS speed on the workloads' GEMMs, memory bandwidth, CPU steadiness.

The targets of ``run.py`` compare ember with PyTorch. Three facts of the machine bound what ember can reach
there, and this script measures them, so that a missed target can be traced to its cause:

1. NumPy's float32 matmul (its bundled OpenBLAS) against PyTorch's (MKL / oneDNN) on the GEMMs the mlp and cnn
   workloads run, in the orientation they run them (``x @ w.T`` is NT), alternating the two libraries.
2. Memory bandwidth: a 46 MB copy (the size of conv2's im2col columns for a batch of 64).
3. How steady the CPU is: the spread of a fixed pure-Python loop's time over a few seconds (a VM whose speed
   changes makes medians of short timings wander, for every library alike).

Run from the repository root, with the OpenBLAS variables unset for this command only::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/machine.py [--seconds S]
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import time

import numpy as np

#: (what, m, k, n, orientation): C[m, n] = A[m, k] @ B[k, n]; "NT" means B is the transpose of a [n, k] array
GEMMS = [
    ("mlp layer 1 forward, x @ w1.T", 128, 784, 512, "NT"),
    ("mlp layer 2 forward, h @ w2.T", 128, 512, 512, "NT"),
    ("mlp layer 1 weight grad, g.T @ x", 512, 128, 784, "TN"),
    ("mlp layer 2 input grad, g @ w2", 128, 512, 512, "NN"),
    ("cnn conv2 im2col GEMM, w @ cols", 64, 288, 36864, "NN"),
    ("square 1024", 1024, 1024, 1024, "NN"),
]


#: seconds to wait before timing a library: the other library's BLAS threads spin for up to ~0.1 s after their
#: last call (OpenBLAS's default), taking a core from the one being timed
SETTLE = 0.2


def _operands(xp_randn, m, k, n, orientation):
    a = xp_randn(k, m).T if orientation == "TN" else xp_randn(m, k)
    b = xp_randn(n, k).T if orientation == "NT" else xp_randn(k, n)
    return a, b


def _best_of(fn, calls: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def gemm_table(torch, rounds: int) -> list[tuple]:
    """Per GEMM: (what, shape, NumPy GFLOP/s, PyTorch GFLOP/s or None), best of alternating rounds."""
    rng = np.random.default_rng(0)
    rows = []
    for what, m, k, n, orient in GEMMS:
        a, b = _operands(lambda *s: rng.standard_normal(s, dtype=np.float32), m, k, n, orient)
        fns = {"numpy": lambda a=a, b=b: np.matmul(a, b)}
        if torch is not None:
            ta, tb = _operands(lambda *s: torch.randn(*s), m, k, n, orient)
            fns["torch"] = lambda a=ta, b=tb: torch.matmul(a, b)
        calls = max(3, int(2e9 // (2 * m * k * n)))  # about 0.02 s of work at 100 GFLOP/s
        best = dict.fromkeys(fns, float("inf"))
        for _ in range(rounds):  # alternate, so that both see the same machine
            for name, fn in fns.items():
                time.sleep(SETTLE)
                fn()  # the first call after the other library's runs more slowly
                best[name] = min(best[name], _best_of(fn, calls, 1))
        flops = 2 * m * k * n
        rows.append((what, f"{m}x{k} @ {k}x{n} ({orient})", flops / best["numpy"] / 1e9,
                     flops / best["torch"] / 1e9 if "torch" in best else None))
    return rows


def copy_bandwidth(rounds: int) -> float:
    """GB/s of ``np.copyto`` on 46 MB float32 arrays (read + write counted once), best of ``rounds``."""
    src = np.ones(46_000_000 // 4, dtype=np.float32)
    dst = np.empty_like(src)
    return src.nbytes / _best_of(lambda: np.copyto(dst, src), 1, rounds) / 1e9


def loop_spread(seconds: float) -> tuple[float, float, float, int]:
    """Percentiles 1, 50 and 99 (µs) of a fixed pure-Python loop's time, over ``seconds``; and the samples."""
    def work():
        total = 0
        for i in range(200):
            total += i * i
        return total

    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        for _ in range(100):
            work()
        times.append((time.perf_counter() - start) / 100 * 1e6)
    q = statistics.quantiles(times, n=100)
    return q[0], statistics.median(times), q[-1], len(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="how long to sample the CPU's steadiness")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds per GEMM (best kept)")
    args = parser.parse_args(argv)
    torch = None
    if importlib.util.find_spec("torch") is not None:
        import torch
    print(f"{'GEMM (float32)':36s} {'shape':32s} {'NumPy':>12s} {'PyTorch':>12s} {'NumPy/PyTorch':>14s}")
    for what, shape, ours, theirs in gemm_table(torch, args.rounds):
        other = f"{theirs:8.1f} GF/s" if theirs else f"{'-':>12s}"
        ratio = f"{ours / theirs:13.2f}x" if theirs else f"{'-':>14s}"
        print(f"{what:36s} {shape:32s} {ours:7.1f} GF/s {other} {ratio}")
    print(f"\nmemory copy (46 MB, np.copyto): {copy_bandwidth(args.rounds):.1f} GB/s")
    low, mid, high, count = loop_spread(args.seconds)
    print(f"pure-Python loop over {args.seconds:g} s ({count} samples): 1st percentile {low:.1f} µs, median "
          f"{mid:.1f} µs, 99th {high:.1f} µs: the median runs {mid / low:.2f}x the fastest")


if __name__ == "__main__":
    main()
