"""Collectives on picklable Python objects, built on the tensor collectives as PyTorch's are.

Objects travel pickled, as in PyTorch: only use them between the processes of one job, which trust each other
(``pickle.loads`` runs code that the sending rank chose).

On each rank of a job (``ember-run -n 2 script.py``)::

    import ember.distributed as dist
    dist.init_process_group()
    found = [None] * dist.get_world_size()
    dist.all_gather_object(found, {"rank": dist.get_rank()})
    print(found)  # [{'rank': 0}, {'rank': 1}] on both ranks
"""
from __future__ import annotations

import pickle

import numpy as np

import ember

from ._collectives import all_gather_into_tensor, broadcast
from ._group import ProcessGroup, resolve

__all__ = ["broadcast_object_list", "all_gather_object"]


def _bytes_tensor(data: bytes, size: int):
    buf = np.zeros(size, dtype=np.uint8)
    buf[:len(data)] = np.frombuffer(data, dtype=np.uint8)
    return ember.from_numpy(buf)


def broadcast_object_list(object_list: list, src: int = 0, group: ProcessGroup | None = None, device=None) -> None:
    """Replace the items of every rank's ``object_list`` by those of global rank ``src``'s (every rank passes a
    list of the same length; the others' items are placeholders)."""
    if not isinstance(object_list, list):
        raise TypeError(f"broadcast_object_list: object_list must be a list, but got {type(object_list).__name__}")
    pg = resolve(group)
    if pg.backend is None:
        return
    is_src = src == pg.ranks[pg.rank()]
    payloads = [pickle.dumps(obj) for obj in object_list] if is_src else []
    sizes = ember.from_numpy(np.array([len(p) for p in payloads] if is_src else [0] * len(object_list),
                                      dtype=np.int64))
    broadcast(sizes, src, group)
    lengths = sizes.numpy().tolist()
    data = _bytes_tensor(b"".join(payloads), sum(lengths))
    broadcast(data, src, group)
    if not is_src:
        raw, start = data.numpy().tobytes(), 0
        for i, length in enumerate(lengths):
            object_list[i] = pickle.loads(raw[start:start + length])
            start += length


def all_gather_object(object_list: list, obj, group: ProcessGroup | None = None) -> None:
    """Every rank's ``obj`` into ``object_list`` (a list of ``world_size`` items, replaced in rank order)."""
    pg = resolve(group)
    if pg.backend is None:
        return
    if not isinstance(object_list, list) or len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must be a list of {pg.size()} items (one per rank of "
                         f"{pg.label}), but got {type(object_list).__name__} of length {len(object_list)}")
    payload = pickle.dumps(obj)
    sizes = ember.zeros(pg.size(), dtype=ember.int64)
    all_gather_into_tensor(sizes, ember.tensor([len(payload)], dtype=ember.int64), group)
    lengths = sizes.numpy().tolist()
    longest = max(lengths)
    gathered = ember.zeros(longest * pg.size(), dtype=ember.uint8)
    all_gather_into_tensor(gathered, _bytes_tensor(payload, longest), group)
    raw = gathered.numpy().tobytes()
    for i, length in enumerate(lengths):
        object_list[i] = pickle.loads(raw[i * longest:i * longest + length])
