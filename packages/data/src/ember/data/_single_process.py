"""``num_workers=0``: the main process fetches and collates each batch itself."""
from __future__ import annotations

from ._fetch import make_fetcher
from ._iter_base import BaseIter


class SingleProcessIter(BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = make_fetcher(self._dataset, self._iterable, self._auto_collation, self._collate_fn,
                                     self._drop_last)

    def __next__(self):
        index = self._next_index()
        return self._pin_batch(self._fetcher.fetch(index))
