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

from bench_optim import measure  # the same alternated rounds on the process CPU clock

CASES = {
    "cnn 2x2 train": ((64, 64, 24, 24), dict(kernel_size=2), True),
    "resnet 3x3/2 train": ((8, 64, 112, 112), dict(kernel_size=3, stride=2, padding=1), True),
    "resnet 3x3/2 inference": ((8, 64, 112, 112), dict(kernel_size=3, stride=2, padding=1), False),
}


def pool_call(lib, x, options, train):
    """One ``max_pool2d`` of ``x`` in ``lib`` (ember or torch), and its backward when ``train``."""
    F = lib.nn.functional

    def call():
        if train:
            out = F.max_pool2d(x, **options)
            out.backward(lib.ones_like(out))
            x.grad = None
        else:
            with lib.no_grad():
                F.max_pool2d(x, **options)
    return call


def ember_call(shape, options, train, compiled):
    """ember's pool, with or without the plugin's stages."""
    import ember
    from ember import _plugins

    kernels = {k: v for k, v in _plugins.cpu_kernels().items() if compiled or not k.startswith("max_pool")}
    pool = pool_call(ember, ember.randn(*shape, requires_grad=train), options, train)

    def call():
        saved, _plugins.cpu_kernels = _plugins.cpu_kernels, lambda: kernels
        try:
            pool()
        finally:
            _plugins.cpu_kernels = saved
    return call


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
            contenders["PyTorch"] = pool_call(torch, torch.randn(*shape, requires_grad=train), options, train)
        for f in contenders.values():
            f()  # warm: compiled, allocated
        for name, (ms, ratio, p25, p75) in measure(contenders, args.rounds, args.calls).items():
            print(f"  {case:24s} {name:20s} {ms:8.2f} ms  {ratio:5.2f}x ({p25:.2f}-{p75:.2f})")


if __name__ == "__main__":
    main()
