"""Peak memory of the MNIST CNN training step (``workloads/cnn.py``): plain float32 against ``ember.autocast``.

Run from the repository root (the OpenBLAS variables of some machines distort timings)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_amp_memory.py

Each variant builds the model (float32 parameters, Adam), runs one warm-up step (so Adam's state exists), then
``ember.reset_peak_memory_stats()`` and one measured step. Printed per variant: the peak of
``ember.max_memory_allocated()`` during the step, what was allocated before it (parameters, gradients, Adam's
state, the batch), and the difference, the step's own peak (activations saved for backward and temporaries),
with its ratio to float32's; and the median CPU time of a step (informative: low-precision kernels are the
business of the float16/bfloat16 CPU work). Variants: float32; bfloat16 autocast; float16 autocast with a
``GradScaler``. PyTorch is not compared: its CPU allocator keeps no memory statistics.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
from workloads import cnn  # noqa: E402


def _step(variant: str):
    """A training step of the CNN for ``variant`` ("float32", "bfloat16" or "float16")."""
    model, opt, x, y, plain = cnn.build(ember)
    if variant == "float32":
        return plain
    dtype = getattr(ember, variant)
    scaler = ember.amp.GradScaler("cpu", enabled=variant == "float16")

    def step():
        opt.zero_grad()
        with ember.autocast("cpu", dtype=dtype):
            loss = ember.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return step


def measure(variant: str, repeats: int) -> dict:
    """Bytes before the step, the peak during it, and the median CPU seconds of ``repeats`` steps."""
    gc.collect()
    start = ember.memory_allocated()
    step = _step(variant)
    step()  # warm-up: Adam's state exists from here on
    gc.collect()
    before = ember.memory_allocated()
    ember.reset_peak_memory_stats()
    step()
    peak = ember.max_memory_allocated()
    times = []
    for _ in range(repeats):
        t = time.process_time()
        step()
        times.append(time.process_time() - t)
    return {"held": before - start, "peak": peak - start, "step_peak": peak - before,
            "seconds": statistics.median(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed steps per variant (default 3)")
    args = parser.parse_args()
    results = {v: measure(v, args.repeats) for v in ("float32", "bfloat16", "float16")}
    base = results["float32"]["step_peak"]
    mb = 1e6
    print(f"MNIST CNN training step, batch {cnn.BATCH}x1x28x28, Adam; peak of ember.max_memory_allocated()")
    print(f"{'variant':<28}{'peak MB':>9}{'held MB':>9}{'step MB':>9}{'step / fp32':>13}{'CPU s/step':>12}")
    names = {"float32": "float32", "bfloat16": "autocast bfloat16", "float16": "autocast float16 + GradScaler"}
    for variant, r in results.items():
        print(f"{names[variant]:<28}{r['peak'] / mb:>9.1f}{r['held'] / mb:>9.1f}{r['step_peak'] / mb:>9.1f}"
              f"{r['step_peak'] / base:>13.2f}{r['seconds']:>12.3f}")


if __name__ == "__main__":
    main()
