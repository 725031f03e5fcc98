"""Samplers: which indices a map-style dataset is read at, and in what order.

Samplers yield Python ints (``BatchSampler`` yields lists of them). The random ones draw their numbers in
bulk (one permutation or one multinomial draw per pass) and hand them out through C-level iterators, so a
pass costs little more than building the list of indices. With ``generator=None`` each pass seeds a fresh
generator from ember's default CPU generator: ``ember.manual_seed`` makes every pass reproducible, and two
passes differ.

>>> import ember
>>> from ember.data import BatchSampler, RandomSampler
>>> _ = ember.manual_seed(0)
>>> batches = list(BatchSampler(RandomSampler(range(10)), batch_size=4, drop_last=False))
>>> [len(b) for b in batches], sorted(sum(batches, []))
([4, 4, 2], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
"""
import itertools

import ember

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]

#: how many indices a with-replacement RandomSampler draws at a time (bounds memory for huge num_samples)
_BLOCK = 1 << 16


def _is_positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _pass_generator(generator):
    """``generator``, or a fresh generator seeded from ember's default CPU generator (a new seed per call)."""
    if generator is not None:
        return generator
    seed = int(ember.empty((), dtype=ember.int64).random_().item())
    return ember.Generator().manual_seed(seed)


def _lazily(blocks):
    """An iterator over the items of the iterables that the generator ``blocks`` yields: nothing is drawn
    before the first ``next`` (as with PyTorch's generator-based samplers), and the items come at C speed."""
    return itertools.chain.from_iterable(blocks)


class Sampler:
    """Base class of samplers: subclasses define ``__iter__`` (the indices, or lists of indices for a batch
    sampler) and, optionally, ``__len__`` (needed for ``len(loader)``).

    >>> from ember.data import Sampler
    >>> class EvenFirst(Sampler):
    ...     def __init__(self, n):
    ...         self.n = n
    ...     def __iter__(self):
    ...         return iter([*range(0, self.n, 2), *range(1, self.n, 2)])
    ...     def __len__(self):
    ...         return self.n
    >>> list(EvenFirst(5))
    [0, 2, 4, 1, 3]
    """

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``, in that order.

    >>> from ember.data import SequentialSampler
    >>> list(SequentialSampler("abc"))
    [0, 1, 2]
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices of ``data_source`` in random order: a permutation (``replacement=False``; with ``num_samples``
    larger than the dataset, several permutations one after another), or ``num_samples`` independent uniform
    draws (``replacement=True``). ``num_samples`` defaults to ``len(data_source)``.

    >>> import ember
    >>> from ember.data import RandomSampler
    >>> g = ember.Generator().manual_seed(0)
    >>> sorted(RandomSampler(range(5), generator=g))
    [0, 1, 2, 3, 4]
    >>> len(RandomSampler(range(5), replacement=True, num_samples=12))
    12
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not _is_positive_int(self.num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        return _lazily(self._blocks())

    def _blocks(self):
        n, total = len(self.data_source), self.num_samples
        g = _pass_generator(self.generator)
        if self.replacement:
            for start in range(0, total, _BLOCK):
                yield ember.randint(n, (min(_BLOCK, total - start),), generator=g).tolist()
            return
        for _ in range(total // n):
            yield ember.randperm(n, generator=g).tolist()
        if total % n:
            yield ember.randperm(n, generator=g).tolist()[:total % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` (a list, range, tuple, or 1-D integer tensor or array) in random order, each
    once.

    >>> import ember
    >>> from ember.data import SubsetRandomSampler
    >>> s = SubsetRandomSampler([10, 20, 30], generator=ember.Generator().manual_seed(0))
    >>> sorted(s), len(s)
    ([10, 20, 30], 3)
    """

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        return _lazily(self._blocks())

    def _blocks(self):
        indices = self.indices.tolist() if hasattr(self.indices, "tolist") else self.indices
        perm = ember.randperm(len(indices), generator=_pass_generator(self.generator)).tolist()
        yield map(indices.__getitem__, perm)

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices into ``weights``, index ``i`` drawn with probability proportional to
    ``weights[i]`` (the weights need not sum to one); without replacement each index appears at most once.

    >>> import ember
    >>> from ember.data import WeightedRandomSampler
    >>> s = WeightedRandomSampler([0.0, 1.0, 3.0], num_samples=6, generator=ember.Generator().manual_seed(0))
    >>> len(s), set(s) <= {1, 2}
    (6, True)
    >>> sorted(WeightedRandomSampler([0.2, 0.3, 0.5], 3, replacement=False))
    [0, 1, 2]
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not _is_positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = ember.as_tensor(weights, dtype=ember.float64)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        return _lazily(self._blocks())

    def _blocks(self):
        g = _pass_generator(self.generator)
        yield ember.multinomial(self.weights, self.num_samples, self.replacement, generator=g).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` (any iterable of ints) into lists of ``batch_size``; the last,
    shorter batch is kept unless ``drop_last``.

    >>> from ember.data import BatchSampler, SequentialSampler
    >>> list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False))
    [[0, 1, 2], [3, 4, 5], [6]]
    >>> len(BatchSampler(range(7), batch_size=3, drop_last=True))
    2
    """

    def __init__(self, sampler, batch_size, drop_last):
        if not _is_positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        return _lazily(self._blocks())

    def _blocks(self):
        it, size = iter(self.sampler), self.batch_size
        if self.drop_last:
            yield map(list, zip(*[it] * size))
        else:
            yield iter(lambda: list(itertools.islice(it, size)), [])

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
