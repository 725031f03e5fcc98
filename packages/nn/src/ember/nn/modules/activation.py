"""Activation modules: ReLU, LeakyReLU, ELU, SELU, CELU, GELU, SiLU, Mish, Tanh, Sigmoid, Softplus, Hardtanh,
ReLU6, Hardsigmoid, Hardswish, LogSigmoid, Softsign, Tanhshrink, Threshold, Hardshrink, Softshrink, GLU, PReLU,
Softmax, LogSoftmax, Softmin; and MultiheadAttention (defined in ``attention``), which PyTorch keeps here, so
``from ember.nn.modules.activation import MultiheadAttention`` works as it does for PyTorch.

>>> import ember
>>> from ember import nn
>>> nn.ReLU(inplace=True), nn.Softmax(dim=1), nn.LeakyReLU(0.2)
(ReLU(inplace=True), Softmax(dim=1), LeakyReLU(negative_slope=0.2))
"""
from __future__ import annotations

import warnings

import ember
from ember import no_grad

from .. import functional as F
from ..parameter import Parameter
from .attention import MultiheadAttention
from .module import Module

__all__ = ["ReLU", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Softplus",
           "Hardtanh", "ReLU6", "Hardsigmoid", "Hardswish", "LogSigmoid", "Softsign", "Tanhshrink", "Threshold",
           "Hardshrink", "Softshrink", "GLU", "PReLU", "Softmax", "LogSoftmax", "Softmin", "MultiheadAttention"]


def _inplace_suffix(inplace: bool, first: bool = False) -> str:
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class _Inplace(Module):
    """An activation whose only option is ``inplace`` (shown only when True, as PyTorch)."""

    _fn = None

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_suffix(self.inplace, first=True)


class _Plain(Module):
    """An activation without options."""

    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class ReLU(_Inplace):
    """``max(x, 0)``.

    >>> import ember
    >>> ember.nn.ReLU()(ember.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """

    _fn = F.relu


class SELU(_Inplace):
    """Scaled ELU with the self-normalising constants.

    >>> import ember
    >>> ember.nn.SELU()(ember.tensor([0.0]))
    tensor([0.])
    """

    _fn = F.selu


class SiLU(_Inplace):
    """``x * sigmoid(x)``.

    >>> import ember
    >>> ember.nn.SiLU(inplace=True)
    SiLU(inplace=True)
    """

    _fn = F.silu


class Mish(_Inplace):
    """``x * tanh(softplus(x))``.

    >>> import ember
    >>> ember.nn.Mish()(ember.tensor([0.0]))
    tensor([0.])
    """

    _fn = F.mish


class ReLU6(_Inplace):
    """``min(max(x, 0), 6)``.

    >>> import ember
    >>> ember.nn.ReLU6()(ember.tensor([-1.0, 8.0]))
    tensor([0., 6.])
    """

    _fn = F.relu6


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``.

    >>> import ember
    >>> ember.nn.Hardsigmoid()(ember.tensor([0.0]))
    tensor([0.5000])
    """

    _fn = F.hardsigmoid

    def extra_repr(self) -> str:
        return ""  # PyTorch shows no options for this one


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``.

    >>> import ember
    >>> ember.nn.Hardswish()(ember.tensor([3.0]))
    tensor([3.])
    """

    _fn = F.hardswish

    def extra_repr(self) -> str:
        return ""  # PyTorch shows no options for this one


class Tanh(_Plain):
    """Hyperbolic tangent.

    >>> import ember
    >>> ember.nn.Tanh()(ember.tensor([0.0]))
    tensor([0.])
    """

    _fn = ember.tanh


class Sigmoid(_Plain):
    """``1 / (1 + exp(-x))``.

    >>> import ember
    >>> ember.nn.Sigmoid()(ember.tensor([0.0]))
    tensor([0.5000])
    """

    _fn = ember.sigmoid


class LogSigmoid(_Plain):
    """``log(sigmoid(x))``.

    >>> import ember
    >>> ember.nn.LogSigmoid()(ember.tensor([0.0]))
    tensor([-0.6931])
    """

    _fn = F.logsigmoid


class Softsign(_Plain):
    """``x / (1 + |x|)``.

    >>> import ember
    >>> ember.nn.Softsign()(ember.tensor([1.0]))
    tensor([0.5000])
    """

    _fn = F.softsign


class Tanhshrink(_Plain):
    """``x - tanh(x)``.

    >>> import ember
    >>> ember.nn.Tanhshrink()(ember.tensor([0.0]))
    tensor([0.])
    """

    _fn = F.tanhshrink


class LeakyReLU(Module):
    """``x`` where positive, else ``negative_slope * x``.

    >>> import ember
    >>> ember.nn.LeakyReLU(0.5)(ember.tensor([-2.0, 2.0]))
    tensor([-1.,  2.])
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_suffix(self.inplace)}"


class ELU(Module):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``.

    >>> import ember
    >>> ember.nn.ELU(alpha=0.5, inplace=True)
    ELU(alpha=0.5, inplace=True)
    """

    _fn = F.elu

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace)}"


class CELU(ELU):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    >>> import ember
    >>> ember.nn.CELU()
    CELU(alpha=1.0)
    """

    _fn = F.celu


class GELU(Module):
    """Gaussian error linear unit; ``approximate='tanh'`` for the tanh formula.

    >>> import ember
    >>> ember.nn.GELU()
    GELU(approximate='none')
    """

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``.

    >>> import ember
    >>> ember.nn.Softplus()
    Softplus(beta=1.0, threshold=20.0)
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """``x`` clipped to ``[min_val, max_val]`` (``min_value``/``max_value`` are PyTorch's deprecated names).

    >>> import ember
    >>> ember.nn.Hardtanh()(ember.tensor([-2.0, 0.5, 2.0]))
    tensor([-1.0000,  0.5000,  1.0000])
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False, min_value=None,
                 max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        if max_val <= min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_suffix(self.inplace)}"


class Threshold(Module):
    """``x`` where greater than ``threshold``, else ``value``.

    >>> import ember
    >>> ember.nn.Threshold(0.1, 20)
    Threshold(threshold=0.1, value=20)
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_suffix(self.inplace)}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0.

    >>> import ember
    >>> ember.nn.Hardshrink()
    Hardshrink(0.5)
    """

    _fn = F.hardshrink

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return type(self)._fn(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """``x`` moved ``lambd`` toward 0, and 0 within ``[-lambd, lambd]``.

    >>> import ember
    >>> ember.nn.Softshrink(1)(ember.tensor([-3.0, 0.5]))
    tensor([-2.,  0.])
    """

    _fn = F.softshrink


class GLU(Module):
    """Gated linear unit: the first half of ``dim`` times the sigmoid of the second half.

    >>> import ember
    >>> ember.nn.GLU()
    GLU(dim=-1)
    """

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """Leaky ReLU with a learnt slope: one shared (``num_parameters=1``) or one per channel, starting at ``init``.

    >>> import ember
    >>> p = ember.nn.PReLU()
    >>> p, p.weight.tolist()
    (PReLU(num_parameters=1), [0.25])
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(ember.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every slope back to ``init``."""
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Softmax(Module):
    """``exp(x) / exp(x).sum(dim)``; without ``dim`` PyTorch's implicit choice applies, with a warning.

    >>> import ember
    >>> ember.nn.Softmax(dim=0)(ember.tensor([0.0, 0.0]))
    tensor([0.5000, 0.5000])
    """

    _fn = F.softmax

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """``log(softmax(x, dim))``, computed stably.

    >>> import ember
    >>> ember.nn.LogSoftmax(dim=1)
    LogSoftmax(dim=1)
    """

    _fn = F.log_softmax


class Softmin(Softmax):
    """``softmax(-x, dim)``.

    >>> import ember
    >>> ember.nn.Softmin(dim=0)(ember.tensor([0.0, 0.0]))
    tensor([0.5000, 0.5000])
    """

    _fn = F.softmin
