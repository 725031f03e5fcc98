"""Samplers: which indices a map-style dataset is read at, and in what order."""
__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class Sampler:
    pass


class SequentialSampler(Sampler):
    pass


class RandomSampler(Sampler):
    pass


class SubsetRandomSampler(Sampler):
    pass


class WeightedRandomSampler(Sampler):
    pass


class BatchSampler(Sampler):
    pass
