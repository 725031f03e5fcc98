"""Named tuples that ops return, as ``torch.return_types``: ``max``, ``min``, ``sort``, ``topk``, ``kthvalue``,
``median``, ``nanmedian`` (``values``, ``indices``) and the ``linalg_*`` results of ``ember.linalg``.

>>> import ember
>>> r = ember.tensor([[1, 5], [7, 2]]).max(dim=1)
>>> r.values, r.indices
(tensor([5, 7]), tensor([1, 0]))
"""
from __future__ import annotations

import collections

__all__ = ["max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "aminmax", "linalg_qr", "linalg_eigh",
           "linalg_svd", "linalg_slogdet", "make"]


def make(name: str, fields=("values", "indices")):
    """A named tuple class ``ember.return_types.<name>`` that prints as PyTorch's does."""
    cls = collections.namedtuple(name, fields)
    cls.__module__ = __name__
    cls.__qualname__ = name

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"ember.return_types.{name}(\n{body})"

    cls.__repr__ = __repr__
    return cls


max = make("max")  # noqa: A001 - PyTorch's name
min = make("min")  # noqa: A001
sort = make("sort")
topk = make("topk")
kthvalue = make("kthvalue")
median = make("median")
nanmedian = make("nanmedian")
aminmax = make("aminmax", ("min", "max"))
linalg_qr = make("linalg_qr", ("Q", "R"))
linalg_eigh = make("linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_svd = make("linalg_svd", ("U", "S", "Vh"))
linalg_slogdet = make("linalg_slogdet", ("sign", "logabsdet"))
