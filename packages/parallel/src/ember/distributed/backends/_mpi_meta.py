"""The metadata every rank sends every other rank when it enters a collective, and the check that the ranks agree.

Before any data moves, each rank tells the others which operation it entered (and how many it entered before on
this group), the dtype and shape of its tensor, the root and the reduce op: one small int64 record. When all records
arrived, every rank runs the same check on the same records, so either all ranks go on to the data transfer or all
raise the same error, naming the ranks that disagree. MPI is never handed buffers that disagree across ranks.

>>> import numpy as np
>>> from ember.distributed.backends import _mpi_meta as meta
>>> a = meta.record(2, "all_reduce", 7, dtype="float32", shape=(4,), op=0)
>>> b = meta.record(2, "all_reduce", 7, dtype="float32", shape=(5,), op=0)
>>> meta.check(np.stack([a, b]), [0, 1], meta.SAME_SHAPE)
Traceback (most recent call last):
...
ember.distributed._errors.DistError: all_reduce: the ranks' arguments disagree (every rank must pass a tensor of the \
same shape and dtype): rank 0: all_reduce (operation #7 on this group) of a float32 tensor of shape (4,), op SUM; \
rank 1: all_reduce (operation #7 on this group) of a float32 tensor of shape (5,), op SUM
"""
from __future__ import annotations

import functools

import numpy as np

from .._errors import DistError
from .._reduce_op import ReduceOp

__all__ = ["record", "check", "describe", "tensor_fields", "tensor_nbytes", "describe_tensor", "OPERATIONS",
           "SAME_SHAPE", "SAME_ROW", "ANY_SHAPE"]

OPERATIONS = ("barrier", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
              "reduce_scatter_tensor", "gather", "scatter", "all_to_all_single", "new_group", "init_process_group")
_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
_OP, _SEQ, _ROOT, _REDOP, _DTYPE, _NDIM, _DIMS, _NUMEL, _HASH, _SPLITS = 0, 1, 2, 3, 4, 5, 6, 14, 15, 16
_MAX_DIMS = _NUMEL - _DIMS
_ALL_TO_ALL = OPERATIONS.index("all_to_all_single")

#: what must agree across ranks besides the operation, its number, the dtype, the root and the reduce op
SAME_SHAPE, SAME_ROW, ANY_SHAPE = "the same shape and dtype", "the same dtype and size of dimension 1 onwards", ""


def record(size: int, operation: str, seq: int, *, dtype: str | None = None, shape=None, root: int = -1,
           op: int = -1, splits=None) -> np.ndarray:
    """The metadata record of one rank entering ``operation`` on a group of ``size`` ranks; ``splits`` (for
    all_to_all_single) is ``(input_splits, output_splits)``."""
    shape = None if shape is None else tuple(shape)
    rec = np.frombuffer(bytearray(_template(size, operation, dtype, shape, root, op)), dtype=np.int64)
    rec[_SEQ] = seq
    if splits is not None:
        rec[_SPLITS:_SPLITS + size], rec[_SPLITS + size:] = splits
    return rec


@functools.lru_cache(maxsize=1024)
def _template(size, operation, dtype, shape, root, op) -> bytes:
    """The bytes of a record without its operation number (collectives repeat on the same tensors: cached)."""
    rec = np.zeros(_SPLITS + 2 * size, dtype=np.int64)
    rec[_OP], rec[_ROOT], rec[_REDOP] = OPERATIONS.index(operation), root, op
    if shape is None:
        rec[_DTYPE], rec[_NDIM] = -1, -1
    else:
        rec[_DTYPE:_HASH + 1] = tensor_fields(dtype, shape)
    return rec.tobytes()


def describe(rec: np.ndarray) -> str:
    """One rank's record in words: ``all_reduce (operation #3 on this group) of a float32 tensor of shape (4,)``."""
    text = f"{OPERATIONS[rec[_OP]]} (operation #{rec[_SEQ]} on this group)"
    if rec[_NDIM] >= 0:
        text += f" of {describe_tensor(rec[_DTYPE:_HASH + 1])}"
    if rec[_ROOT] >= 0:
        text += f", root rank {rec[_ROOT]} of the group"
    if rec[_REDOP] >= 0:
        text += f", op {ReduceOp(int(rec[_REDOP])).name}"
    return text


def tensor_fields(dtype: str | None, shape) -> np.ndarray:
    """A tensor's dtype (a name, or None when the record carries only a shape) and shape as record fields:
    ``[dtype, ndim, 8 dims, numel, shape hash]`` (a shape of more than 8 dimensions is told apart by its hash)."""
    shape = tuple(int(d) for d in shape)
    fields = np.zeros(_HASH + 1 - _DTYPE, dtype=np.int64)
    fields[:_DIMS - _DTYPE] = -1 if dtype is None else _DTYPES.index(dtype), len(shape)
    fields[_DIMS - _DTYPE:_DIMS - _DTYPE + min(len(shape), _MAX_DIMS)] = shape[:_MAX_DIMS]
    fields[_NUMEL - _DTYPE:] = int(np.prod(shape, dtype=np.int64)), hash(shape)
    return fields


_ITEMSIZES = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2, "bfloat16": 2,
              "float32": 4, "float64": 8}


def tensor_nbytes(fields: np.ndarray) -> int:
    """The size in bytes of the tensor that fields made by :func:`tensor_fields` (with a dtype) describe."""
    return int(fields[_NUMEL - _DTYPE]) * _ITEMSIZES[_DTYPES[int(fields[0])]]


def describe_tensor(fields: np.ndarray) -> str:
    """Fields made by :func:`tensor_fields` in words: ``a float32 tensor of shape (4,)``."""
    ndim = int(fields[_NDIM - _DTYPE])
    dims = ", ".join(str(int(d)) for d in fields[_DIMS - _DTYPE:_DIMS - _DTYPE + min(ndim, _MAX_DIMS)])
    shape = f"({dims}{',' if ndim == 1 else ''}{', ...' if ndim > _MAX_DIMS else ''})"
    if fields[0] < 0:
        return f"shape {shape}"
    return f"a {_DTYPES[fields[0]]} tensor of shape {shape}"


def check(records: np.ndarray, ranks: list[int], what: str) -> None:
    """Raise :class:`~ember.distributed.DistError` unless the records (one row per group rank; ``ranks`` their
    global ranks) agree on the operation, its number, the dtype, the root, the reduce op and the shape (``what``
    words that for the message: :data:`SAME_SHAPE`, :data:`SAME_ROW`, :data:`ANY_SHAPE`); for all_to_all_single,
    rank i's input split j must equal rank j's output split i."""
    n = len(ranks)
    raw, row = records.tobytes(), records.shape[1] * 8
    first = raw[:_SPLITS * 8]  # a barrier's records carry no shape; all_to_all_single's that of one row
    odd = [i for i in range(1, n) if raw[i * row:i * row + _SPLITS * 8] != first]
    if odd:
        name = OPERATIONS[records[0, _OP]]
        odd = [0] + odd
        details = "; ".join(f"rank {ranks[i]}: {describe(records[i])}" for i in odd[:8])
        must = f" (every rank must pass a tensor of {what})" if what else ""
        raise DistError(f"{name}: the ranks' arguments disagree{must}: {details}")
    if records[0, _OP] == _ALL_TO_ALL:
        sent = records[:, _SPLITS:_SPLITS + n]  # sent[i, j]: rows rank i sends rank j
        received = records[:, _SPLITS + n:]     # received[j, i]: rows rank j expects from rank i
        bad = np.argwhere(sent != received.T)
        if len(bad):
            i, j = (int(k) for k in bad[0])
            raise DistError(f"all_to_all_single: rank {ranks[i]} sends {sent[i, j]} rows to rank {ranks[j]} "
                            f"(its input_split_sizes[{j}]) but rank {ranks[j]} expects {received[j, i]} "
                            f"(its output_split_sizes[{i}])")
