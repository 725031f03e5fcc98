"""The padding layers (constant, zero, reflection, replication, circular), built on ``F.pad``.

>>> import ember
>>> from ember import nn
>>> nn.ZeroPad2d((1, 1, 2, 0))(ember.ones(1, 2, 2)).shape
ember.Size([1, 4, 4])
"""
from __future__ import annotations

from .. import functional as F
from .module import Module
from .pooling import check_input_rank

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _ntuple(value, n: int) -> tuple:
    """PyTorch's padding argument: an int repeated ``n`` times, or the given sequence as a tuple."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _ConstantPadNd(Module):
    _nd = 1

    def __init__(self, padding, value):
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._nd)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dimension with ``value``: ``padding`` is an int or ``(left, right)``.

    >>> import ember
    >>> from ember import nn
    >>> nn.ConstantPad1d((1, 2), 7.0)(ember.tensor([[1.0]]))
    tensor([[7., 1., 7., 7.]])
    """


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dimensions with ``value``: ``(left, right, top, bottom)`` or one int for all."""

    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dimensions with ``value`` (six amounts, or one int for all)."""

    _nd = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pads the last dimension with zeros."""


class ZeroPad2d(_ZeroPadNd):
    """Pads the last two dimensions with zeros: ``(left, right, top, bottom)`` or one int for all.

    >>> from ember import nn
    >>> nn.ZeroPad2d(2)
    ZeroPad2d((2, 2, 2, 2))
    """

    _nd = 2


class ZeroPad3d(_ZeroPadNd):
    """Pads the last three dimensions with zeros."""

    _nd = 3


class _ModePadNd(Module):
    _nd = 1
    _mode = "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._nd)

    def forward(self, input):
        check_input_rank(self, input, self._nd)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Pads the last dimension with its mirror image (not repeating the edge); amounts below its size.

    >>> import ember
    >>> from ember import nn
    >>> nn.ReflectionPad1d(2)(ember.tensor([[1.0, 2.0, 3.0]]))
    tensor([[3., 2., 1., 2., 3., 2., 1.]])
    """


class ReflectionPad2d(_ModePadNd):
    """Pads the last two dimensions by reflection: ``(left, right, top, bottom)`` or one int for all."""

    _nd = 2


class ReflectionPad3d(_ModePadNd):
    """Pads the last three dimensions by reflection."""

    _nd = 3


class ReplicationPad1d(_ModePadNd):
    """Pads the last dimension by repeating its edge values.

    >>> import ember
    >>> from ember import nn
    >>> nn.ReplicationPad1d((2, 1))(ember.tensor([[1.0, 2.0]]))
    tensor([[1., 1., 1., 2., 2.]])
    """

    _mode = "replicate"


class ReplicationPad2d(_ModePadNd):
    """Pads the last two dimensions by repeating the edges: ``(left, right, top, bottom)`` or one int."""

    _nd = 2
    _mode = "replicate"


class ReplicationPad3d(_ModePadNd):
    """Pads the last three dimensions by repeating the edges."""

    _nd = 3
    _mode = "replicate"


class CircularPad1d(_ModePadNd):
    """Pads the last dimension by wrapping around.

    >>> import ember
    >>> from ember import nn
    >>> nn.CircularPad1d(1)(ember.tensor([[1.0, 2.0, 3.0]]))
    tensor([[3., 1., 2., 3., 1.]])
    """

    _mode = "circular"


class CircularPad2d(_ModePadNd):
    """Pads the last two dimensions by wrapping around."""

    _nd = 2
    _mode = "circular"


class CircularPad3d(_ModePadNd):
    """Pads the last three dimensions by wrapping around."""

    _nd = 3
    _mode = "circular"
