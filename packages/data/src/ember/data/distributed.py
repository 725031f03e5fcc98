"""``DistributedSampler``: each process of a distributed job reads its own share of the dataset."""
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    pass
