"""Workload 6: per-op costs on 4x4 float32 leaves that require grad (overhead, not arithmetic).

As ``benchmarks/bench_overhead.py``: ``a + b``, and ``(a * a).sum().backward()`` (whose gradient
accumulates into ``a.grad`` call after call). Two table rows, ``op_add`` and ``op_mul_sum_backward``,
each with an absolute target in microseconds. The NumPy rows do the arithmetic alone (the floor).
"""
from types import SimpleNamespace

import numpy as np


def _leaves(lib):
    lib.manual_seed(0)
    return (lib.randn(4, 4, requires_grad=True) for _ in range(2))


def _setup_add(lib):
    a, b = _leaves(lib)
    return lambda: a + b


def _setup_add_numpy():
    a, b = np.random.default_rng(0).standard_normal((2, 4, 4), dtype=np.float32)
    return lambda: a + b


def _setup_mul_sum_backward(lib):
    a, _ = _leaves(lib)
    return lambda: (a * a).sum().backward()


def _setup_mul_sum_backward_numpy():
    a = np.random.default_rng(0).standard_normal((4, 4), dtype=np.float32)
    grad = np.zeros_like(a)

    def step():
        loss = (a * a).sum()
        np.add(grad, a * np.float32(2), out=grad)    # d loss / d a, accumulated as .grad is
        return loss
    return step


ADD = SimpleNamespace(NAME="op_add", TITLE="a + b, 4x4 float32, requires_grad", TARGETS=(0.9, None),
                      setup=_setup_add, setup_numpy=_setup_add_numpy)
MUL_SUM_BACKWARD = SimpleNamespace(
    NAME="op_mul_sum_backward", TITLE="(a * a).sum().backward(), 4x4 float32", TARGETS=(0.6, None),
    setup=_setup_mul_sum_backward, setup_numpy=_setup_mul_sum_backward_numpy)
