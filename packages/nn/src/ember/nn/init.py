"""Weight initialisation: fill a tensor in place, outside autograd, from ember's generator (``ember.manual_seed``,
or the ``generator`` given), with PyTorch's names, arguments and scaling rules.

>>> import ember
>>> from ember import nn
>>> w = ember.empty(256, 128)
>>> _ = ember.manual_seed(0)
>>> nn.init.kaiming_uniform_(w, nonlinearity='relu') is w
True
>>> bound = nn.init.calculate_gain('relu') * (3 / 128) ** 0.5
>>> bool(w.abs().max() <= bound)
True
"""
from __future__ import annotations

import functools
import math
import warnings

import ember

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended scale for weights feeding ``nonlinearity``: 1 for linear layers, convolutions and
    sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for leaky_relu (``param`` is the
    negative slope, 0.01 by default), 3/4 for selu.

    >>> from ember.nn.init import calculate_gain
    >>> calculate_gain('tanh'), calculate_gain('leaky_relu', 0.2)
    (1.6666666666666667, 1.3867504905630728)
    """
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4  # found empirically to keep activations' scale (PyTorch's value)
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill ``tensor`` with values drawn uniformly from ``[a, b)``."""
    with ember.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill ``tensor`` with values drawn from ``N(mean, std**2)``."""
    with ember.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _norm_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None):
    """Fill ``tensor`` with values from ``N(mean, std**2)`` conditioned on lying in ``[a, b]``.

    Exact rejection sampling: draws outside ``[a, b]`` are drawn again; when
    ``[a, b]`` holds little of the normal's mass, candidates come uniformly from
    ``[a, b]`` and are kept with probability proportional to the density.

    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> w = ember.nn.init.trunc_normal_(ember.empty(1000), std=1.0, a=-0.5, b=0.5)
    >>> bool((w.abs() <= 0.5).all())
    True
    """
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)
    with ember.no_grad():
        mass = _norm_cdf((b - mean) / std) - _norm_cdf((a - mean) / std)
        if mass > 0.3:
            tensor.normal_(mean, std, generator=generator)
            while True:
                outside = (tensor < a) | (tensor > b)
                if not outside.any():
                    return tensor
                fresh = ember.empty_like(tensor).normal_(mean, std, generator=generator)
                tensor.copy_(ember.where(outside, fresh, tensor))
        peak = max(a, min(mean, b))  # where the density is highest within [a, b]
        log_peak = -0.5 * ((peak - mean) / std) ** 2

        def rejected(candidates):
            log_ratio = ((candidates - mean) / std) ** 2 * -0.5 - log_peak
            return ember.empty_like(candidates).uniform_(generator=generator).log() > log_ratio

        tensor.uniform_(a, b, generator=generator)
        pending = rejected(tensor)
        while pending.any():
            candidates = ember.empty_like(tensor).uniform_(a, b, generator=generator)
            tensor.copy_(ember.where(pending, candidates, tensor))
            pending = pending & rejected(candidates)
    return tensor


def constant_(tensor, val: float):
    """Fill ``tensor`` with ``val``."""
    with ember.no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill ``tensor`` with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill ``tensor`` with zeros."""
    with ember.no_grad():
        return tensor.zero_()


def eye_(tensor):
    """Fill the 2-D ``tensor`` with the identity (ones on the diagonal, zeros elsewhere).

    >>> import ember
    >>> ember.nn.init.eye_(ember.empty(2, 3))
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with ember.no_grad():
        return tensor.copy_(ember.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor, groups: int = 1):
    """Fill a 3-, 4- or 5-D convolution weight with the Dirac delta: the convolution passes its input
    channels through unchanged (per group, as many channels as both sides have).

    >>> import ember
    >>> w = ember.nn.init.dirac_(ember.empty(2, 2, 3))
    >>> w[:, :, 1]
    tensor([[1., 0.],
            [0., 1.]])
    """
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    center = tuple(s // 2 for s in sizes[2:])
    with ember.no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min(per_group, sizes[1])):
                tensor[(g * per_group + d, d) + center] = 1
    return tensor


def _calculate_fan_in_and_fan_out(tensor) -> tuple:
    """``(fan_in, fan_out)`` of a weight: ``in * receptive field`` and ``out * receptive field`` (``[out, in, *k]``).

    >>> import ember
    >>> ember.nn.init._calculate_fan_in_and_fan_out(ember.empty(16, 3, 5, 5))
    (75, 400)
    """
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor, mode: str) -> int:
    mode = mode.lower()
    valid = ["fan_in", "fan_out"]
    if mode not in valid:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _xavier_std(tensor, gain: float) -> float:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return gain * math.sqrt(2.0 / float(fan_in + fan_out))


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Glorot initialisation: uniform on ``[-bound, bound]``, ``bound = gain * sqrt(6 / (fan_in + fan_out))``."""
    bound = math.sqrt(3.0) * _xavier_std(tensor, gain)
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """Glorot initialisation: ``N(0, std**2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    return normal_(tensor, 0.0, _xavier_std(tensor, gain), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """He initialisation: uniform on ``[-bound, bound]``, ``bound = gain * sqrt(3 / fan)``.

    ``fan`` is ``fan_in`` (keeps the forward pass's scale) or ``fan_out`` (the
    backward pass's); ``gain = calculate_gain(nonlinearity, a)``, ``a`` being
    leaky_relu's negative slope. ``Linear`` and ``Conv*`` layers use ``a=sqrt(5)``.
    """
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """He initialisation: ``N(0, std**2)`` with ``std = gain / sqrt(fan)`` (arguments as :func:`kaiming_uniform_`)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain: float = 1, generator=None):
    """Fill ``tensor`` (2-D or more, seen as ``[rows, rest]``) with a random (semi-)orthogonal matrix times
    ``gain``: orthonormal rows or columns, whichever are fewer, uniformly distributed (Saxe et al.).

    >>> import ember
    >>> _ = ember.manual_seed(0)
    >>> w = ember.nn.init.orthogonal_(ember.empty(3, 5))
    >>> bool(ember.allclose(w @ w.T, ember.eye(3), atol=1e-6))
    True
    """
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with ember.no_grad():
        flat = ember.empty(rows, cols, dtype=tensor.dtype, device=tensor.device).normal_(0, 1, generator=generator)
        if rows < cols:
            flat = flat.T
        q, r = ember.linalg.qr(flat)
        q = q * ember.diagonal(r).sign()  # makes the factorisation unique, so that q is uniformly distributed
        if rows < cols:
            q = q.T
        tensor.copy_(q.reshape(tensor.shape))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    """Fill the 2-D ``tensor`` with ``N(0, std**2)`` values, then zero ``ceil(sparsity * rows)`` random entries
    of each column (Martens, 2010): the first rows of a ``randperm(rows)`` per column, as PyTorch draws them
    (PyTorch draws those permutations from the default generator even when ``generator`` is given; ember uses
    ``generator`` for both).

    >>> import ember
    >>> w = ember.nn.init.sparse_(ember.empty(10, 4), sparsity=0.3)
    >>> (w == 0).sum(0).tolist()
    [3, 3, 3, 3]
    """
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    n_zeros = math.ceil(sparsity * rows)
    with ember.no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            rows_to_zero = ember.randperm(rows, generator=generator, device=tensor.device)[:n_zeros]
            tensor[rows_to_zero, col] = 0.0
    return tensor


def _deprecated(fn):
    old = fn.__name__[:-1]

    @functools.wraps(fn)
    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{fn.__name__}`.", FutureWarning,
                      stacklevel=2)
        return fn(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old
    deprecated_init.__doc__ = f"Deprecated: use :func:`{fn.__name__}`."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
