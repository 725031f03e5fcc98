"""Datasets: map style (``Dataset``) and iterable style (``IterableDataset``), and the ways to combine them."""
__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]


class Dataset:
    pass


class IterableDataset(Dataset):
    pass


class TensorDataset(Dataset):
    pass


class StackDataset(Dataset):
    pass


class ConcatDataset(Dataset):
    pass


class ChainDataset(IterableDataset):
    pass


class Subset(Dataset):
    pass


def random_split(dataset, lengths, generator=None):
    raise NotImplementedError
