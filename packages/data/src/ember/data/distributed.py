"""``DistributedSampler``: each process of a distributed job reads its own share of the dataset."""
import math
import os

import ember

from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _from_env(name, argument):
    """The integer in environment variable ``name`` (set by launchers such as ``ember-run``), for when the
    user did not pass ``argument``."""
    value = os.environ.get(name)
    if value is None:
        raise RuntimeError(f"DistributedSampler: {argument} was not given and the {name} environment variable "
                           f"is not set; pass num_replicas= and rank= (e.g. from your process group's "
                           f"get_world_size() and get_rank()), or start the job with a launcher that sets "
                           f"WORLD_SIZE and RANK")
    try:
        return int(value)
    except ValueError:
        raise RuntimeError(f"DistributedSampler: the {name} environment variable should be an integer, "
                           f"got {value!r}") from None


class DistributedSampler(Sampler):
    """The indices for one of ``num_replicas`` processes (this one being ``rank``): every process gets
    ``len(sampler)`` indices, and together they cover the dataset.

    With ``shuffle`` the indices are permuted by a generator seeded with ``seed + epoch``: all ranks use the
    same ``seed`` and epoch, so they see one permutation and take disjoint strided parts of it. Call
    ``set_epoch(e)`` before each epoch to reshuffle; if you never do, the DataLoader advances the epoch
    itself on each pass (and warns once). Unless ``drop_last``, the index list is padded by repeating its
    start until it divides evenly; with ``drop_last`` the tail is dropped instead.

    ``num_replicas`` and ``rank`` default to the ``WORLD_SIZE`` and ``RANK`` environment variables that
    launchers set (PyTorch asks its default process group; ``ember.data`` does not depend on
    ``ember.parallel``, so pass them explicitly when no launcher set them).

    >>> from ember.data import DistributedSampler
    >>> [list(DistributedSampler(range(5), num_replicas=2, rank=r, shuffle=False)) for r in (0, 1)]
    [[0, 2, 4], [1, 3, 0]]
    >>> [list(DistributedSampler(range(5), 2, r, shuffle=False, drop_last=True)) for r in (0, 1)]
    [[0, 2], [1, 3]]
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = _from_env("WORLD_SIZE", "num_replicas")
        if rank is None:
            rank = _from_env("RANK", "rank")
        if not isinstance(num_replicas, int) or isinstance(num_replicas, bool) or num_replicas <= 0:
            raise ValueError(f"num_replicas should be a positive integer value, but got num_replicas={num_replicas}")
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self._epoch_set_explicitly = False
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = ember.Generator().manual_seed(self.seed + self.epoch)
            indices = ember.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            del indices[self.total_size:]
        else:  # pad with the start of the list, repeated when there are fewer samples than replicas
            pad = self.total_size - n
            indices += (indices * math.ceil(pad / n))[:pad] if pad > n else indices[:pad]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Use ``epoch`` for the next pass's shuffle (call it before each epoch so that the order changes);
        the DataLoader then leaves the epoch to you."""
        self.epoch = epoch
        self._epoch_set_explicitly = True

    def _next_epoch(self):
        """Advance to the next epoch on the DataLoader's behalf (when the user never calls ``set_epoch``)."""
        self.epoch += 1
