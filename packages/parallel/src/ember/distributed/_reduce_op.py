"""``ReduceOp``: how ``all_reduce``, ``reduce`` and ``reduce_scatter_tensor`` combine the ranks' tensors.

>>> import ember.distributed as dist
>>> dist.ReduceOp.SUM, dist.ReduceOp["MAX"]
(<ReduceOp.SUM: 0>, <ReduceOp.MAX: 4>)
"""
from __future__ import annotations

import enum

__all__ = ["ReduceOp"]


class ReduceOp(enum.Enum):
    """The reductions of PyTorch's ``torch.distributed.ReduceOp``.

    ``AVG`` (the sum divided by the group's size) needs a floating-point tensor; on ``bool`` tensors ``SUM`` and
    ``MAX`` are a logical or, ``PRODUCT`` and ``MIN`` a logical and; ``BAND``, ``BOR`` and ``BXOR`` are bitwise, for
    integer and bool tensors.

    >>> from ember.distributed import ReduceOp
    >>> [op.name for op in ReduceOp][:5]
    ['SUM', 'AVG', 'PRODUCT', 'MIN', 'MAX']
    """

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
