"""Small datasets the DataLoader tests share; module level, so worker processes started by ``spawn`` can import them."""
from __future__ import annotations

import os
import random
import time

import numpy as np

import ember
from ember.data import Dataset, IterableDataset, get_worker_info


class Echo(Dataset):
    """Item ``i`` is ``i``; optionally counts reads in a shared counter."""

    def __init__(self, n, counter=None):
        self.n, self.counter = n, counter

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.counter is not None:
            with self.counter.get_lock():
                self.counter.value += 1
        return i


class WhoAmI(Dataset):
    """Item ``i``: the index, the worker's id and seed, and one draw from each of the three generators."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        info = get_worker_info()
        return {"index": i, "worker": info.id, "num_workers": info.num_workers, "seed": info.seed,
                "random": random.random(), "numpy": float(np.random.rand()), "ember": ember.rand(1).item()}


class FailsAt(Dataset):
    """Raises ``ValueError`` when asked for item ``bad``."""

    def __init__(self, n, bad):
        self.n, self.bad = n, bad

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"item {i} is broken")
        return np.full(3, i, dtype=np.float32)


class DiesAt(Dataset):
    """The worker process dies when asked for item ``bad``: ``how`` is 'exit', 'kill' or 'segfault'."""

    def __init__(self, n, bad, how):
        self.n, self.bad, self.how = n, bad, how

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            if self.how == "exit":
                os._exit(3)
            if self.how == "kill":
                os.kill(os.getpid(), 9)
            if self.how == "segfault":
                import ctypes
                ctypes.string_at(0)
        return i


class SlowAt(Dataset):
    """Item ``slow`` takes ``seconds``."""

    def __init__(self, n, slow, seconds):
        self.n, self.slow, self.seconds = n, slow, seconds

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.slow:
            time.sleep(self.seconds)
        return i


class ShardedRange(IterableDataset):
    """``range(start, end)``, each worker reading its own contiguous share."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = -(-(self.end - self.start) // info.num_workers)
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))


class Images(Dataset):
    """Arrays and tensors of several dtypes, to check what travels through shared memory."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        return {"u8": np.full((3, 4, 4), i, dtype=np.uint8), "f32": ember.full((2,), float(i)),
                "i64": ember.tensor(i), "name": f"item{i}"}


def fail_in_init(worker_id):
    raise RuntimeError(f"worker_init_fn refuses worker {worker_id}")


class HangsForever(Dataset):
    """Every item sleeps for an hour: a worker stuck in ``__getitem__``."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        time.sleep(3600)
        return i
