"""``default_collate`` and ``default_convert``: samples into batches, NumPy into tensors."""
__all__ = ["default_collate", "default_convert"]


def default_collate(batch):
    raise NotImplementedError


def default_convert(data):
    raise NotImplementedError
