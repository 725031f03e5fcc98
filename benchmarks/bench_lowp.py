"""float16 and bfloat16 matmul and conv2d on the CPU backend against float32, in the same run.

ember computes an op on float16/bfloat16 inputs in float32 and rounds the result once (``Backend.
run_reduced_float``), so matmul and convolution run in the float32 BLAS plus two conversions, not in NumPy's
float16 loops (over 300x slower than float32 on 256x256) or ml_dtypes' bfloat16 matmul. Target: each
reduced dtype at least 0.5x float32's speed (at most 2x its time).

Cases: the MLP's matmuls (64x784 @ 784x256, 256x256 @ 256x256), 512x512 @ 512x512, and the MNIST CNN's second
convolution (64x32x26x26 input, 64 3x3 filters), forward and forward + backward (``.grad`` cleared before
each backward, as ``zero_grad()`` does in training). For reference, NumPy's own
float16 matmul on the 256x256 case is timed once.

Method (benchmarks/README.md): one BLAS thread, the three dtypes alternate within each sample (the order rotates),
each sample is the process CPU time of enough calls to last ``--min-time`` seconds, and the figures are medians
with the interquartile range. Run from the repository root::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 python benchmarks/bench_lowp.py
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads OpenBLAS

import numpy as np  # noqa: E402

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402

DTYPES = (ember.float32, ember.bfloat16, ember.float16)


def _matmul(m, k, n, backward):
    def make(dtype):
        ember.manual_seed(0)
        a = ember.randn(m, k).to(dtype).requires_grad_(backward)
        b = ember.randn(k, n).to(dtype).requires_grad_(backward)
        if not backward:
            return lambda: a @ b
        return lambda: _step(a @ b, a, b)
    return make


def _step(out, *leaves):
    """``out.sum().backward()`` with the leaves' ``.grad`` cleared first, as ``optimizer.zero_grad()`` does."""
    for t in leaves:
        t.grad = None
    out.sum().backward()


def _conv(backward):
    def make(dtype):
        ember.manual_seed(0)
        x = ember.randn(64, 32, 26, 26).to(dtype).requires_grad_(backward)
        w = (ember.randn(64, 32, 3, 3) * 0.1).to(dtype).requires_grad_(backward)
        b = ember.zeros(64).to(dtype).requires_grad_(backward)
        if not backward:
            return lambda: F.conv2d(x, w, b)
        return lambda: _step(F.conv2d(x, w, b), x, w, b)
    return make


CASES = [
    ("matmul 64x784 @ 784x256", _matmul(64, 784, 256, False)),
    ("matmul 256x256 @ 256x256", _matmul(256, 256, 256, False)),
    ("matmul 512x512 @ 512x512", _matmul(512, 512, 512, False)),
    ("matmul 64x784 @ 784x256 fwd+bwd", _matmul(64, 784, 256, True)),
    ("conv2d 64x32x26x26, 64 3x3", _conv(False)),
    ("conv2d 64x32x26x26, 64 3x3 fwd+bwd", _conv(True)),
]


def _calls_for(fn, min_time):
    n = 1
    while True:
        t = time.process_time()
        for _ in range(n):
            fn()
        if time.process_time() - t >= min_time:
            return n
        n *= 2


def _sample(fn, n):
    t = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t) / n


def bench(make, repeat, min_time):
    """``{dtype: [seconds per call, one per sample]}``, the dtypes alternating in rotating order."""
    fns = {d: make(d) for d in DTYPES}
    for fn in fns.values():
        fn()
    calls = {d: _calls_for(fn, min_time / 4) for d, fn in fns.items()}
    times: dict = {d: [] for d in DTYPES}
    for i in range(repeat):
        order = DTYPES[i % 3:] + DTYPES[:i % 3]
        for d in order:
            times[d].append(_sample(fns[d], calls[d]))
    return times


def _fmt(ts):
    q = statistics.quantiles(ts, n=4)
    return f"{statistics.median(ts) * 1e3:8.3f} ms [{q[0] * 1e3:.3f}, {q[2] * 1e3:.3f}]"


def numpy_float16_matmul(n=256):
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float16)
    a @ a
    return statistics.median(_sample(lambda: a @ a, 3) for _ in range(3))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11, help="samples per dtype")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds each sample lasts, about")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this")
    args = parser.parse_args(argv)
    print(f"ember {ember.__version__}, NumPy {np.__version__}, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS')}; medians [interquartile range] of {args.repeat} samples")
    print(f"{'case':38} {'float32':>30} {'bfloat16':>30} {'float16':>30}  f32/bf16 f32/f16 (speed, target >= 0.5)")
    for name, make in CASES:
        if args.only not in name:
            continue
        times = bench(make, args.repeat, args.min_time)
        med = {d: statistics.median(ts) for d, ts in times.items()}
        print(f"{name:38} {_fmt(times[ember.float32]):>30} {_fmt(times[ember.bfloat16]):>30} "
              f"{_fmt(times[ember.float16]):>30}  {med[ember.float32] / med[ember.bfloat16]:8.2f} "
              f"{med[ember.float32] / med[ember.float16]:7.2f}")
    print(f"for reference, NumPy's own float16 matmul 256x256 @ 256x256: {numpy_float16_matmul() * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
