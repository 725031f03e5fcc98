"""Fetchers: turn what the sampler gives (a batch of indices, or a batch size for iterable datasets) into data.

The same fetchers run in the main process (``num_workers=0``) and in each worker process.
"""
from __future__ import annotations

from .collate import default_collate


class MapFetcher:
    """Reads a map-style dataset at an index, or at a list of indices that it collates into a batch.

    With the default collate it asks the dataset for the whole batch at once when the dataset can
    (``__getbatch__``); otherwise it uses PyTorch's ``__getitems__`` or one ``dataset[i]`` per index.
    """

    def __init__(self, dataset, auto_collation: bool, collate_fn):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        self._getbatch = getattr(dataset, "__getbatch__", None) if collate_fn is default_collate else None
        self._getitems = getattr(dataset, "__getitems__", None)

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self._getbatch is not None:
            return self._getbatch(index)
        if self._getitems is not None:
            return self.collate_fn(self._getitems(index))
        dataset = self.dataset
        return self.collate_fn([dataset[i] for i in index])


class IterableFetcher:
    """Draws the next sample, or the next ``batch_size`` samples, from one pass over an iterable dataset.

    ``fetch`` raises ``StopIteration`` once the pass is over (or, with ``drop_last``, when only a short
    batch is left).
    """

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, batch_size):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            try:
                return self.collate_fn(next(self.iterator))
            except StopIteration:
                self.ended = True
                raise
        data = []
        for sample in self.iterator:
            data.append(sample)
            if len(data) == batch_size:
                break
        else:
            self.ended = True
        if not data or (self.drop_last and len(data) < batch_size):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(dataset, iterable: bool, auto_collation: bool, collate_fn, drop_last: bool):
    if iterable:
        return IterableFetcher(dataset, auto_collation, collate_fn, drop_last)
    return MapFetcher(dataset, auto_collation, collate_fn)
