"""STAND-IN for ``cupy.cuda.memory`` (tests only): the device memory pool, which counts the bytes of live
stand-in arrays per device and keeps freed bytes cached until ``free_all_blocks``, the pinned memory pool and
``OutOfMemoryError``."""
from __future__ import annotations

import collections

from . import runtime


class OutOfMemoryError(MemoryError):
    """CuPy's allocation failure (a MemoryError), with its message."""

    def __init__(self, size, total, limit=0):
        super().__init__(f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes).")


class MemoryPool:
    """Per device: bytes in use by arrays and bytes held (in use or cached)."""

    def __init__(self):
        self._used: collections.Counter = collections.Counter()
        self._held: collections.Counter = collections.Counter()

    def _alloc(self, device: int, n: int) -> None:
        used = self._used[device] + n
        if max(used, self._held[device]) > runtime.TOTAL_MEMORY:
            raise OutOfMemoryError(n, self._used[device])
        self._used[device] = used
        self._held[device] = max(self._held[device], used)

    def _free(self, device: int, n: int) -> None:
        self._used[device] -= n  # the bytes stay held (cached) until free_all_blocks

    def used_bytes(self) -> int:
        return self._used[runtime.getDevice()]

    def total_bytes(self) -> int:
        return self._held[runtime.getDevice()]

    def free_bytes(self) -> int:
        return self.total_bytes() - self.used_bytes()

    def free_all_blocks(self, stream=None) -> None:
        d = runtime.getDevice()
        self._held[d] = self._used[d]


class PinnedMemoryPool:
    """Counts the pinned buffers handed out (``allocations``) so that tests can see pinning went through it."""

    def __init__(self):
        self.allocations = 0
        self.freed = 0

    def n_free_blocks(self) -> int:
        return 0

    def free_all_blocks(self) -> None:
        self.freed += 1


_DEVICE_POOL = MemoryPool()
_PINNED_POOL = PinnedMemoryPool()
