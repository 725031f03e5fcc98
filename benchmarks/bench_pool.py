"""Max pooling with ember-numba's compiled stages (``max_pool_stage``, ``max_pool_scatter``) against ember's NumPy
stages, and PyTorch's ``max_pool2d`` when importable, at one thread on the process CPU clock.

Cases: the MNIST CNN's 2x2 pool (64x64x24x24, forward + backward, as in training) and resnet18's stem pool
(3x3, stride 2, padding 1, 8x64x112x112; training and inference). Each round times ``calls`` calls of every
contender in turn (order rotated per round); a contender's figure is the median of its per-round times and the
median (p25-p75) of its per-round ratio to ember's NumPy stages.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE uv run --with torch==2.13.0 python benchmarks/bench_pool.py
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

CASES = {
    "cnn 2x2 train": ((64, 64, 24, 24), dict(kernel_size=2), True),
    "resnet 3x3/2 train": ((8, 64, 112, 112), dict(kernel_size=3, stride=2, padding=1), True),
    "resnet 3x3/2 inference": ((8, 64, 112, 112), dict(kernel_size=3, stride=2, padding=1), False),
}


def ember_call(shape, options, train, compiled):
    """One pool (and its backward when ``train``) in ember, with or without the plugin's stages."""
    import ember
    import ember.nn.functional as F
    from ember import _plugins

    kernels = {k: v for k, v in _plugins.cpu_kernels().items() if compiled or not k.startswith("max_pool")}
    x = ember.randn(*shape, requires_grad=train)

    def call():
        saved, _plugins.cpu_kernels = _plugins.cpu_kernels, lambda: kernels
        try:
            if train:
                out = F.max_pool2d(x, **options)
                out.backward(ember.ones_like(out))
                x.grad = None
            else:
                with ember.no_grad():
                    F.max_pool2d(x, **options)
        finally:
            _plugins.cpu_kernels = saved
    return call


def torch_call(shape, options, train):
    import torch
    import torch.nn.functional as F

    x = torch.randn(*shape, requires_grad=train)

    def call():
        if train:
            out = F.max_pool2d(x, **options)
            out.backward(torch.ones_like(out))
            x.grad = None
        else:
            with torch.no_grad():
                F.max_pool2d(x, **options)
    return call


def measure(calls_by_name: dict, rounds: int, calls: int) -> dict:
    """``{name: (median ms, ratio median, p25, p75)}``, ratios to the first entry, contenders alternated."""
    names = list(calls_by_name)
    times = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            f = calls_by_name[n]
            start = time.process_time()
            for _ in range(calls):
                f()
            times[n].append((time.process_time() - start) / calls * 1e3)
    base = times[names[0]]
    result = {}
    for n in names:
        ratios = sorted(t / b for t, b in zip(times[n], base))
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        result[n] = (statistics.median(times[n]), statistics.median(ratios), q[0], q[2])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import ember
    ember.set_num_threads(1)
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    print(f"max_pool2d, float32, 1 thread, process CPU clock, {args.rounds} rounds x {args.calls} calls; ratio to "
          "ember's NumPy stages (p25-p75)")
    for case, (shape, options, train) in CASES.items():
        contenders = {"ember NumPy stages": ember_call(shape, options, train, False),
                      "ember-numba stages": ember_call(shape, options, train, True)}
        if torch is not None:
            contenders["PyTorch"] = torch_call(shape, options, train)
        for f in contenders.values():
            f()  # warm: compiled, allocated
        for name, (ms, ratio, p25, p75) in measure(contenders, args.rounds, args.calls).items():
            print(f"  {case:24s} {name:20s} {ms:8.2f} ms  {ratio:5.2f}x ({p25:.2f}-{p75:.2f})")


if __name__ == "__main__":
    main()
