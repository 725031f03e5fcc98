"""Distances and similarities: ``normalize``, ``cosine_similarity``, ``pairwise_distance``.

Compositions of differentiable ember ops (``pairwise_distance`` lives in
``ember.ops.loss_embedding``, next to the triplet loss that measures with it).

>>> import ember
>>> import ember.nn.functional as F
>>> F.cosine_similarity(ember.tensor([[1.0, 0.0]]), ember.tensor([[1.0, 1.0]]))
tensor([0.7071])
"""
from __future__ import annotations

from ember.autograd.grad_mode import STATE
from ember.linalg import vector_norm
from ember.ops._common import Tensor, promote, wrap_dim
from ember.ops.loss_common import broadcast_shape
from ember.ops.loss_embedding import pairwise_distance

__all__ = ["normalize", "cosine_similarity", "pairwise_distance"]


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``: unit vectors, and zero vectors left at zero.

    With ``out``, the result is written into that tensor (of the same shape) and returned; as in PyTorch,
    this does not support autograd.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.normalize(ember.tensor([[3.0, 4.0], [0.0, 0.0]]))
    tensor([[0.6000, 0.8000],
            [0.0000, 0.0000]])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"normalize(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if out is not None and input.requires_grad and STATE.enabled:
        raise RuntimeError("div(): functions with out=... arguments don't support automatic differentiation, but "
                           "one of the arguments requires grad.")
    result = input / vector_norm(input, p, dim=dim, keepdim=True).clamp_min(eps)
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        raise RuntimeError(f"normalize(): out has shape {list(out.shape)}, but the result has shape "
                           f"{list(result.shape)}")
    return out.copy_(result)


def _floored(norm, eps):
    """``max(norm, eps)`` in value, with the gradient of ``norm`` itself: PyTorch floors the norms of
    ``cosine_similarity`` in place outside autograd, so the floor does not reach the gradient."""
    fixed = norm.detach()
    return norm + (fixed.clamp_min(eps) - fixed)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` along ``dim``, ``x1`` and ``x2`` broadcast
    together (each norm floored at ``eps`` separately, as in current PyTorch).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.cosine_similarity(ember.tensor([1.0, 0.0]), ember.tensor([-2.0, 0.0]), dim=0)
    tensor(-1.)
    """
    for position, (name, t) in enumerate((("x1", x1), ("x2", x2)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"cosine_similarity(): argument '{name}' (position {position}) must be Tensor, not "
                            f"{type(t).__name__}")
    x1, x2 = promote(x1, x2)
    if not x1._dtype.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{x1._dtype.scalar_type_name}")
    shape = broadcast_shape(x1.shape, x2.shape)
    x1 = x1 if tuple(x1.shape) == shape else x1.expand(shape)
    x2 = x2 if tuple(x2.shape) == shape else x2.expand(shape)
    d = wrap_dim(dim, len(shape))
    n1 = _floored(vector_norm(x1, 2, dim=d, keepdim=True), eps)
    n2 = _floored(vector_norm(x2, 2, dim=d, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(d)
