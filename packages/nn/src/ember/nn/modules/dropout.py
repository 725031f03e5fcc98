"""Dropout layers: Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout, FeatureAlphaDropout.

Each is active in training mode and the identity in evaluation mode (``eval()``).

>>> import ember
>>> from ember import nn
>>> drop = nn.Dropout(p=0.2)
>>> drop
Dropout(p=0.2, inplace=False)
>>> x = ember.ones(4)
>>> drop.eval()(x) is x
True
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training, scaling the others by ``1 / (1 - p)``.

    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> sorted(set(ember.nn.Dropout(0.5)(ember.ones(100)).tolist()))
    [0.0, 2.0]
    """

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` inputs with probability ``p`` in training.

    >>> import ember
    >>> ember.nn.Dropout1d()(ember.ones(2, 3, 4)).shape
    ember.Size([2, 3, 4])
    """

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)`` or ``(C, H, W)`` inputs with probability ``p`` in training.

    >>> import ember
    >>> ember.nn.Dropout2d()(ember.ones(2, 3, 4, 4)).shape
    ember.Size([2, 3, 4, 4])
    """

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs with probability ``p`` in training.

    >>> import ember
    >>> ember.nn.Dropout3d()(ember.ones(2, 3, 2, 2, 2)).shape
    ember.Size([2, 3, 2, 2, 2])
    """

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps zero mean and unit variance (see ``F.alpha_dropout``).

    >>> import ember
    >>> ember.nn.AlphaDropout(0.3)
    AlphaDropout(p=0.3, inplace=False)
    """

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """:class:`AlphaDropout` of whole channels.

    >>> import ember
    >>> ember.nn.FeatureAlphaDropout()(ember.zeros(2, 3, 4)).shape
    ember.Size([2, 3, 4])
    """

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
