"""Convolution kernels at one thread: ember's built-in NumPy kernels, ember-onednn's oneDNN kernels, PyTorch.

For the MNIST CNN's two convolutions and three of ResNet-18's (batch 8, 64x64 images), each pass a training step
runs: forward (``convolution``), input gradient (``convolution_backward``) and weight gradient
(``convolutionweightgrad``). ember's two kernels are called as ``Op.apply`` calls them (on the NumPy arrays);
PyTorch's are ``conv2d`` and ``aten.convolution_backward``, what its autograd runs.

Method (benchmarks/README.md): one thread for every library (the script re-executes itself with the thread
variables set), the contenders alternate within each round (the order reverses every round), each sample is the
process CPU time of enough calls to last ``--min-time`` seconds, and a ratio is the median over rounds of the
per-round ratios, with its quartiles. Run from the repository root::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE uv run --with torch==2.13.0 python benchmarks/bench_conv.py
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
if any(os.environ.get(v) != "1" for v in THREAD_VARS):  # before NumPy loads OpenBLAS
    os.environ.update(dict.fromkeys(THREAD_VARS, "1"))
    os.execv(sys.executable, [sys.executable, *sys.argv])

import numpy as np  # noqa: E402

import ember  # noqa: E402
from ember.backends.cpu_kernels import convolution as built_in  # noqa: E402
from ember.ops.convolution import ConvGeometry  # noqa: E402

#: name, input shape, output channels, kernel, stride, padding
CASES = [("cnn conv1", (64, 1, 28, 28), 32, 3, 1, 0), ("cnn conv2", (64, 32, 26, 26), 64, 3, 1, 0),
         ("r18 conv1 7x7/2", (8, 3, 64, 64), 64, 7, 2, 3), ("r18 layer1 3x3", (8, 64, 16, 16), 64, 3, 1, 1),
         ("r18 layer3 3x3", (8, 256, 4, 4), 256, 3, 1, 1)]


class _Ctx:
    pass


def _passes(shape, c_out, k, s, p):
    """``{pass: {contender: fn}}`` for one convolution."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal((c_out, shape[1], k, k), dtype=np.float32) * 0.1
    b = np.zeros(c_out, np.float32)
    small = tuple((n + 2 * p - k) // s + 1 for n in shape[2:])
    g = rng.standard_normal((shape[0], c_out) + small, dtype=np.float32)
    pads = tuple((p, (m - 1) * s + k - n - p) for m, n in zip(small, shape[2:]))
    geo = ConvGeometry((s, s), pads, (1, 1), 1)
    fwd, adj, wg = (dict(geometry=geo, transposed=False), dict(geometry=geo, transposed=True),
                    dict(geometry=geo, kernel_size=(k, k)))
    kernels = {"ember": (built_in.convolution, built_in.convolution, built_in.convolution_weight_grad)}
    try:
        from ember_onednn import plugin
        onednn = plugin.convolutions()
    except ImportError:
        onednn = None
    if onednn is not None:
        kernels["ember+oneDNN"] = (onednn.convolution, onednn.convolution, onednn.weight_grad)
    out = {"forward": {}, "input grad": {}, "weight grad": {}}
    for name, (conv, back, wgrad) in kernels.items():
        out["forward"][name] = lambda conv=conv: conv(_Ctx(), np, x, w, b, **fwd)
        out["input grad"][name] = lambda back=back: back(_Ctx(), np, g, w, None, **adj)
        out["weight grad"][name] = lambda wgrad=wgrad: wgrad(_Ctx(), np, x, g, **wg)
    try:
        import torch
    except ImportError:
        return out
    torch.set_num_threads(1)
    tx, tw, tb, tg = (torch.from_numpy(a) for a in (x, w, b, g))
    out["forward"]["PyTorch"] = lambda: torch.nn.functional.conv2d(tx, tw, tb, s, p)
    back = torch.ops.aten.convolution_backward
    out["input grad"]["PyTorch"] = lambda: back(tg, tx, tw, None, [s, s], [p, p], [1, 1], False, [0, 0], 1,
                                                [True, False, False])
    out["weight grad"]["PyTorch"] = lambda: back(tg, tx, tw, None, [s, s], [p, p], [1, 1], False, [0, 0], 1,
                                                 [False, True, False])
    return out


def _sample(fn, min_time):
    """Process CPU seconds per call over enough calls to last ``min_time``."""
    fn()
    calls, start = 0, time.process_time()
    while True:
        fn()
        calls += 1
        spent = time.process_time() - start
        if spent >= min_time:
            return spent / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="rounds (default 9)")
    parser.add_argument("--min-time", type=float, default=0.05, help="seconds per sample (default 0.05)")
    parser.add_argument("-k", "--filter", default="", help="only cases whose name contains this")
    args = parser.parse_args()
    print(f"ember {ember.__version__}, NumPy {np.__version__}, 1 thread, process CPU clock; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}; medians of {args.repeat} rounds, ratios to PyTorch "
          "(p25-p75)")
    for case in CASES:
        if args.filter not in case[0]:
            continue
        for pass_name, fns in _passes(*case[1:]).items():
            names = list(fns)
            times = {n: [] for n in names}
            for r in range(args.repeat):
                for n in (names if r % 2 == 0 else names[::-1]):
                    times[n].append(_sample(fns[n], args.min_time))
            cells = []
            for n in names:
                cell = f"{n} {statistics.median(times[n]) * 1e3:.2f} ms"
                if "PyTorch" in times and n != "PyTorch":
                    q = statistics.quantiles([a / b for a, b in zip(times[n], times["PyTorch"])], n=4)
                    cell += f" ({statistics.median([a / b for a, b in zip(times[n], times['PyTorch'])]):.2f}x, " \
                            f"{q[0]:.2f}-{q[2]:.2f})"
                cells.append(cell)
            print(f"{case[0]:<16} {pass_name:<12} " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
