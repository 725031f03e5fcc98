"""Running functions at the same time, one thread each, as DataParallel's replicas and Pipe's stages do.

NumPy releases the GIL inside its kernels (BLAS, convolutions), so work on the CPU's logical devices does compute at
the same time. Each thread runs with the caller's grad mode (``no_grad`` and ``inference_mode`` are per thread); a
failure is raised again in the caller's thread, saying where it happened.

>>> from ember.parallel._threads import run_in_threads
>>> run_in_threads([lambda: 1, lambda: 2], ["first", "second"])
[1, 2]
"""
from __future__ import annotations

import threading

import ember

from ._errors import reraise

__all__ = ["run_in_threads"]


def run_in_threads(calls, where, thread_name: str = "ember-worker") -> list:
    """``[call() for call in calls]``, each in its own thread named ``thread_name-i`` (a single call in the
    caller's thread), with the caller's grad mode. If any raised, the first of them in ``calls``' order is raised
    again here, naming ``where[i]`` (e.g. ``"replica 1 on device cpu:1"``)."""
    grad_enabled, inference = ember.is_grad_enabled(), ember.is_inference_mode_enabled()
    results: list = [None] * len(calls)
    failures: list = [None] * len(calls)

    def work(i):
        try:
            with ember.inference_mode() if inference else ember.set_grad_enabled(grad_enabled):
                results[i] = calls[i]()
        except Exception as exc:  # handed to the caller's thread below
            failures[i] = exc

    if len(calls) == 1:
        work(0)
    else:
        threads = [threading.Thread(target=work, args=(i,), name=f"{thread_name}-{i}") for i in range(len(calls))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for i, exc in enumerate(failures):
        if exc is not None:
            reraise(where[i], exc)
    return results
