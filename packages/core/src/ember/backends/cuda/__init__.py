"""``ember.backends.cuda``: the CUDA backend on CuPy, and PyTorch's ``torch.backends.cuda`` switches.

The backend itself is :class:`~ember.backends.cuda.backend.CUDABackend`, registered by the plugin module
``ember.backends.cuda.plugin`` (an entry point of ember-core). Nothing here imports CuPy.

>>> import ember
>>> ember.backends.cuda.is_built()
True
>>> ember.backends.cuda.matmul.allow_tf32
False
"""
from __future__ import annotations

__all__ = ["is_built", "matmul"]


def is_built() -> bool:
    """Whether this ember has the CUDA backend (always: it is a plugin of ember-core; whether a GPU can be
    used is ``ember.cuda.is_available()``)."""
    return True


class _Matmul:
    """``matmul.allow_tf32``: whether float32 matrix products may use TensorFloat-32 (PyTorch's default,
    False). CuPy reads its own switch, the environment variable ``CUPY_TF32``, when it starts."""

    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _Matmul()
