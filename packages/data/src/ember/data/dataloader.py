"""``DataLoader``: batches from a dataset, in the main process or in worker processes."""
from __future__ import annotations

import multiprocessing
import warnings

from ._iter_base import _can_pin
from ._multiprocess import DataLoaderTimeoutError, MultiProcessIter, WorkerDiedError
from ._single_process import SingleProcessIter
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .distributed import DistributedSampler
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "WorkerDiedError", "DataLoaderTimeoutError"]

#: attributes that define the sampling and cannot change once the loader exists (as in PyTorch)
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class DataLoader:
    """Iterate over ``dataset`` in batches, optionally shuffled, optionally in ``num_workers`` processes.

    The arguments, their defaults and their mutual exclusions are PyTorch's. The loader only holds the
    configuration; each ``iter(loader)`` makes a fresh pass (with ``persistent_workers=True`` the worker
    processes live on between passes).

    With workers, batches come back in the sampler's order, at most ``prefetch_factor * num_workers`` are
    fetched ahead, and their arrays travel through shared memory. Each worker seeds ``random``, NumPy's global
    generator and ember's generators from the loader's base seed (drawn from ``generator``, or from ember's
    default generator, so ``ember.manual_seed`` makes a run reproducible) plus its id. An exception in a
    worker is raised here with the worker's id and traceback; a worker that dies raises
    :class:`WorkerDiedError` with its exit code; ``timeout`` (seconds, 0 for none) bounds the wait for one batch
    with :class:`DataLoaderTimeoutError`.

    ``pin_memory=True`` puts batches in page-locked host memory where a device backend has it (CUDA); on a
    machine without one it does nothing and warns once.

    With a :class:`DistributedSampler` whose ``set_epoch`` is never called, the loader advances the sampler's
    epoch itself on each new pass (and says so once), so each epoch shuffles differently.

    >>> import ember
    >>> from ember.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(ember.arange(10), ember.arange(10) * 10)
    >>> loader = DataLoader(ds, batch_size=4)
    >>> len(loader), [y.tolist() for _, y in loader]
    (3, [[0, 10, 20, 30], [40, 50, 60, 70], [80, 90]])
    >>> shuffled = DataLoader(ds, batch_size=5, shuffle=True)
    >>> _ = ember.manual_seed(0)
    >>> first = [x.tolist() for x, _ in shuffled]
    >>> _ = ember.manual_seed(0)
    >>> first == [x.tolist() for x, _ in shuffled], sorted(sum(first, [])) == list(range(10))
    (True, True)
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device=""):
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError("num_workers option should be a non-negative int; use num_workers=0 to disable "
                             f"multiprocessing, got num_workers={num_workers!r}")
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValueError(f"timeout option should be a non-negative number of seconds, got timeout={timeout!r}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. Let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (not isinstance(prefetch_factor, int) or prefetch_factor < 1):
            raise ValueError("prefetch_factor option should be a positive int, "
                             f"got prefetch_factor={prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value!r}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                                 "drop_last")
        elif not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size!r}")

        if sampler is None and not iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if collate_fn is None:
            collate_fn = default_collate if batch_size is not None or batch_sampler is not None else default_convert

        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.num_workers, self.prefetch_factor = num_workers, prefetch_factor
        self.persistent_workers = persistent_workers
        self.collate_fn, self.pin_memory, self.pin_memory_device = collate_fn, pin_memory, pin_memory_device
        self.timeout, self.worker_init_fn, self.generator = timeout, worker_init_fn, generator
        self.multiprocessing_context = multiprocessing_context
        self._mp_context()  # check it now
        self._iterable = iterable
        self._iterator = None
        self._passes = 0
        self._warned_epoch = False
        if pin_memory and not _can_pin():
            warnings.warn("'pin_memory' argument is set as true but no device backend with pinned host memory "
                          "(CUDA) is available, so batches are not pinned; this is harmless on a CPU-only machine",
                          stacklevel=2)
        self._initialized = True

    def __setattr__(self, name, value):
        if name in _FROZEN and getattr(self, "_initialized", False):
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    # -- derived configuration ------------------------------------------------------------------------------
    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def _mp_context(self):
        ctx = self.multiprocessing_context
        if ctx is None:
            return multiprocessing.get_context()
        if self.num_workers == 0:
            raise ValueError("multiprocessing_context can only be used with multi-process loading "
                             f"(num_workers > 0), but got num_workers={self.num_workers}")
        if isinstance(ctx, str):
            methods = multiprocessing.get_all_start_methods()
            if ctx not in methods:
                raise ValueError(f"multiprocessing_context option should specify a valid start method in {methods!r}, "
                                 f"but got multiprocessing_context={ctx!r}")
            return multiprocessing.get_context(ctx)
        if not isinstance(ctx, multiprocessing.context.BaseContext):
            raise TypeError("multiprocessing_context option should be a valid context object or a string specifying "
                            f"the start method, but got multiprocessing_context={ctx!r}")
        return ctx

    def _distributed_sampler(self):
        for s in (self.sampler, getattr(self.batch_sampler, "sampler", None)):
            if isinstance(s, DistributedSampler):
                return s
        return None

    # -- iteration --------------------------------------------------------------------------------------------
    def __iter__(self):
        self._advance_distributed_epoch()
        self._passes += 1
        if self.num_workers == 0:
            return SingleProcessIter(self)
        if not self.persistent_workers:
            return MultiProcessIter(self)
        if self._iterator is None or self._iterator._shutdown:
            self._iterator = MultiProcessIter(self)
        else:
            self._iterator._next_pass()
        return self._iterator

    def _advance_distributed_epoch(self):
        sampler = self._distributed_sampler()
        if sampler is None or self._passes == 0 or sampler._epoch_set_explicitly:
            return
        sampler._next_epoch()
        if not self._warned_epoch:
            self._warned_epoch = True
            warnings.warn("DistributedSampler.set_epoch() was never called, so the DataLoader advances the "
                          f"sampler's epoch itself on each new pass (now {sampler.epoch}) to shuffle each epoch "
                          "differently; call sampler.set_epoch(epoch) before each epoch to choose the epoch yourself",
                          stacklevel=3)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)  # TypeError for datasets without a length, as in PyTorch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self._index_sampler)

    def __repr__(self):
        return (f"<ember.data.DataLoader dataset={type(self.dataset).__name__} batch_size={self.batch_size} "
                f"num_workers={self.num_workers}>")

