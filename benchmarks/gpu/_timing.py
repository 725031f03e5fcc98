"""Timing on a GPU: contenders in turns, each sample a few calls ended by a device synchronize."""
from __future__ import annotations

import statistics
import time


def summary(samples):
    """Median and quartiles (seconds) of a list of per-call times."""
    if len(samples) >= 2:
        q1, med, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    else:
        q1 = med = q3 = samples[0]
    return {"median_s": med, "q1_s": q1, "q3_s": q3, "samples": len(samples)}


def alternate(contenders, *, calls=None, rounds=15, budget_s=20.0, warmup=3):
    """Time ``{name: (fn, synchronize)}`` in turns (forward order, then reversed, ...).

    Each sample is ``calls`` calls of ``fn`` between two ``synchronize()``, divided by ``calls`` (by default
    as many as last about 20 ms, from 1 to 20, judged on the warm-up). Stops after ``rounds`` rounds, or when
    ``budget_s`` is spent after at least 3. Returns ``{name: summary}``.
    """
    slowest = 0.0
    for fn, sync in contenders.values():
        for _ in range(warmup):
            sync()
            start = time.perf_counter()
            fn()
            sync()
        slowest = max(slowest, time.perf_counter() - start)
    if calls is None:
        calls = max(1, min(20, round(0.02 / max(slowest, 1e-6))))
    names = list(contenders)
    samples = {name: [] for name in names}
    end = time.perf_counter() + budget_s
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            fn, sync = contenders[name]
            sync()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            samples[name].append((time.perf_counter() - start) / calls)
        if r >= 2 and time.perf_counter() > end:
            break
    return {name: summary(s) for name, s in samples.items()}
