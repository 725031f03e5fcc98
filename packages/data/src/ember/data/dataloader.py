"""``DataLoader``: batches from a dataset, in the main process or in worker processes."""
__all__ = ["DataLoader"]


class DataLoader:
    pass
