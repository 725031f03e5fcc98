"""``ember.backends.cudnn``: PyTorch's cuDNN switches, so that programs that set them run unchanged.

``benchmark``, ``deterministic``, ``enabled`` and ``allow_tf32`` are plain module attributes a program sets (the
``cuda`` backend reads them when it has cuDNN convolutions); ``is_available()`` says whether an installed backend
offers cuDNN (False on a machine without an NVIDIA GPU), ``version()`` its version or None.

>>> import ember
>>> ember.backends.cudnn.benchmark = True   # as in a PyTorch training script
>>> ember.backends.cudnn.is_available() in (True, False)
True
>>> ember.backends.cudnn.benchmark = False
"""
from __future__ import annotations

import contextlib
import sys

from .._plugins import backends as _backends

__all__ = ["benchmark", "deterministic", "enabled", "allow_tf32", "is_available", "version", "flags"]

#: let the backend time several convolution algorithms and keep the fastest for each shape
benchmark = False
#: only deterministic convolution algorithms
deterministic = False
#: use cuDNN where the backend can
enabled = True
#: TensorFloat-32 in cuDNN convolutions on GPUs that have it
allow_tf32 = True


def _cuda():
    entry = _backends().get("cuda")
    return None if entry is None else entry[0]


def version():
    """cuDNN's version as an int (PyTorch's form, e.g. 90100), or None when no backend offers cuDNN."""
    backend = _cuda()
    getter = getattr(backend, "cudnn_version", None)
    return getter() if getter is not None and backend.is_available() else None


def is_available() -> bool:
    """Whether an installed ``cuda`` backend offers cuDNN."""
    return version() is not None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Within the block the switches take the given values (PyTorch's defaults: all off but TF32)."""
    module = sys.modules[__name__]
    names = ("enabled", "benchmark", "deterministic", "allow_tf32")
    before = {name: getattr(module, name) for name in names}
    for name, value in zip(names, (enabled, benchmark, deterministic, allow_tf32)):
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(module, name, value)
