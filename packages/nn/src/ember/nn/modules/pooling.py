"""Pooling layers: max, average and adaptive pooling over one or two dimensions.

Each layer keeps its arguments as given (as PyTorch does: ``MaxPool2d(2)``
has ``kernel_size=2`` and ``stride=2``) and calls the matching function of
``ember.nn.functional``.

>>> import ember
>>> from ember import nn
>>> nn.MaxPool2d(2)
MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
>>> nn.MaxPool2d(2)(ember.ones(1, 3, 8, 8)).shape
ember.Size([1, 3, 4, 4])
>>> nn.AdaptiveAvgPool2d((None, 1))(ember.ones(2, 3, 5, 7)).shape
ember.Size([2, 3, 5, 1])
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"]

_LAYOUTS = {1: "2D (C, L) or 3D (N, C, L)", 2: "3D (C, H, W) or 4D (N, C, H, W)",
            3: "4D (C, D, H, W) or 5D (N, C, D, H, W)"}


def check_input_rank(layer: Module, input, nd: int) -> None:
    """Raise naming the layer when ``input`` is not a batched or unbatched input of ``nd`` spatial dimensions."""
    if getattr(input, "ndim", None) not in (nd + 1, nd + 2):
        shape = list(input.shape) if hasattr(input, "shape") else type(input).__name__
        raise RuntimeError(f"{type(layer).__name__}: expected a {_LAYOUTS[nd]} input, but got input of shape {shape}")


def _single(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class _MaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max pooling over the last dimension of ``(N, C, L)`` or ``(C, L)`` inputs (see ``F.max_pool1d``).

    >>> import ember
    >>> from ember import nn
    >>> nn.MaxPool1d(2, return_indices=True)(ember.tensor([[3.0, 1.0, 0.0, 4.0]]))
    (tensor([[3., 4.]]), tensor([[0, 3]]))
    """

    _nd = 1

    def forward(self, input):
        check_input_rank(self, input, 1)
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Max pooling over the last two dimensions of ``(N, C, H, W)`` or ``(C, H, W)`` inputs (``F.max_pool2d``).

    >>> import ember
    >>> from ember import nn
    >>> nn.MaxPool2d(3, stride=2, padding=1)(ember.ones(2, 4, 7, 7)).shape
    ember.Size([2, 4, 4, 4])
    """

    def forward(self, input):
        check_input_rank(self, input, 2)
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """Average pooling over the last dimension (``F.avg_pool1d``); sizes are kept as 1-tuples, as PyTorch does.

    >>> import ember
    >>> from ember import nn
    >>> nn.AvgPool1d(2)
    AvgPool1d(kernel_size=(2,), stride=(2,), padding=(0,))
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        check_input_rank(self, input, 1)
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """Average pooling over the last two dimensions (``F.avg_pool2d``).

    >>> import ember
    >>> from ember import nn
    >>> nn.AvgPool2d(2, divisor_override=1)(ember.ones(1, 2, 2))
    tensor([[[4.]]])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        check_input_rank(self, input, 2)
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptivePoolNd(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """Average pooling to ``output_size`` positions (``F.adaptive_avg_pool1d``).

    >>> import ember
    >>> from ember import nn
    >>> nn.AdaptiveAvgPool1d(1)(ember.tensor([[1.0, 2.0, 6.0]]))
    tensor([[3.]])
    """

    def forward(self, input):
        check_input_rank(self, input, 1)
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Average pooling to an ``output_size`` plane; ``None`` keeps that size (``F.adaptive_avg_pool2d``).

    >>> import ember
    >>> from ember import nn
    >>> nn.AdaptiveAvgPool2d((1, 1))(ember.ones(4, 8, 3, 3)).shape
    ember.Size([4, 8, 1, 1])
    """

    def forward(self, input):
        check_input_rank(self, input, 2)
        return F.adaptive_avg_pool2d(input, self.output_size)


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to ``output_size`` positions (``F.adaptive_max_pool1d``).

    >>> import ember
    >>> from ember import nn
    >>> nn.AdaptiveMaxPool1d(1)(ember.tensor([[1.0, 7.0, 6.0]]))
    tensor([[7.]])
    """

    def forward(self, input):
        check_input_rank(self, input, 1)
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to an ``output_size`` plane (``F.adaptive_max_pool2d``).

    >>> import ember
    >>> from ember import nn
    >>> nn.AdaptiveMaxPool2d(2, return_indices=True)(ember.arange(16.0).reshape(1, 4, 4))[1]
    tensor([[[ 5,  7],
             [13, 15]]])
    """

    def forward(self, input):
        check_input_rank(self, input, 2)
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)
