"""Identity, Linear, Bilinear.

>>> import ember
>>> from ember import nn
>>> fc = nn.Linear(4, 3)
>>> fc, fc.weight.shape, fc.bias.shape
(Linear(in_features=4, out_features=3, bias=True), ember.Size([3, 4]), ember.Size([3]))
>>> fc(ember.ones(2, 4)).shape
ember.Size([2, 3])
"""
from __future__ import annotations

import math

from ember import empty, no_grad

from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear"]


def _uniform_(t, bound):
    with no_grad():
        t.uniform_(-bound, bound)


class Identity(Module):
    """Returns its input; takes (and ignores) any arguments, so it can stand in for another layer.

    >>> import ember
    >>> x = ember.ones(2)
    >>> ember.nn.Identity(54, unused="x")(x) is x
    True
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` on the last dimension of ``x``.

    ``weight`` is ``(out_features, in_features)`` and, like ``bias``, starts
    uniform in ``(-1/sqrt(in_features), 1/sqrt(in_features))`` (PyTorch's
    ``kaiming_uniform_(a=sqrt(5))``).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the weight and bias again from PyTorch's default distribution."""
        bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
        _uniform_(self.weight, bound)
        if self.bias is not None:
            _uniform_(self.bias, bound)

    def forward(self, input):
        try:
            return F.linear(input, self.weight, self.bias)
        except RuntimeError as exc:
            if "shapes cannot be multiplied" in str(exc):
                raise RuntimeError(f"{self!r}: expected input with last dimension {self.in_features}, got shape "
                                   f"{input.shape} ({exc})") from None
            raise

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """A :class:`Linear` under the class name PyTorch gives ``MultiheadAttention.out_proj`` (it shows in repr;
    PyTorch uses the class to keep dynamic quantization away from that layer, ember has no quantization).

    >>> from ember.nn.modules.linear import NonDynamicallyQuantizableLinear
    >>> NonDynamicallyQuantizableLinear(4, 2)
    NonDynamicallyQuantizableLinear(in_features=4, out_features=2, bias=True)
    """


class Bilinear(Module):
    """``y[..., o] = x1[..., i] * weight[o, i, j] * x2[..., j] + bias[o]``; ``weight`` is ``(out, in1, in2)``.

    >>> import ember
    >>> ember.nn.Bilinear(3, 4, 5)(ember.ones(2, 3), ember.ones(2, 4)).shape
    ember.Size([2, 5])
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight and bias uniform in ``(-1/sqrt(in1_features), 1/sqrt(in1_features))``, as PyTorch."""
        bound = 1 / math.sqrt(self.in1_features) if self.in1_features > 0 else 0
        _uniform_(self.weight, bound)
        if self.bias is not None:
            _uniform_(self.bias, bound)

    def forward(self, input1, input2):
        for which, x, size in (("input1", input1, self.in1_features), ("input2", input2, self.in2_features)):
            if x.dim() == 0 or x.shape[-1] != size:
                raise RuntimeError(f"{self!r}: expected {which} with last dimension {size}, got shape {x.shape}")
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
