"""``embedding`` (a lookup of rows of a weight matrix, with ``padding_idx`` and ``max_norm``) and ``one_hot``.

>>> import ember
>>> from ember.ops.embedding import embedding, one_hot
>>> embedding(ember.tensor([2, 0]), ember.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]))
tensor([[4., 5.],
        [0., 1.]])
>>> one_hot(ember.tensor([0, 2]))
tensor([[1, 0, 0],
        [0, 0, 1]])
"""
from __future__ import annotations

import numbers

from .. import _dtype as dt
from ..autograd.function import Op
from ..autograd.grad_mode import no_grad
from ._common import Tensor
from .creation import arange, ones, zeros
from .gather import IndexAdd
from .shape import where

__all__ = ["embedding", "one_hot"]


class Embedding(Op):
    """Rows ``indices`` of ``weight``; the gradient adds each output row back into its weight row."""

    name_ = "embedding"

    @staticmethod
    def forward(ctx, xp, weight, indices, padding_idx=-1, scale_grad_by_freq=False):
        flat = xp.reshape(indices, (-1,))
        ctx.flat, ctx.rows, ctx.padding_idx, ctx.by_freq = flat, weight.shape[0], padding_idx, scale_grad_by_freq
        rows = xp.take(weight, flat, axis=0)
        return xp.reshape(rows, tuple(indices.shape) + tuple(weight.shape[1:]))

    @staticmethod
    def backward(ctx, g):
        flat = ctx.flat
        shape = (ctx.rows,) + tuple(g.shape[g.ndim - 1:])
        g_rows = g.reshape((flat.shape[0],) + shape[1:])
        gw = IndexAdd.apply(zeros(shape, dtype=g.dtype, device=g.device), g_rows, index=flat, dim=0)
        if ctx.by_freq:  # each row's gradient is divided by how often it was looked up
            with no_grad():
                counts = IndexAdd.apply(zeros(ctx.rows, dtype=g.dtype, device=g.device),
                                        ones(flat.shape[0], dtype=g.dtype, device=g.device), index=flat, dim=0)
            gw = gw / counts.clamp_min(1).unsqueeze(1)
        if ctx.padding_idx >= 0:
            keep = (arange(ctx.rows, device=g.device) != ctx.padding_idx).to(g.dtype).unsqueeze(1)
            gw = gw * keep
        return gw, None


def _check_indices(input, weight, fn):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input._dtype.scalar_type_name} tensor instead (while checking "
                           f"arguments for {fn})")
    if not isinstance(weight, Tensor):
        raise TypeError(f"{fn}(): argument 'weight' (position 2) must be Tensor, not {type(weight).__name__}")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D (got a {weight.ndim}-D weight of shape {list(weight.shape)})")
    if input.numel():
        lo, hi = int(input.min()), int(input.max())
        if lo < 0 or hi >= weight.shape[0]:
            raise IndexError(f"index out of range in self (index {hi if hi >= weight.shape[0] else lo} for "
                             f"{weight.shape[0]} embeddings)")


def _renorm_rows(weight, input, max_norm, norm_type):
    """Scale the rows of ``weight`` looked up by ``input`` whose ``norm_type``-norm exceeds ``max_norm`` down to
    norm ``max_norm``, in place and without recording."""
    with no_grad():
        idx = input.reshape(-1)
        rows = weight.index_select(0, idx)
        norms = rows.norm(p=norm_type, dim=1, keepdim=True)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_put_((idx,), rows * scale)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Look up rows of ``weight`` (``num_embeddings x embedding_dim``) at the integer indices ``input``.

    The row ``padding_idx`` (negative counts from the end) gets no gradient.
    With ``max_norm``, looked-up rows with a larger ``norm_type``-norm are
    renormalised to ``max_norm`` *in place* in ``weight`` before the lookup;
    ``scale_grad_by_freq`` divides each row's gradient by its count in
    ``input``. ember has no sparse tensors: ``sparse=True`` is accepted and
    gives the same gradient, as a dense tensor (optimizers treat it the same).

    >>> import ember
    >>> from ember.ops.embedding import embedding
    >>> w = ember.tensor([[3.0, 4.0], [0.3, 0.4]], requires_grad=True)
    >>> embedding(ember.tensor([[0, 1, 1]]), w, padding_idx=0).sum().backward()
    >>> w.grad
    tensor([[0., 0.],
            [2., 2.]])
    """
    _check_indices(input, weight, "embedding")
    rows = weight.shape[0]
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx >= rows or padding_idx < -rows:
        raise AssertionError(f"Padding_idx must be within num_embeddings (got padding_idx={padding_idx} for "
                             f"{rows} embeddings)")
    elif padding_idx < 0:
        padding_idx += rows
    if max_norm is not None:
        _renorm_rows(weight, input, float(max_norm), float(norm_type))
    return Embedding.apply(weight, input, padding_idx=int(padding_idx), scale_grad_by_freq=bool(scale_grad_by_freq))


class OneHot(Op):
    name_ = "one_hot"

    @staticmethod
    def forward(ctx, xp, a, num_classes=0):
        classes = xp.arange(num_classes, dtype=a.dtype)
        return xp.astype(xp.reshape(a, tuple(a.shape) + (1,)) == classes, a.dtype)


def one_hot(tensor, num_classes=-1):
    """An int64 tensor with a new last dimension of size ``num_classes``: 1 at each value of ``tensor``, else 0.

    ``num_classes=-1`` takes one more than the largest value.

    >>> import ember
    >>> from ember.ops.embedding import one_hot
    >>> one_hot(ember.tensor([1, 0]), num_classes=3)
    tensor([[0, 1, 0],
            [1, 0, 0]])
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot(): argument 'input' (position 1) must be Tensor, not {type(tensor).__name__}")
    if tensor._dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if not isinstance(num_classes, numbers.Integral) or isinstance(num_classes, bool):
        raise TypeError(f"one_hot(): argument 'num_classes' (position 2) must be int, not "
                        f"{type(num_classes).__name__}")
    if tensor.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return OneHot.apply(tensor, num_classes=int(num_classes))
    lo, hi = int(tensor.min()), int(tensor.max())
    if lo < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = hi + 1
    elif hi >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return OneHot.apply(tensor, num_classes=int(num_classes))
