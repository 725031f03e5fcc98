"""``get_worker_info()``: which DataLoader worker this code runs in (``None`` in the main process)."""
from __future__ import annotations

__all__ = ["WorkerInfo", "get_worker_info"]


class WorkerInfo:
    """What a DataLoader worker process knows about itself; read-only.

    ``id`` (0 .. ``num_workers`` - 1), ``num_workers``, ``seed`` (this worker's seed for ``random``, NumPy's
    global generator and ember's generators) and ``dataset`` (this process's copy of the dataset). An
    ``IterableDataset`` uses it to read only its own share:

    >>> info = WorkerInfo(id=1, num_workers=4, seed=7, dataset=None)
    >>> list(range(10))[info.id::info.num_workers]
    [1, 5, 9]
    >>> info.id = 2
    Traceback (most recent call last):
    ...
    AttributeError: WorkerInfo is read-only: cannot set 'id'
    """

    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, *, id: int, num_workers: int, seed: int, dataset):  # noqa: A002 - PyTorch's name
        for name, value in (("id", id), ("num_workers", num_workers), ("seed", seed), ("dataset", dataset)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"WorkerInfo is read-only: cannot set {name!r}")

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, dataset={self.dataset!r})"


_current: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The :class:`WorkerInfo` of the DataLoader worker process calling it, or ``None`` in the main process.

    >>> get_worker_info() is None
    True
    """
    return _current


def _set_worker_info(info: WorkerInfo) -> None:
    global _current
    _current = info
