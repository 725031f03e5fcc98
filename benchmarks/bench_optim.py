"""Optimizer step time: ember's per-parameter update against ``foreach=True`` and ``fused=True`` (and PyTorch's
when importable), on the parameter shapes of the MLP and CNN workloads, SGD with momentum and Adam, float32.

Every contender owns its parameters and fixed random gradients; each round times ``calls`` steps of every
contender in turn (order rotated per round) on the process CPU clock; a contender's figure is the median of its
per-round times and the median (p25-p75) of its per-round ratio to ember's per-parameter step.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE uv run --with torch==2.13.0 python benchmarks/bench_optim.py
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

SHAPES = {
    "mlp": [(512, 784), (512,), (512, 512), (512,), (10, 512), (10,)],
    "cnn": [(32, 1, 3, 3), (32,), (64, 32, 3, 3), (64,), (128, 9216), (128,), (10, 128), (10,)],
}
OPTIMIZERS = {"sgd": ("SGD", dict(lr=0.01, momentum=0.9)), "adam": ("Adam", dict(lr=1e-3))}
MODES = {"per-param": {}, "foreach": dict(foreach=True), "fused": dict(fused=True)}


def contender(lib, shapes, optimizer, mode):
    """``step()`` of a ``lib`` optimizer over fresh float32 parameters of ``shapes`` with fixed gradients."""
    name, options = OPTIMIZERS[optimizer]
    params = [lib.nn.Parameter(lib.randn(*s)) for s in shapes]
    for p in params:
        p.grad = lib.randn(*p.shape) * 0.01
    opt = getattr(lib.optim, name)(params, **options, **MODES[mode])
    opt.step()  # state made, kernels compiled
    return opt.step


def measure(steps: dict, rounds: int, calls: int) -> dict:
    """``{name: (median ms, ratio median, p25, p75)}``, ratios to ``steps``' first entry, contenders alternated."""
    names = list(steps)
    times = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            fn = steps[n]
            start = time.process_time()
            for _ in range(calls):
                fn()
            times[n].append((time.process_time() - start) / calls)
    out = {}
    for n in names:
        ratios = [a / b for a, b in zip(times[n], times[names[0]])]
        q = statistics.quantiles(ratios, n=4)
        out[n] = (statistics.median(times[n]) * 1e3, statistics.median(ratios), q[0], q[2])
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import ember
    libs = {"ember": ember}
    try:
        import torch
        torch.set_num_threads(args.threads)
        libs["torch"] = torch
    except ImportError:
        pass
    print(f"threads {args.threads}, process CPU clock, {args.rounds} rounds of {args.calls} steps; "
          "ratio = time / ember per-param (median, p25-p75)")
    for workload, shapes in SHAPES.items():
        for optimizer in OPTIMIZERS:
            steps = {f"{lib_name} {mode}": contender(lib, shapes, optimizer, mode)
                     for lib_name, lib in libs.items() for mode in MODES}
            for name, (ms, ratio, p25, p75) in measure(steps, args.rounds, args.calls).items():
                print(f"{workload:4} {optimizer:5} {name:16} {ms:8.3f} ms  {ratio:5.2f}x ({p25:.2f}-{p75:.2f})")


if __name__ == "__main__":
    main()
