"""Fused forwards of the hot activations on CuPy: one ``ElementwiseKernel`` instead of a chain of launches.

The ops' array-API forwards run several kernels each on CuPy (``sigmoid``: 4;
``silu``: about 10; ``gelu``: its erf alone is about 30), each reading and
writing the whole array. These compute the same formulas in one pass, in
float32 for float16/float32 inputs and in double for float64. The results
can differ from the op's forward in the last bits (the GPU's own ``erf`` and
``exp``); ``tests/core/test_cuda_kernels.py`` bounds that on a GPU (marker
``cuda``). The backward of each op is unchanged (the ``ember_op_kernels``
hook replaces forwards only). CuPy-only: other arrays go to the op's forward.
"""
from __future__ import annotations

from ....ops.activation import Gelu, Sigmoid, Silu
from ._arrays import real_cupy
from ._compiled import ACC_PREAMBLE, elementwise, floating, launch

_BODY = "typedef ember_acc<T>::type A; A v = (A)x; y = (T)({});"

_FORMULAS = {
    "sigmoid": "A(1) / (A(1) + exp(-v))",
    "silu": "v * (v >= A(0) ? A(1) / (A(1) + exp(-fabs(v))) : exp(-fabs(v)) / (A(1) + exp(-fabs(v))))",
    "gelu": "A(0.5) * v * (A(1) + erf(v * A(0.70710678118654752440)))",
    "gelu_tanh": "A(0.5) * v * (A(1) + tanh(A(0.79788456080286535588) * (v + A(0.044715) * v * v * v)))",
}


def _run(name, a):
    """The fused kernel ``name`` on ``a``, or None where it cannot run (then the op's forward does)."""
    if real_cupy(a) is None or not floating(a):
        return None
    kernel = elementwise("T x", "T y", _BODY.format(_FORMULAS[name]), f"ember_{name}", ACC_PREAMBLE)
    return launch(kernel, f"ember_{name}", a)


def sigmoid(ctx, xp, a):
    """The ``sigmoid`` op's forward, fused."""
    out = _run("sigmoid", a)
    return Sigmoid.forward(ctx, xp, a) if out is None else out


def silu(ctx, xp, a):
    """The ``silu`` op's forward, fused."""
    out = _run("silu", a)
    return Silu.forward(ctx, xp, a) if out is None else out


def gelu(ctx, xp, a, approximate="none"):
    """The ``gelu`` op's forward (exact or ``approximate='tanh'``), fused."""
    out = _run("gelu_tanh" if approximate == "tanh" else "gelu", a)
    if out is None:
        return Gelu.forward(ctx, xp, a, approximate=approximate)
    ctx.approximate = approximate
    return out


KERNELS = {"sigmoid": sigmoid, "silu": silu, "gelu": gelu}
