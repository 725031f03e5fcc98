"""Convolution layers: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d.

Same constructor arguments, attributes, parameter shapes and default
initialisation as PyTorch: ``weight`` is ``[out_channels, in_channels/groups,
*kernel_size]`` (``[in_channels, out_channels/groups, *kernel_size]`` for the
transposed layers) and, like ``bias``, starts uniform in
``(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in = weight.shape[1] * prod(kernel_size)``
(PyTorch's ``kaiming_uniform_(a=sqrt(5))``).

>>> import ember
>>> from ember import nn
>>> conv = nn.Conv2d(1, 32, 3, 1)
>>> conv
Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1))
>>> conv.weight.shape, conv(ember.ones(64, 1, 28, 28)).shape
(ember.Size([32, 1, 3, 3]), ember.Size([64, 32, 26, 26]))
"""
from __future__ import annotations

import math

from ember import empty, no_grad

from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
_SPATIAL = {1: "L", 2: "H, W"}


def _ntuple(value, n, name):
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    value = tuple(value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {value}")
    return value


class _ConvNd(Module):
    """What the convolution layers share: arguments, parameters, initialisation, ``extra_repr``, input checks."""

    _nd = 0
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, groups,
                 bias, padding_mode, device, dtype):
        super().__init__()
        nd, name = self._nd, type(self).__name__
        if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {{'zeros', 'reflect', 'replicate', 'circular'}}, but got "
                             f"padding_mode='{padding_mode}'")
        if self.transposed and padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {name}')
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size")
        self.stride = _ntuple(stride, nd, "stride")
        self.dilation = _ntuple(dilation, nd, "dilation")
        self.output_padding = _ntuple(output_padding, nd, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        self.padding = self._padding(padding)
        self._reversed_padding_repeated_twice = self._reversed_padding()
        self._check_geometry()
        if self.transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _check_geometry(self):
        """Raise at construction what PyTorch raises only at the first call (same type and words), naming the
        layer and the argument: a zero kernel, stride or dilation, or a negative padding."""
        name = type(self).__name__
        checks = [("kernel size should be greater than zero", "kernel_size", self.kernel_size, 1),
                  ("non-positive stride is not supported", "stride", self.stride, 1),
                  ("dilation should be greater than zero", "dilation", self.dilation, 1)]
        if not isinstance(self.padding, str):
            checks.append(("negative padding is not supported", "padding", self.padding, 0))
        for words, arg, values, least in checks:
            if min(values) < least:
                raise RuntimeError(f"{name}: {words}, but got {arg}={values}")

    def _padding(self, padding):
        if not isinstance(padding, str):
            return _ntuple(padding, self._nd, "padding")
        if self.transposed:
            raise ValueError(f"padding='{padding}' is not supported by {type(self).__name__}: give the padding as "
                             "an int or a tuple of ints")
        if padding not in ("valid", "same"):
            raise ValueError(f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}")
        if padding == "same" and any(s != 1 for s in self.stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        return padding

    def _reversed_padding(self):
        """Padding for ``F.pad`` (last dimension first, before/after pairs), as PyTorch keeps it."""
        if self.padding == "valid":
            return [0, 0] * self._nd
        pads = []
        for i in reversed(range(self._nd)):
            if self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                pads += [total // 2, total - total // 2]
            else:
                pads += [self.padding[i], self.padding[i]]
        return pads

    def reset_parameters(self) -> None:
        """Weight and bias uniform in ``(-1/sqrt(fan_in), 1/sqrt(fan_in))`` (PyTorch's default)."""
        fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        with no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def extra_repr(self) -> str:
        nd = self._nd
        parts = [f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"]
        if self.padding != (0,) * nd:
            parts.append(f"padding={self.padding}")
        if self.dilation != (1,) * nd:
            parts.append(f"dilation={self.dilation}")
        if self.output_padding != (0,) * nd:
            parts.append(f"output_padding={self.output_padding}")
        if self.groups != 1:
            parts.append(f"groups={self.groups}")
        if self.bias is None:
            parts.append("bias=False")
        if self.padding_mode != "zeros":
            parts.append(f"padding_mode={self.padding_mode}")
        return ", ".join(parts)

    def _check_input(self, input):
        """The layer's own error for a wrong rank or channel count: names the layer and both shapes."""
        nd = self._nd
        shape = tuple(getattr(input, "shape", ()))
        if len(shape) in (nd + 1, nd + 2) and shape[-nd - 1] == self.in_channels:
            return
        spatial = _SPATIAL[nd]
        raise RuntimeError(f"{self!r} expects input of shape [N, {self.in_channels}, {spatial}] or "
                           f"[{self.in_channels}, {spatial}], but got input of size {list(shape)}")


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, 0, groups, bias,
                         padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        conv = F.conv1d if self._nd == 1 else F.conv2d
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        self._check_input(input)
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over ``(N, C_in, L)`` or ``(C_in, L)`` inputs (see :func:`ember.nn.functional.conv1d`).

    >>> import ember
    >>> ember.nn.Conv1d(4, 8, 3, padding="same")(ember.ones(2, 4, 10)).shape
    ember.Size([2, 8, 10])
    """

    _nd = 1


class Conv2d(_Conv):
    """2-D convolution over ``(N, C_in, H, W)`` or ``(C_in, H, W)`` inputs (see :func:`ember.nn.functional.conv2d`).

    >>> import ember
    >>> conv = ember.nn.Conv2d(4, 8, (3, 5), stride=2, padding=(1, 2), groups=2, bias=False)
    >>> conv
    Conv2d(4, 8, kernel_size=(3, 5), stride=(2, 2), padding=(1, 2), groups=2, bias=False)
    >>> conv.weight.shape, conv(ember.ones(1, 4, 9, 9)).shape
    (ember.Size([8, 2, 3, 5]), ember.Size([1, 8, 5, 5]))
    """

    _nd = 2


class _ConvTranspose(_ConvNd):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, groups,
                         bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        """The output padding that gives ``output_size`` (PyTorch's rule and message)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        output_size = list(output_size)
        if len(output_size) == nd + 2:
            output_size = output_size[2:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have {nd} or {nd + 2} "
                             f"elements (got {len(output_size)})")
        spatial = tuple(input.shape[-nd:])
        smallest = [(n - 1) * s - 2 * p + d * (k - 1) + 1
                    for n, s, p, d, k in zip(spatial, self.stride, self.padding, self.dilation, self.kernel_size)]
        largest = [m + s - 1 for m, s in zip(smallest, self.stride)]
        if any(not lo <= want <= hi for lo, want, hi in zip(smallest, output_size, largest)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {smallest} to "
                             f"{largest} (for an input of {input.shape[-nd:]})")
        return tuple(want - lo for want, lo in zip(output_size, smallest))

    def forward(self, input, output_size=None):
        self._check_input(input)
        output_padding = self._output_padding(input, output_size)
        conv = F.conv_transpose1d if self._nd == 1 else F.conv_transpose2d
        return conv(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                    self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution (see :func:`ember.nn.functional.conv_transpose1d`); ``forward`` takes an
    optional ``output_size`` that picks the output padding.

    >>> import ember
    >>> ember.nn.ConvTranspose1d(4, 2, 3, stride=2)(ember.ones(1, 4, 5), output_size=[12]).shape
    ember.Size([1, 2, 12])
    """

    _nd = 1


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution (see :func:`ember.nn.functional.conv_transpose2d`); ``forward`` takes an
    optional ``output_size`` that picks the output padding.

    >>> import ember
    >>> up = ember.nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
    >>> up
    ConvTranspose2d(8, 4, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1))
    >>> up.weight.shape, up(ember.ones(1, 8, 5, 5)).shape
    (ember.Size([8, 4, 3, 3]), ember.Size([1, 4, 10, 10]))
    """

    _nd = 2
