"""How ember dtypes and ``ReduceOp``\\ s map onto NCCL's data types and reductions.

NCCL reduces ``float16``, ``bfloat16``, ``float32``, ``float64``, ``int8``, ``uint8``, ``int32`` and ``int64``
natively, with ``SUM``, ``PRODUCT``, ``MIN``, ``MAX`` and ``AVG``; ``bool`` tensors travel as ``uint8`` (``SUM``
and ``MAX`` as MAX, a logical or; ``PRODUCT`` and ``MIN`` as MIN, a logical and). NCCL has no 16-bit integers and
no bitwise reductions: those are TypeErrors that point to the ``mpi`` backend. Operations that only move data
(broadcast, gathers, point to point) move bytes, so every dtype travels.

>>> from types import SimpleNamespace as NS
>>> from ember.distributed import ReduceOp
>>> fake = NS(NCCL_FLOAT32=7, NCCL_UINT8=1, NCCL_SUM=0, NCCL_MAX=3)
>>> reduction(fake, "all_reduce", NS(name="float32", is_floating_point=True), ReduceOp.SUM)
(7, 0)
"""
from __future__ import annotations

from .._reduce_op import ReduceOp

__all__ = ["reduction"]

_TYPES = {"float16": "NCCL_FLOAT16", "bfloat16": "NCCL_BFLOAT16", "float32": "NCCL_FLOAT32",
          "float64": "NCCL_FLOAT64", "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
          "int64": "NCCL_INT64", "bool": "NCCL_UINT8"}
_OPS = {ReduceOp.SUM: "NCCL_SUM", ReduceOp.PRODUCT: "NCCL_PROD", ReduceOp.MIN: "NCCL_MIN", ReduceOp.MAX: "NCCL_MAX",
        ReduceOp.AVG: "NCCL_AVG"}
_BOOL_OPS = {ReduceOp.SUM: "NCCL_MAX", ReduceOp.MAX: "NCCL_MAX", ReduceOp.PRODUCT: "NCCL_MIN",
             ReduceOp.MIN: "NCCL_MIN"}


def reduction(nccl, name: str, dtype, op) -> tuple[int, int]:
    """``(NCCL data type, NCCL reduction)`` for reducing tensors of the ember ``dtype`` with ``op``, or a TypeError
    naming what NCCL lacks."""
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a dist.ReduceOp, but got {type(op).__name__} {op!r}")
    if dtype.name not in _TYPES:
        raise TypeError(f"{name}: NCCL cannot reduce {dtype.name} tensors (it reduces "
                        f"{', '.join(_TYPES)}); convert the tensor, or reduce it on the 'mpi' backend")
    ops = _BOOL_OPS if dtype.name == "bool" else _OPS
    if op not in ops or (op is ReduceOp.AVG and not dtype.is_floating_point):
        kind = "bool" if dtype.name == "bool" else "floating-point" if dtype.is_floating_point else "integer"
        takes = [o.name for o in ops if dtype.is_floating_point or o is not ReduceOp.AVG]
        raise TypeError(f"{name}: ReduceOp.{op.name} is not available on NCCL for {kind} tensors ({dtype.name}); "
                        f"it takes {', '.join(takes)} (the 'mpi' backend takes the bitwise ones)")
    return getattr(nccl, _TYPES[dtype.name]), getattr(nccl, ops[op])
