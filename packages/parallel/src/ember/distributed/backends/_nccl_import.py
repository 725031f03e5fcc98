"""CuPy and its NCCL bindings (``cupy.cuda.nccl``), imported when an NCCL group is made, never before.

>>> from ember.distributed.backends import _nccl_import
>>> callable(_nccl_import.load)
True
"""
from __future__ import annotations

__all__ = ["load"]

_ADVICE = ("install CuPy for your CUDA (`pip install ember-core[cuda12]` or `[cuda13]`) and NCCL "
           "(`pip install nvidia-nccl-cu12` or `-cu13`), or use backend='mpi' (CPU tensors) or backend='auto' "
           "(NCCL for CUDA tensors where it is there, MPI for CPU tensors)")


def load(backend: str = "nccl"):
    """``(cupy, cupy.cuda.nccl)``, or a RuntimeError saying what is missing and what to do instead."""
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as exc:
        raise RuntimeError(f"init_process_group(backend={backend!r}): CuPy does not import ({exc}); "
                           f"{_ADVICE}") from None
    if not getattr(nccl, "available", False):
        raise RuntimeError(f"init_process_group(backend={backend!r}): CuPy imports, but its NCCL library does not "
                           f"load (cupy.cuda.nccl.available is False); {_ADVICE}")
    return cupy, nccl
