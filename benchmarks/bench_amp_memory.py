"""Peak memory of the MNIST CNN training step (``workloads/cnn.py``): plain float32 against ``ember.autocast``
and activation checkpointing.

Run from the repository root (the OpenBLAS variables of some machines distort timings)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_amp_memory.py

Each variant builds the model (float32 parameters, Adam), runs one warm-up step (so Adam's state exists), then
``ember.reset_peak_memory_stats()`` and one measured step. Printed per variant: the peak of
``ember.max_memory_allocated()`` during the step, what was allocated before it (parameters, gradients, Adam's
state, the batch), and the difference, the step's own peak (activations saved for backward and temporaries),
with its ratio to float32's; the same step peak as ``tracemalloc`` sees all NumPy memory (a check on ember's
counter); and the median CPU time of a step (informative: low-precision kernels are the
business of the float16/bfloat16 CPU work). Variants: float32; bfloat16 autocast; float16 autocast with a
``GradScaler``; float32 with ``checkpoint_sequential`` over the model's layers in 2 segments (the convolutions and
the rest: only each segment's input is kept for backward, the segment is recomputed in it). PyTorch is not
compared: its CPU allocator keeps no memory statistics.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from workloads import cnn  # noqa: E402

import ember  # noqa: E402
from ember.utils.checkpoint import checkpoint_sequential  # noqa: E402


def _step(variant: str):
    """A training step of the CNN for ``variant`` ("float32", "bfloat16", "float16" or "checkpoint")."""
    model, opt, x, y, plain = cnn.build(ember)
    if variant == "float32":
        return plain
    if variant == "checkpoint":
        def checkpointed():
            opt.zero_grad()
            ember.nn.functional.cross_entropy(checkpoint_sequential(model, 2, x, use_reentrant=False), y).backward()
            opt.step()
        return checkpointed
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
            "traced": _traced_step_peak(variant), "seconds": statistics.median(times)}


def _traced_step_peak(variant: str) -> int:
    """The peak of all memory ``tracemalloc`` sees (NumPy reports its arrays to it) over a step, above its start:
    a check on ember's own counter, from a model built under tracing."""
    tracemalloc.start()
    try:
        step = _step(variant)
        step()
        gc.collect()
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        step()
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed steps per variant (default 3)")
    args = parser.parse_args()
    results = {v: measure(v, args.repeats) for v in ("float32", "bfloat16", "float16", "checkpoint")}
    base, traced_base = results["float32"]["step_peak"], results["float32"]["traced"]
    mb = 1e6
    print(f"MNIST CNN training step, batch {cnn.BATCH}x1x28x28, Adam; peak of ember.max_memory_allocated()")
    print(f"{'variant':<30}{'peak MB':>9}{'held MB':>9}{'step MB':>9}{'step / fp32':>13}{'traced step MB':>16}"
          f"{'traced / fp32':>15}{'CPU s/step':>12}")
    names = {"float32": "float32", "bfloat16": "autocast bfloat16", "float16": "autocast float16 + GradScaler",
             "checkpoint": "float32, checkpoint_sequential 2"}
    for variant, r in results.items():
        print(f"{names[variant]:<30}{r['peak'] / mb:>9.1f}{r['held'] / mb:>9.1f}{r['step_peak'] / mb:>9.1f}"
              f"{r['step_peak'] / base:>13.2f}{r['traced'] / mb:>16.1f}{r['traced'] / traced_base:>15.2f}"
              f"{r['seconds']:>12.3f}")


if __name__ == "__main__":
    main()
