"""Activation functions with PyTorch's functional signatures (``inplace=...``, the implicit softmax dim).

The computations are ember-core ops (:mod:`ember.ops.activation`,
:mod:`ember.ops.softmax`); this module adds the functional interface.
``inplace=True`` writes the result into ``input`` (autograd-correct, with
version counting) and returns ``input``.

>>> import ember
>>> import ember.nn.functional as F
>>> x = ember.tensor([-1.0, 2.0])
>>> F.relu(x, inplace=True) is x, x
(True, tensor([0., 2.]))
"""
from __future__ import annotations

import warnings

import ember
from ember.ops import activation as _act
from ember.ops.inplace import apply_inplace

__all__ = ["relu", "relu_", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu",
           "silu", "mish", "hardtanh", "hardtanh_", "relu6", "hardsigmoid", "hardswish", "logsigmoid", "softsign",
           "tanhshrink", "tanh", "sigmoid", "softplus", "threshold", "threshold_", "hardshrink", "softshrink", "glu",
           "prelu", "softmax", "log_softmax", "softmin"]


def _maybe_inplace(input, fn, inplace, saves_input=True):
    """``fn(input)``, or the same written into ``input`` when ``inplace`` (then ``input`` is returned)."""
    if not inplace:
        return fn(input)
    return apply_inplace(input, fn, saves_self=saves_input)


def relu(input, inplace=False):
    """``max(input, 0)``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.relu(ember.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """
    return ember.relu_(input) if inplace else ember.relu(input)


def relu_(input):
    """In-place :func:`relu`."""
    return ember.relu_(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``input`` where positive, else ``negative_slope * input``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.leaky_relu(ember.tensor([-100.0, 1.0]))
    tensor([-1.,  1.])
    """
    return _maybe_inplace(input, lambda t: _act.leaky_relu(t, negative_slope), inplace)


def leaky_relu_(input, negative_slope=0.01):
    """In-place :func:`leaky_relu`."""
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input, alpha=1.0, inplace=False):
    """``input`` where positive, else ``alpha * (exp(input) - 1)``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.elu(ember.tensor([0.0, 1.0]))
    tensor([0., 1.])
    """
    return _maybe_inplace(input, lambda t: _act.elu(t, alpha), inplace)


def elu_(input, alpha=1.0):
    """In-place :func:`elu`."""
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    """Scaled ELU (``scale * elu(input, alpha)`` with SELU's constants).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.selu(ember.tensor([0.0]))
    tensor([0.])
    """
    return _maybe_inplace(input, _act.selu, inplace)


def selu_(input):
    """In-place :func:`selu`."""
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    """``max(0, input) + min(0, alpha * (exp(input / alpha) - 1))``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.celu(ember.tensor([1.0]))
    tensor([1.])
    """
    return _maybe_inplace(input, lambda t: _act.celu(t, alpha), inplace)


def celu_(input, alpha=1.0):
    """In-place :func:`celu`."""
    return celu(input, alpha, inplace=True)


def gelu(input, approximate="none"):
    """Gaussian error linear unit; ``approximate='tanh'`` uses the tanh formula.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.gelu(ember.tensor([0.0]))
    tensor([0.])
    """
    return ember.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    """``input * sigmoid(input)``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.silu(ember.tensor([0.0]))
    tensor([0.])
    """
    return _maybe_inplace(input, ember.silu, inplace)


def mish(input, inplace=False):
    """``input * tanh(softplus(input))``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.mish(ember.tensor([0.0]))
    tensor([0.])
    """
    return _maybe_inplace(input, _act.mish, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``input`` clipped to ``[min_val, max_val]``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.hardtanh(ember.tensor([-2.0, 0.0, 2.0]))
    tensor([-1.,  0.,  1.])
    """
    return _maybe_inplace(input, lambda t: _act.hardtanh(t, min_val, max_val), inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """``min(max(input, 0), 6)``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.relu6(ember.tensor([-1.0, 7.0]))
    tensor([0., 6.])
    """
    return _maybe_inplace(input, _act.relu6, inplace)


def hardsigmoid(input, inplace=False):
    """``relu6(input + 3) / 6``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.hardsigmoid(ember.tensor([0.0]))
    tensor([0.5000])
    """
    return _maybe_inplace(input, _act.hardsigmoid, inplace)


def hardswish(input, inplace=False):
    """``input * relu6(input + 3) / 6``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.hardswish(ember.tensor([3.0]))
    tensor([3.])
    """
    return _maybe_inplace(input, _act.hardswish, inplace)


logsigmoid = _act.logsigmoid
softsign = _act.softsign
tanhshrink = _act.tanhshrink
glu = _act.glu
prelu = _act.prelu
hardshrink = _act.hardshrink
softshrink = _act.softshrink


def tanh(input):
    """Hyperbolic tangent (the same as :func:`ember.tanh`).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.tanh(ember.tensor([0.0]))
    tensor([0.])
    """
    return ember.tanh(input)


def sigmoid(input):
    """The logistic function (the same as :func:`ember.sigmoid`).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.sigmoid(ember.tensor([0.0]))
    tensor([0.5000])
    """
    return ember.sigmoid(input)


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002 - PyTorch's argument name
    """``log(1 + exp(beta * input)) / beta``, linear where ``beta * input > threshold``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.softplus(ember.tensor([0.0]), beta=2.0)
    tensor([0.3466])
    """
    return ember.softplus(input, beta=beta, threshold=threshold)


def threshold(input, threshold, value, inplace=False):  # noqa: A002 - PyTorch's argument names
    """``input`` where greater than ``threshold``, else ``value``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.threshold(ember.tensor([0.0, 2.0]), 1.0, 5.0)
    tensor([5., 2.])
    """
    return _maybe_inplace(input, lambda t: _act.threshold(t, threshold, value), inplace)


def threshold_(input, threshold, value):  # noqa: A002 - PyTorch's argument names
    """In-place :func:`threshold`."""
    return _act.threshold_(input, threshold, value)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  "an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(input) / exp(input).sum(dim)``. Without ``dim``, PyTorch's old rule picks one (0 for 0-, 1- and
    3-d inputs, else 1) and warns.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.softmax(ember.tensor([2.0, 1.0, 3.0, 4.0]), dim=0)
    tensor([0.0871, 0.0321, 0.2369, 0.6439])
    """
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return ember.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``log(softmax(input, dim))``, computed stably; the implicit ``dim`` rule is :func:`softmax`'s.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.log_softmax(ember.tensor([0.0, 0.0]), dim=0).exp()
    tensor([0.5000, 0.5000])
    """
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return ember.log_softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-input, dim)``; the implicit ``dim`` rule is :func:`softmax`'s.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.softmin(ember.tensor([0.0, 0.0]), dim=0)
    tensor([0.5000, 0.5000])
    """
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return ember.softmax(-input, dim)
