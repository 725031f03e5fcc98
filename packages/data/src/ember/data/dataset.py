"""Datasets: map style (``Dataset``) and iterable style (``IterableDataset``), and the ways to combine them.

>>> import ember
>>> from ember.data import TensorDataset, random_split
>>> ds = TensorDataset(ember.arange(10))
>>> train, val = random_split(ds, [0.8, 0.2], generator=ember.Generator().manual_seed(0))
>>> len(train), len(val)
(8, 2)
"""
import bisect
import itertools
import math
import warnings

import ember

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]


class Dataset:
    """A map-style dataset: ``dataset[i]`` is the ``i``-th sample; subclasses define ``__getitem__`` and
    (for samplers and ``len(loader)``) ``__len__``. ``a + b`` is ``ConcatDataset([a, b])``.

    Two optional batch methods let the DataLoader skip reading samples one at a time:

    - ``__getitems__(indices)`` (PyTorch's protocol): the list of samples at ``indices`` (a list of ints),
      i.e. ``[self[i] for i in indices]``; the loader then collates that list as usual.
    - ``__getbatch__(indices)`` (ember's fast path): the *collated* batch, exactly what
      ``default_collate([self[i] for i in indices])`` returns, built in one step (e.g. one fancy index per
      tensor). The loader uses it when its ``collate_fn`` is ``default_collate``. The built-in datasets that
      have it drop it in a subclass that overrides ``__getitem__``, so that a per-item transform is never
      skipped.

    >>> from ember.data import Dataset
    >>> class Squares(Dataset):
    ...     def __len__(self):
    ...         return 4
    ...     def __getitem__(self, i):
    ...         return i * i
    >>> ds = Squares()
    >>> [ds[i] for i in range(len(ds))], len(ds + ds)
    ([0, 1, 4, 9], 8)
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """An iterable-style dataset: subclasses define ``__iter__`` yielding samples (useful for streams).
    ``a + b`` is ``ChainDataset([a, b])``. In DataLoader workers each worker iterates its own copy; use
    ``ember.data.get_worker_info()`` inside ``__iter__`` to split the work between them.

    >>> from ember.data import IterableDataset
    >>> class Count(IterableDataset):
    ...     def __init__(self, n):
    ...         self.n = n
    ...     def __iter__(self):
    ...         return iter(range(self.n))
    >>> list(Count(2) + Count(3))
    [0, 1, 0, 1, 2]
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows of the given tensors: ``dataset[i] == (t0[i], t1[i], ...)``.

    All tensors must have the same size in dimension 0. (PyTorch checks this with an ``assert``; ember raises
    ``ValueError`` so that the check also holds under ``python -O``.)

    >>> import ember
    >>> from ember.data import TensorDataset
    >>> ds = TensorDataset(ember.arange(6).reshape(3, 2), ember.tensor([0, 1, 0]))
    >>> len(ds), ds[1]
    (3, (tensor([2, 3]), tensor(1)))
    >>> ds.__getbatch__([2, 0])
    [tensor([[4, 5],
            [0, 1]]), tensor([0, 0])]
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = [t.size(0) for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"Size mismatch between tensors: every tensor needs the same size in dimension 0, "
                             f"got sizes {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    @property
    def __getbatch__(self):
        """The batch at ``indices`` as ``default_collate`` would build it: one tensor per input tensor."""
        _check_getitem_kept(self, TensorDataset)
        return self._getbatch

    def _getbatch(self, indices):
        return [t[indices] for t in self.tensors]

    def __len__(self):
        return self.tensors[0].size(0)


def _check_getitem_kept(dataset, cls):
    """Raise AttributeError (hiding ``__getbatch__``) when ``dataset``'s class overrides ``cls.__getitem__``:
    the inherited batch read would bypass the subclass's own item read."""
    if type(dataset).__getitem__ is not cls.__getitem__:
        raise AttributeError(f"{type(dataset).__name__} overrides __getitem__, so it does not inherit "
                             f"{cls.__name__}.__getbatch__ (which would bypass it); define __getbatch__ to have one")


def _check_same_length(datasets):
    length = len(datasets[0])
    if any(len(d) != length for d in datasets):
        raise ValueError(f"Size mismatch between datasets: every dataset needs the same length, got lengths "
                         f"{[len(d) for d in datasets]}")
    return length


class StackDataset(Dataset):
    """Datasets of equal length side by side: ``StackDataset(a, b)[i] == (a[i], b[i])`` and
    ``StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}``.

    >>> import ember
    >>> from ember.data import StackDataset, TensorDataset
    >>> ds = StackDataset(image=[10, 20], label=[1, 0])
    >>> len(ds), ds[1]
    (2, {'image': 20, 'label': 0})
    >>> pairs = StackDataset(TensorDataset(ember.arange(3)), TensorDataset(ember.arange(3) * 2))
    >>> pairs[2], pairs.__getbatch__([2, 0])
    (((tensor(2),), (tensor(4),)), [[tensor([2, 0])], [tensor([4, 0])]])
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or ``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        self.datasets = args if args else kwargs
        self._length = _check_same_length(list(args or kwargs.values()))

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        """The samples at ``indices``, reading each part with its own ``__getitems__`` where it has one."""
        named = isinstance(self.datasets, dict)
        parts = self.datasets.items() if named else enumerate(self.datasets)
        columns = {k: _items(d, indices) for k, d in parts}
        if named:
            return [dict(zip(columns, row)) for row in zip(*columns.values())]
        return list(zip(*columns.values()))

    @property
    def __getbatch__(self):
        """The collated batch at ``indices``: one part's batch per dataset (a dict for keyword datasets);
        present only when every part has ``__getbatch__``."""
        _check_getitem_kept(self, StackDataset)
        parts = self.datasets.values() if isinstance(self.datasets, dict) else self.datasets
        if not all(hasattr(d, "__getbatch__") for d in parts):
            raise AttributeError("StackDataset has __getbatch__ only when every stacked dataset has it")
        return self._getbatch

    def _getbatch(self, indices):
        if isinstance(self.datasets, dict):
            return {k: d.__getbatch__(indices) for k, d in self.datasets.items()}
        return [d.__getbatch__(indices) for d in self.datasets]

    def __len__(self):
        return self._length


def _items(dataset, indices):
    """``[dataset[i] for i in indices]``, through ``dataset.__getitems__`` when it has one."""
    getitems = getattr(dataset, "__getitems__", None)
    if not callable(getitems):
        return [dataset[i] for i in indices]
    items = getitems(indices)
    if len(items) != len(indices):
        raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}")
    return items


class ConcatDataset(Dataset):
    """Map-style datasets one after another: indices run through the first, then the second, ...

    ``cumulative_sizes[k]`` is the total length of the first ``k + 1`` datasets.

    >>> from ember.data import ConcatDataset
    >>> ds = ConcatDataset([[0, 1, 2], [10, 11]])
    >>> len(ds), ds[3], ds[-1], ds.cumulative_sizes
    (5, 10, 11, [3, 5])
    """

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset to chain "
                                f"iterable datasets), got {type(d).__name__}")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += n
        if idx >= n:
            raise IndexError(f"index {idx} is out of range for a ConcatDataset of length {n}")
        k = bisect.bisect_right(self.cumulative_sizes, idx)
        return self.datasets[k][idx - self.cumulative_sizes[k - 1] if k else idx]


def _check_iterable(d):
    if not isinstance(d, IterableDataset):
        raise TypeError(f"ChainDataset only supports IterableDataset, got {type(d).__name__}")


class ChainDataset(IterableDataset):
    """Iterable datasets one after another (the chaining happens lazily, while iterating).

    >>> from ember.data import ChainDataset, IterableDataset
    >>> class Letters(IterableDataset):
    ...     def __init__(self, s):
    ...         self.s = s
    ...     def __iter__(self):
    ...         return iter(self.s)
    ...     def __len__(self):
    ...         return len(self.s)
    >>> ds = ChainDataset([Letters("ab"), Letters("c")])
    >>> list(ds), len(ds)
    (['a', 'b', 'c'], 3)
    """

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            _check_iterable(d)
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            _check_iterable(d)
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices`` (a list, range, tuple or 1-D integer tensor/array):
    ``Subset(ds, idx)[i] == ds[idx[i]]``.

    ``indices`` given as a tensor or NumPy array is kept as a list of ints, so that the inner dataset is
    always read at Python ints. Batch reads (``__getitems__``, and ``__getbatch__`` when the inner dataset
    has it) map the indices and hand them to the inner dataset in one call.

    >>> import ember
    >>> from ember.data import Subset, TensorDataset
    >>> sub = Subset(TensorDataset(ember.arange(10) * 10), ember.tensor([7, 2]))
    >>> len(sub), sub[0], sub.indices
    (2, (tensor(70),), [7, 2])
    >>> sub.__getbatch__([1, 0])
    [tensor([20, 70])]
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices.tolist() if hasattr(indices, "tolist") else indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        """The samples at ``indices``, read through the inner dataset's ``__getitems__`` when it has one."""
        return _items(self.dataset, list(map(self.indices.__getitem__, indices)))

    @property
    def __getbatch__(self):
        """The collated batch at ``indices`` (present only when the inner dataset has ``__getbatch__``)."""
        _check_getitem_kept(self, Subset)
        if not hasattr(self.dataset, "__getbatch__"):
            raise AttributeError(f"Subset has __getbatch__ only when its dataset has it, and "
                                 f"{type(self.dataset).__name__} has not")
        return self._getbatch

    def _getbatch(self, indices):
        return self.dataset.__getbatch__(list(map(self.indices.__getitem__, indices)))

    def __len__(self):
        return len(self.indices)


def _fractions_to_lengths(n, fractions):
    """PyTorch's rule: floor(n * f) each, then the remainder one by one round-robin from the first split."""
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(n * frac))
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                          UserWarning, stacklevel=3)
    return lengths


def random_split(dataset, lengths, generator=ember.default_generator):
    """Split ``dataset`` at random into non-overlapping :class:`Subset` s of the given ``lengths``.

    ``lengths`` are either integers summing to ``len(dataset)`` or fractions summing to 1 (up to float
    rounding, either way: PyTorch rejects a float sum a hair above 1); with fractions,
    each split gets ``floor(len * fraction)`` samples and the samples left over go one each to the splits
    in turn, from the first. The permutation comes from ``generator`` (ember's default generator unless
    given), so ``ember.manual_seed`` or a seeded generator makes the split reproducible.

    >>> import ember
    >>> from ember.data import random_split
    >>> a, b, c = random_split(range(10), [0.5, 0.3, 0.2], generator=ember.Generator().manual_seed(1))
    >>> len(a), len(b), len(c), sorted(a.indices + b.indices + c.indices) == list(range(10))
    (5, 3, 2, True)
    """
    lengths = list(lengths)
    n = len(dataset)
    total = sum(lengths)
    if math.isclose(total, 1):  # PyTorch also asks total <= 1, failing fractions that round to 1 + 2**-52
        lengths = _fractions_to_lengths(n, lengths)
    else:
        for i, length in enumerate(lengths):
            if length < 0 or int(length) != length:
                raise ValueError(f"Length at index {i} must be a non-negative integer (or give fractions "
                                 f"summing to 1), got {length}")
        lengths = [int(length) for length in lengths]
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = ember.randperm(n, generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]
