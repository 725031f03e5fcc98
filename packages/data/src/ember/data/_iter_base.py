"""What every DataLoader iterator shares: one pass's sampler iterator, pinning, ``len``."""
from __future__ import annotations

import itertools

import ember

from ._structure import map_leaves


class BaseIter:
    """One pass over a :class:`~ember.data.DataLoader`; the loader holds the configuration, this the state.

    An iterator copies what it needs and keeps no reference to its loader, so that a persistent loader and its
    iterator form no reference cycle and dropping the loader frees the workers at once.
    """

    def __init__(self, loader):
        self._index_sampler = loader._index_sampler
        self._batch_size = loader.batch_size
        try:
            self._length: int | str = len(loader)
        except TypeError as e:  # an iterable dataset without a length: len(iterator) raises the same error
            self._length = str(e)
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._collate_fn = loader.collate_fn
        self._drop_last = loader.drop_last
        self._pin = loader.pin_memory and _can_pin()
        self._sampler_iter = None
        self._start_pass()
        # drawn by every pass, with or without workers, so that a seed gives the same order either way
        self._base_seed = int(ember.randint(0, (1 << 63) - 1, (), generator=loader.generator).item())

    def _start_pass(self):
        if self._iterable:  # a "task" is a batch size (or None) for the worker's own iterator
            self._sampler_iter = itertools.repeat(self._batch_size if self._auto_collation else None)
        else:
            self._sampler_iter = iter(self._index_sampler)

    def _next_index(self):
        return next(self._sampler_iter)

    def _pin_batch(self, data):
        return _pin(data) if self._pin else data

    def __iter__(self):
        return self

    def __len__(self) -> int:
        if isinstance(self._length, str):
            raise TypeError(self._length)
        return self._length


def _can_pin() -> bool:
    can = getattr(ember.memory, "can_pin_memory", None)
    return bool(can and can())


def _pin(data):
    """``data`` with every tensor (and every object with a ``pin_memory()`` method) in pinned host memory."""
    return map_leaves(data, lambda x: x.pin_memory() if hasattr(x, "pin_memory") else x)
