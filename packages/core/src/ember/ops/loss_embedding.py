"""Losses on pairs and triplets of embeddings: ``margin_ranking_loss``, ``cosine_embedding_loss``,
``triplet_margin_loss``; and ``pairwise_distance``, which the triplet loss measures with (``ember.nn.functional``
exports it).

All are compositions of differentiable ember ops.

>>> import ember
>>> import ember.nn.functional as F
>>> F.margin_ranking_loss(ember.tensor([1.0]), ember.tensor([2.0]), ember.tensor([1.0]))
tensor(1.)
"""
from __future__ import annotations

from ..linalg._norms import vector_norm
from .binary_math import minimum
from .loss_common import check_tensor, float_pair, get_reduction, reduce_tensor
from .shape import where

__all__ = ["margin_ranking_loss", "cosine_embedding_loss", "triplet_margin_loss"]

#: added to each squared norm in cosine_embedding_loss (PyTorch's value), so zero vectors give cos = 0
_COSINE_EPS = 1e-12


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dimension (``x1`` and ``x2`` broadcast together).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.pairwise_distance(ember.tensor([[3.0, 4.0]]), ember.tensor([[0.0, 0.0]]), eps=0.0)
    tensor([5.])
    """
    check_tensor("pairwise_distance", "x1", 1, x1)
    check_tensor("pairwise_distance", "x2", 2, x2)
    diff = x1 - x2 + eps
    if diff._data.ndim == 0:
        return vector_norm(diff, p)
    return vector_norm(diff, p, dim=-1, keepdim=keepdim)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``: ``target`` 1 asks ``input1`` to rank higher than
    ``input2`` by ``margin``, -1 the other way round.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.margin_ranking_loss(ember.tensor([3.0, 3.0]), ember.tensor([1.0, 1.0]), ember.tensor([1.0, -1.0]),
    ...                       reduction="none")
    tensor([0., 2.])
    """
    reduction = get_reduction(reduction, size_average, reduce)
    check_tensor("margin_ranking_loss", "target", 3, target)
    input1, input2 = float_pair("margin_ranking_loss", input1, input2, names=("input1", "input2"))
    if not input1._data.ndim == input2._data.ndim == target._data.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return reduce_tensor((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(input1, input2)`` where ``target`` is 1 and ``max(0, cos - margin)`` where it is -1 (0
    elsewhere); ``target`` is ``(N,)`` for ``(N, D)`` inputs or 0-dim for ``(D,)`` inputs.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> x = ember.tensor([[1.0, 0.0], [1.0, 0.0]])
    >>> F.cosine_embedding_loss(x, ember.tensor([[0.0, 1.0], [1.0, 0.0]]), ember.tensor([1.0, -1.0]),
    ...                         reduction="none")
    tensor([1., 1.])
    """
    reduction = get_reduction(reduction, size_average, reduce)
    check_tensor("cosine_embedding_loss", "target", 3, target)
    input1, input2 = float_pair("cosine_embedding_loss", input1, input2, names=("input1", "input2"))
    tnd = target._data.ndim
    if tnd > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1._data.ndim != tnd + 1 or input2._data.ndim != tnd + 1:
        raise RuntimeError(f"{tnd}D target tensor expects {tnd + 1}D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    dim = tnd  # the feature dimension
    dot = (input1 * input2).sum(dim)
    squares = ((input1 * input1).sum(dim) + _COSINE_EPS) * ((input2 * input2).sum(dim) + _COSINE_EPS)
    cos = dot / squares.sqrt()
    losses = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return reduce_tensor(losses, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(0, d(anchor, positive) - d(anchor, negative) + margin)`` with ``d`` the ``pairwise_distance``;
    ``swap`` uses the smaller of ``d(anchor, negative)`` and ``d(positive, negative)``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> a = ember.tensor([[0.0, 0.0]])
    >>> F.triplet_margin_loss(a, ember.tensor([[3.0, 4.0]]), ember.tensor([[0.0, 1.0]]), eps=0.0)
    tensor(5.)
    """
    reduction = get_reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    for position, (name, t) in enumerate((("anchor", anchor), ("positive", positive), ("negative", negative)), 1):
        check_tensor("triplet_margin_loss", name, position, t)
    dims = [t._data.ndim for t in (anchor, positive, negative)]
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D "
                           f"inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return reduce_tensor((margin + d_pos - d_neg).clamp_min(0), reduction)
