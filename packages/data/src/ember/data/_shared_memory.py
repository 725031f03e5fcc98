"""Batches travel from workers to the main process in POSIX shared memory, not as pickled copies.

A worker keeps a small pool of shared-memory slots. It packs a batch by copying every array in it (CPU tensors
and NumPy arrays) into one free slot and sends only a skeleton: the batch's structure with each array replaced
by an :class:`ArrayRef` (offset, shape, dtype). The main process maps the slot once, unlinks its name at once
(so nothing is left in ``/dev/shm`` when a process dies), and rebuilds the batch around *views* of the mapping:
no copy on the receiving side. When the last of those views is garbage, the slot goes back to the worker, which
reuses it for a later batch.

Where POSIX shared memory is missing, arrays stay in the skeleton and are pickled (correct, only slower).
"""
from __future__ import annotations

import collections
import glob
import mmap
import os
import weakref
from dataclasses import dataclass

import numpy as np

import ember

from ._structure import map_leaves

try:
    from _posixshmem import shm_open, shm_unlink
except ImportError:  # not a POSIX system: arrays are pickled instead
    shm_open = shm_unlink = None

_ALIGN = 64
_PAGE = mmap.PAGESIZE
#: free slots a worker keeps for reuse; more are unmapped
_MAX_FREE_SLOTS = 4


@dataclass(frozen=True)
class ArrayRef:
    """Where one array of a packed batch lies in its slot, and whether it was an ember tensor."""
    offset: int
    nbytes: int
    shape: tuple
    dtype: np.dtype
    is_tensor: bool
    requires_grad: bool = False


@dataclass(frozen=True)
class Packed:
    """A batch on its way to the main process: its skeleton, and the slot that holds its arrays (or None)."""
    skeleton: object
    slot: str | None
    size: int
    retired: tuple = ()


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def _walk(obj, leaf):
    """``obj`` with every array or CPU tensor ``a`` in it replaced by ``leaf(a)``."""
    def visit(x):
        if isinstance(x, ember.Tensor):
            return leaf(x) if x.device.type == "cpu" else x
        if isinstance(x, np.ndarray):
            return x if x.dtype.hasobject else leaf(x)
        return x
    return map_leaves(obj, visit)


class _Slot:
    __slots__ = ("name", "size", "map")

    def __init__(self, name: str, size: int):
        fd = shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, size)
            self.map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self.name, self.size = name, size


class SlotPool:
    """A worker's shared-memory slots: ``pack`` fills a free one, ``release`` takes back those the main freed."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self._count = 0
        self._free: list[_Slot] = []
        self._busy: dict[str, _Slot] = {}
        self._retired: list[str] = []

    def release(self, names) -> None:
        for name in names:
            slot = self._busy.pop(name, None)
            if slot is not None:
                self._free.append(slot)
        while len(self._free) > _MAX_FREE_SLOTS:
            self._retire(self._free.pop(0))

    def _retire(self, slot: _Slot) -> None:
        slot.map.close()
        self._retired.append(slot.name)

    def _acquire(self, nbytes: int) -> _Slot:
        fitting = [s for s in self._free if s.size >= nbytes]
        if fitting:
            slot = min(fitting, key=lambda s: s.size)
            self._free.remove(slot)
        else:
            if self._free:  # too small for batches this size: make room for a bigger one
                self._retire(self._free.pop(0))
            self._count += 1
            slot = _Slot(f"{self.prefix}{self._count}", _round_up(max(nbytes, 1), _PAGE))
        self._busy[slot.name] = slot
        return slot

    def pack(self, batch) -> Packed:
        """``batch`` as a :class:`Packed` skeleton, its arrays copied into one free slot."""
        if shm_open is None:
            return Packed(batch, None, 0)
        arrays: list[np.ndarray] = []
        refs: list[tuple] = []
        offset = 0

        def leaf(a):
            nonlocal offset
            is_tensor = isinstance(a, ember.Tensor)
            arr = a.detach().numpy() if is_tensor else a
            offset = _round_up(offset, _ALIGN)
            ref = ArrayRef(offset, arr.nbytes, arr.shape, arr.dtype, is_tensor, is_tensor and a.requires_grad)
            arrays.append(arr)
            refs.append(ref)
            offset += arr.nbytes
            return ref

        skeleton = _walk(batch, leaf)
        if not arrays:
            return Packed(batch, None, 0)
        slot = self._acquire(offset)
        for arr, ref in zip(arrays, refs):
            np.copyto(np.ndarray(ref.shape, ref.dtype, buffer=slot.map, offset=ref.offset), arr, casting="no")
        retired, self._retired = tuple(self._retired), []
        return Packed(skeleton, slot.name, slot.size, retired)

    def close(self) -> None:
        """Unmap every slot and remove the names the main process never opened."""
        for slot in [*self._free, *self._busy.values()]:
            try:
                slot.map.close()
            except BufferError:  # still viewed by a batch being packed: the OS frees it at exit
                pass
            unlink(slot.name)
        self._free, self._busy = [], {}


def unlink(name: str) -> None:
    try:
        shm_unlink(name)
    except FileNotFoundError:
        pass


def remove_leftovers(prefix: str) -> None:
    """Unlink every slot whose name starts with ``prefix`` (those of killed workers) where ``/dev/shm`` lists them."""
    if shm_unlink is None:
        return
    for path in glob.glob(os.path.join("/dev/shm", glob.escape(prefix.lstrip("/")) + "*")):
        unlink("/" + os.path.basename(path))


class SlotViews:
    """The main process's side: maps slots, rebuilds batches around views, tells each worker which slots are free.

    ``freed[worker_id]`` collects the names of slots whose batches were garbage-collected; the loader sends
    them along with that worker's next task.
    """

    def __init__(self, num_workers: int):
        self._maps: dict[str, mmap.mmap] = {}
        self.freed = [collections.deque() for _ in range(num_workers)]

    def _map(self, name: str, size: int) -> mmap.mmap:
        m = self._maps.get(name)
        if m is None or len(m) != size:
            fd = shm_open(name, os.O_RDWR, 0o600)
            try:
                m = self._maps[name] = mmap.mmap(fd, size)
            finally:
                os.close(fd)
            unlink(name)
        return m

    def unpack(self, packed: Packed, worker_id: int):
        """The batch ``packed`` stands for, its arrays viewing the slot."""
        for name in packed.retired:
            self._maps.pop(name, None)
        if packed.slot is None:
            return packed.skeleton
        # every view made below keeps ``whole`` alive (NumPy stops collapsing a view's base at an array whose
        # base is not an array), so its finalizer runs only once the batch's last array is gone
        whole = np.ndarray((packed.size,), np.uint8, buffer=self._map(packed.slot, packed.size))
        weakref.finalize(whole, self.freed[worker_id].append, packed.slot).atexit = False

        def leaf(ref: ArrayRef):
            arr = whole[ref.offset:ref.offset + ref.nbytes]
            arr = arr.view(ref.dtype).reshape(ref.shape)
            if not ref.is_tensor:
                return arr
            t = ember.from_numpy(arr)
            return t.requires_grad_() if ref.requires_grad else t

        return _unwalk(packed.skeleton, leaf)

    def discard(self, packed: Packed, worker_id: int) -> None:
        """Give back the slot of a batch nobody will read (a stale one from an abandoned pass)."""
        for name in packed.retired:
            self._maps.pop(name, None)
        if packed.slot is not None:
            self.freed[worker_id].append(packed.slot)

    def take_freed(self, worker_id: int) -> list:
        dq, out = self.freed[worker_id], []
        while dq:
            out.append(dq.popleft())
        return out


def _unwalk(obj, leaf):
    return map_leaves(obj, lambda x: leaf(x) if isinstance(x, ArrayRef) else x)
