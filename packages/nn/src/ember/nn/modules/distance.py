"""Distance modules: ``PairwiseDistance`` and ``CosineSimilarity`` (wrappers over ``ember.nn.functional``).

>>> import ember
>>> from ember.nn.modules.distance import CosineSimilarity, PairwiseDistance
>>> PairwiseDistance(eps=0.0)(ember.tensor([[3.0, 4.0]]), ember.tensor([[0.0, 0.0]]))
tensor([5.])
>>> CosineSimilarity(dim=0)(ember.tensor([1.0, 1.0]), ember.tensor([2.0, 2.0]))
tensor(1.0000)
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dimension (see ``F.pairwise_distance``); PyTorch keeps
    ``p`` as the attribute ``norm``."""

    def __init__(self, p: float = 2.0, eps: float = 1e-06, keepdim: bool = False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (see ``F.cosine_similarity``)."""

    def __init__(self, dim: int = 1, eps: float = 1e-08):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
