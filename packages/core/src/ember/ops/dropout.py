"""Dropout as ops: ``dropout``, channel-wise ``dropout1d``/``dropout2d``/``dropout3d``, ``alpha_dropout``
and ``feature_alpha_dropout``.

The mask is drawn from ember's generator of the input's device, so it follows
``ember.manual_seed``; kept values are scaled by ``1 / (1 - p)`` so the
expected value is unchanged, and the backward multiplies by the same mask.
Outside training (``training=False``) or with ``p=0`` the input itself is
returned.

>>> import ember
>>> from ember.ops.dropout import dropout
>>> _ = ember.manual_seed(0)
>>> y = dropout(ember.ones(1000), p=0.25)
>>> sorted(set(y.tolist()))
[0.0, 1.3333333730697632]
"""
from __future__ import annotations

import math
import warnings

from .. import _dtype as dt
from ..autograd.function import Op
from ..backends.backend import on_device
from . import _cpu_distributions as dist
from ._common import Tensor
from ._random_common import pick_generator, rng_to_device
from .inplace import apply_inplace

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

#: SELU's ``scale * alpha``: the value SELU tends to for very negative inputs is minus this
_SELU_NEG_SATURATION = 1.7580993408473766


class Dropout(Op):
    """``x * mask`` for a given (scaled) mask array that broadcasts to ``x``."""

    name_ = "dropout"
    backward_name = "MulBackward0"  # PyTorch records dropout as the product with its scaled mask

    @staticmethod
    def forward(ctx, xp, x, mask=None):
        ctx.mask = mask
        return x * mask

    @staticmethod
    def backward(ctx, g):
        return g * Tensor._make(ctx.mask, g._device)


class AlphaDropout(Op):
    """``x * mask + shift`` for given mask and shift arrays that broadcast to ``x``."""

    name_ = "alpha_dropout"
    backward_name = "AddBackward0"

    @staticmethod
    def forward(ctx, xp, x, mask=None, shift=None):
        ctx.mask = mask
        return x * mask + shift

    @staticmethod
    def backward(ctx, g):
        return g * Tensor._make(ctx.mask, g._device)


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _check_input(name, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{input._dtype.scalar_type_name} ({name} needs a floating-point input)")


def _keep_mask(input, shape, p):
    """1 with probability ``1 - p``, else 0: an array of ``shape`` and ``input``'s dtype on its device.

    As PyTorch's ``empty(shape).bernoulli_(1 - p)``: one float64 uniform per value, kept when below ``1 - p``.
    """
    device = input._device
    hits = dist.bernoulli_scalar(pick_generator(None, device).engine, math.prod(shape), 1 - p).reshape(shape)
    hits = rng_to_device(hits, dt.bool_, device)
    with on_device(device):
        return device.backend.xp.astype(hits, device.backend.native_dtype(input._dtype))


def _feature_shape(input, batched):
    """The mask shape of channel-wise dropout: one draw per channel (per sample when ``batched``)."""
    shape = tuple(input.shape)
    lead = 2 if batched else 1
    return shape[:lead] + (1,) * (len(shape) - lead)


def _apply(input, mask, shift, inplace):
    if shift is None:
        compute = lambda cur: Dropout.apply(cur, mask=mask)  # noqa: E731
    else:
        compute = lambda cur: AlphaDropout.apply(cur, mask=mask, shift=shift)  # noqa: E731
    return apply_inplace(input, compute) if inplace else compute(input)


def _dropout(name, input, p, training, inplace, mask_shape):
    _check_p(p)
    _check_input(name, input)
    if not training or p == 0:
        return input
    if p == 1:  # PyTorch multiplies by zero without drawing
        return _apply(input, input._device.backend.xp.zeros((), dtype=input._data.dtype), None, inplace)
    keep = _keep_mask(input, mask_shape, p)
    # PyTorch divides the 0/1 noise by (1 - p) in the input's dtype
    return _apply(input, keep / (1 - p), None, inplace)  # a Python float takes the array's dtype (NEP 50)


def _alpha_dropout(name, input, p, training, inplace, mask_shape):
    _check_p(p)
    _check_input(name, input)
    if not training or p == 0:
        return input
    keep = _keep_mask(input, mask_shape, p)
    if p == 1:
        return _apply(input, keep * 0, None, inplace)
    # keep ~ Bernoulli(1 - p); dropped values become SELU's saturation value, then an affine map (a, b)
    # restores zero mean and unit variance for a standard normal input
    a = 1.0 / math.sqrt((_SELU_NEG_SATURATION ** 2 * p + 1) * (1 - p))
    shift = (keep - 1) * (_SELU_NEG_SATURATION * a) + _SELU_NEG_SATURATION * a * p
    return _apply(input, keep * a, shift, inplace)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    >>> import ember
    >>> from ember.ops.dropout import dropout
    >>> x = ember.ones(3)
    >>> dropout(x, training=False) is x
    True
    """
    return _dropout("dropout", input, p, training, inplace, tuple(input.shape))


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of an ``(N, C, L)`` (or unbatched ``(C, L)``) input with probability ``p``.

    >>> import ember
    >>> from ember.ops.dropout import dropout1d
    >>> _ = ember.manual_seed(0)
    >>> y = dropout1d(ember.ones(2, 8, 5))
    >>> bool(((y == 0).all(2) | (y == 2).all(2)).all())  # each channel is all dropped or all kept
    True
    """
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _dropout("dropout1d", input, p, training, inplace, _feature_shape(input, input.ndim == 3))


def _deprecated_rank(name, input, spatial):
    warnings.warn(f"{name}: Received a {input.ndim}-D input to {name}, which is deprecated and will result in an "
                  f"error in a future release. To retain the behavior and silence this warning, please use dropout "
                  f"instead. Note that {name} exists to provide channel-wise dropout on inputs with {spatial} "
                  f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. {spatial + 1}D or "
                  f"{spatial + 2}D inputs).", UserWarning, stacklevel=3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of an ``(N, C, H, W)`` (or unbatched ``(C, H, W)``) input with probability ``p``.

    As in PyTorch, a 3-D input is taken as ``(N, C, L)`` (with a warning), and
    other ranks are accepted with a deprecation warning.

    >>> import ember
    >>> from ember.ops.dropout import dropout2d
    >>> _ = ember.manual_seed(0)
    >>> dropout2d(ember.ones(4, 3, 2, 2)).shape
    ember.Size([4, 3, 2, 2])
    """
    _check_p(p)
    if input.ndim not in (3, 4):
        _deprecated_rank("dropout2d", input, 2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", UserWarning, stacklevel=2)
    return _dropout("dropout2d", input, p, training, inplace, _feature_shape(input, input.ndim >= 2))


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of an ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) input with probability ``p``.

    >>> import ember
    >>> from ember.ops.dropout import dropout3d
    >>> dropout3d(ember.ones(3, 2, 2, 2), training=False).shape
    ember.Size([3, 2, 2, 2])
    """
    _check_p(p)
    if input.ndim not in (4, 5):
        _deprecated_rank("dropout3d", input, 3)
    return _dropout("dropout3d", input, p, training, inplace, _feature_shape(input, input.ndim == 5))


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped values are set to SELU's negative saturation value and an affine map
    keeps a standard normal input at zero mean and unit variance. Off unless ``training=True``.

    >>> import ember
    >>> from ember.ops.dropout import alpha_dropout
    >>> _ = ember.manual_seed(0)
    >>> y = alpha_dropout(ember.randn(20000), training=True)
    >>> abs(y.mean().item()) < 0.05, round(y.std().item(), 1)
    (True, 1.0)
    """
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, tuple(input.shape))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """:func:`alpha_dropout` of whole channels (dim 1 of a batched input).

    >>> import ember
    >>> from ember.ops.dropout import feature_alpha_dropout
    >>> _ = ember.manual_seed(0)
    >>> y = feature_alpha_dropout(ember.zeros(2, 6, 3), training=True)
    >>> bool((y == y[:, :, :1]).all())  # one value per channel
    True
    """
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace,
                          _feature_shape(input, input.ndim >= 2))
