"""Embedding: a lookup table of ``num_embeddings`` vectors of size ``embedding_dim``.

>>> import ember
>>> from ember import nn
>>> emb = nn.Embedding(10, 3, padding_idx=0)
>>> emb
Embedding(10, 3, padding_idx=0)
>>> emb(ember.tensor([[0, 4]])).shape, emb.weight[0].tolist()
(ember.Size([1, 2, 3]), [0.0, 0.0, 0.0])
"""
from __future__ import annotations

from ember import empty, no_grad

from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding"]


class Embedding(Module):
    """Maps integer indices to rows of ``weight`` (``num_embeddings x embedding_dim``, initialised N(0, 1)).

    ``padding_idx`` (negative counts from the end) names a row that starts at
    zero and gets no gradient; ``max_norm`` renormalises looked-up rows in
    place; ``scale_grad_by_freq`` divides gradients by index counts. ember has
    no sparse tensors: ``sparse=True`` is kept (and shown) but gives a dense
    gradient, which every ember optimizer takes.
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError(f"Padding_idx must be within num_embeddings (got padding_idx={padding_idx} "
                                     f"for {num_embeddings} embeddings)")
            if padding_idx < 0:
                padding_idx += num_embeddings
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(empty((num_embeddings, embedding_dim), device=device, dtype=dtype),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError(f"Shape of weight does not match num_embeddings and embedding_dim (got "
                                     f"{list(_weight.shape)}, expected {[num_embeddings, embedding_dim]})")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """Draw the weight from N(0, 1) again and zero the padding row."""
        with no_grad():
            self.weight.normal_()
            if self.padding_idx is not None:
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is ``embeddings`` (2-D; shared, not copied), frozen unless ``freeze=False``.

        >>> import ember
        >>> emb = ember.nn.Embedding.from_pretrained(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> emb(ember.tensor([1])), emb.weight.requires_grad
        (tensor([[3., 4.]]), False)
        """
        if embeddings.ndim != 2:
            raise AssertionError(f"Embeddings parameter is expected to be 2-dimensional (got shape "
                                 f"{list(embeddings.shape)})")
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)
