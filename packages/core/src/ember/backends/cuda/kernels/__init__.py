"""Kernels of the ``cuda`` backend: the op forwards that beat the ops' array-API ones on CuPy.

- on plain ``xp`` calls (checked in CI on NumPy against the ops' forwards):
  :mod:`.convolution` (im2col of the whole batch + one cuBLAS GEMM per group,
  for a convolution and both its gradients; CuPy 14 has no cuDNN) and
  :mod:`.scatter` (``index_add`` / ``scatter_add`` through ``cupyx.scatter_add``);
- CuPy-only (``ElementwiseKernel``, checked on a GPU, marker ``cuda``):
  :mod:`.compiled_pooling` (max/average pooling and their backward, one kernel
  per pooled dimension), :mod:`.compiled_activations` (fused ``sigmoid``,
  ``silu``, ``gelu`` forwards) and :mod:`.compiled_softmax` (``softmax`` and
  ``log_softmax`` with their shift fused); on other arrays, and where a kernel
  does not compile, they run the ops' forwards.

Matmul needs no kernel here: ``xp.matmul`` on CuPy arrays is cuBLAS already.
Importing this package does not import CuPy.

>>> from ember.backends.cuda.kernels import kernels
>>> sorted(kernels())[:3]
['avg_pool1d', 'avg_pool2d', 'avg_pool_backward']
"""
from __future__ import annotations

from . import compiled_activations, compiled_pooling, compiled_softmax, convolution, scatter


def kernels(compiled: bool = True) -> dict:
    """``{op_name: kernel}`` for the ``ember_op_kernels`` hook; ``compiled=False`` leaves out the CuPy-only ones
    (to time the ops with and without them)."""
    found = {**convolution.KERNELS, **scatter.KERNELS}
    if compiled:
        found.update(compiled_pooling.KERNELS)
        found.update(compiled_activations.KERNELS)
        found.update(compiled_softmax.KERNELS)
    return found
