"""Free GPUs for trials, picked by their memory status.

The status comes from :func:`ember.gpus` (nvidia-ml-py, ``pip install ember-core[gpu]``, or
GPUtil, ``pip install ember-tune[gpu]``; without either there are no GPUs). A GPU is free when no trial of
this executor holds it and its memory use is at most ``max_memory`` (a fraction, as
GPUtil's ``getAvailable``), so a GPU busy with someone else's job is left alone.
Free GPUs are handed out most-free-memory first. Indexes follow ``nvidia-smi``
(PCI bus order), so a trial process gets ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` with its
``CUDA_VISIBLE_DEVICES``. A driver started with ``CUDA_VISIBLE_DEVICES`` set uses only
the GPUs listed there.

>>> picker = GPUPicker(status=lambda: [GPUStatus(0, "GPU-a", 16000, 15000), GPUStatus(1, "GPU-b", 16000, 100),
...                                    GPUStatus(2, "GPU-c", 16000, 2000)])
>>> picker.pick(2)            # GPU 0 is 94% full: not free
[1, 2]
>>> picker.pick(1, exclude={1})
[2]
>>> visible_devices_env([1, 2])
{'CUDA_DEVICE_ORDER': 'PCI_BUS_ID', 'CUDA_VISIBLE_DEVICES': '1,2'}
"""
from __future__ import annotations

import os
import time
import typing

import ember

__all__ = ["GPUStatus", "GPUPicker", "gpu_status", "visible_devices_env"]


class GPUStatus(typing.NamedTuple):
    """One GPU's memory status (MiB)."""
    index: int
    uuid: str
    memory_total: float
    memory_used: float

    @property
    def memory_free(self) -> float:
        return self.memory_total - self.memory_used

    @property
    def memory_fraction(self) -> float:
        return self.memory_used / self.memory_total if self.memory_total > 0 else 1.0


def gpu_status() -> list:
    """Every GPU's :class:`GPUStatus`, from :func:`ember.gpus`; ``[]`` when there is none (or no way to ask)."""
    return [GPUStatus(g.index, g.uuid or "", g.memory_total / 2**20, g.memory_used / 2**20)
            for g in ember.gpus()]


def _allowed(gpus: list) -> list:
    """The GPUs this process may use: those named in its own CUDA_VISIBLE_DEVICES (indexes or UUIDs), if set."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return gpus
    names = [v.strip() for v in visible.split(",") if v.strip()]
    return [g for g in gpus if str(g.index) in names or g.uuid in names]


class GPUPicker:
    """Chooses free GPUs for trials from :func:`gpu_status` (or a given ``status`` callable), re-read at most
    every ``refresh_s`` seconds (GPUtil runs ``nvidia-smi``, which takes a while)."""

    def __init__(self, max_memory: float = 0.5, refresh_s: float = 1.0, status=None):
        if not 0.0 <= max_memory <= 1.0:
            raise ValueError(f"max_memory is the largest used fraction of a free GPU's memory, in [0, 1]; "
                             f"got {max_memory!r}")
        self.max_memory, self.refresh_s = max_memory, refresh_s
        self._status = status or gpu_status
        self._cache, self._read_at = None, -float("inf")

    def status(self) -> list:
        """The GPUs this process may use, with their memory status (cached for ``refresh_s``)."""
        now = time.monotonic()
        if self._cache is None or now - self._read_at >= self.refresh_s:
            self._cache, self._read_at = _allowed(list(self._status())), now
        return self._cache

    def count(self) -> int:
        """How many GPUs there are (free or not)."""
        return len(self.status())

    def pick(self, n: int, exclude=()) -> list | None:
        """Indexes of ``n`` free GPUs not in ``exclude``, most free memory first; None if not enough are free."""
        free = [g for g in self.status() if g.index not in exclude and g.memory_fraction <= self.max_memory]
        free.sort(key=lambda g: (-g.memory_free, g.index))
        return [g.index for g in free[:n]] if len(free) >= n else None


def visible_devices_env(indexes: list) -> dict:
    """Environment for a trial process that may use the GPUs ``indexes`` (nvidia-smi numbering); ``[]`` hides
    every GPU, as Ray does for a trial that asked for none."""
    return {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in indexes)}
