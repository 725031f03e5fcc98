"""Binary losses: ``binary_cross_entropy`` (on probabilities), ``binary_cross_entropy_with_logits`` (on logits,
numerically stable, with ``pos_weight``) and ``soft_margin_loss``.

Targets may be soft (any value in [0, 1]) and get gradients; ``weight`` (and
``pos_weight``) broadcast to the input's shape and are constants.

>>> import ember
>>> import ember.nn.functional as F
>>> F.binary_cross_entropy_with_logits(ember.tensor([0.0]), ember.tensor([1.0]))
tensor(0.6931)
"""
from __future__ import annotations

import math

from ..amp.autocast_mode import autocast_casts
from ..autograd.function import Op
from .activation import softplus
from .loss_common import (
    broadcast_shape,
    check_tensor,
    constant_argument,
    dtype_name,
    float_pair,
    get_reduction,
    grad_scale,
    reduce_array,
    reduce_tensor,
    same_size,
)
from .pointwise import not_implemented_for

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "soft_margin_loss"]

#: PyTorch clamps each log in binary_cross_entropy to at least -100, so a certain wrong guess costs 100
_LOG_FLOOR = -100.0
#: and floors ``x * (1 - x)`` in its gradient at this value
_GRAD_EPS = 1e-12


def _weight_like(fn, name, weight, input):
    """``weight`` checked to broadcast to ``input``'s shape and cast to its dtype (None stays None)."""
    if weight is None:
        return None
    check_tensor(fn, name, 3, weight)
    shape = broadcast_shape(weight.shape, input.shape)
    if shape != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape {list(shape)}")
    constant_argument(fn, name, weight)
    return weight if weight._dtype is input._dtype else weight.to(input._dtype)


def _in_unit_interval(name, t):
    xp = t._device.backend.xp
    a = t._data
    if a.size and not (float(xp.min(a)) >= 0 and float(xp.max(a)) <= 1):  # NaN fails too
        raise RuntimeError(f"all elements of {name} should be between 0 and 1")


def _scaled(ctx, g, x, w):
    scale = grad_scale(g, ctx.reduction, x.shape)
    return scale if w is None else scale * w


class BinaryCrossEntropy(Op):
    name_ = "binarycrossentropy"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, x, t, w, reduction="mean"):
        ctx.reduction = reduction
        losses = -(t * xp.maximum(xp.log(x), _LOG_FLOOR) + (1 - t) * xp.maximum(xp.log1p(-x), _LOG_FLOOR))
        return reduce_array(xp, losses if w is None else losses * w, reduction)

    @staticmethod
    def backward(ctx, g):
        x, t, w = ctx.saved_tensors
        scale = _scaled(ctx, g, x, w)
        need = ctx.needs_input_grad
        gx = (x - t) / (x * (1 - x)).clamp_min(_GRAD_EPS) * scale if need[0] else None
        gt = ((-x).log1p() - x.log()) * scale if need[1] else None
        return gx, gt, None


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-(target * log(input) + (1 - target) * log(1 - input))`` for probabilities ``input`` in [0, 1], each
    log clamped to at least -100 as PyTorch does; ``weight`` rescales each element.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.binary_cross_entropy(ember.tensor([0.5, 1.0]), ember.tensor([1.0, 0.0]), reduction="none")
    tensor([  0.6931, 100.0000])
    """
    reduction = get_reduction(reduction, size_average, reduce)
    fn = "binary_cross_entropy"
    check_tensor(fn, "input", 1, input)
    check_tensor(fn, "target", 2, target)
    same_size("Using a target size ({target}) that is different to the input size ({input}) is deprecated. "
              "Please ensure they have the same size.", input, target)
    if not input._dtype.is_floating_point:
        raise not_implemented_for(fn, input._dtype)
    if target._dtype is not input._dtype and not autocast_casts(BinaryCrossEntropy.name_, input):
        raise RuntimeError(f"Found dtype {dtype_name(target)} but expected {dtype_name(input)}")
    _in_unit_interval("input", input)
    _in_unit_interval("target", target)
    weight = _weight_like(fn, "weight", weight, input)
    return BinaryCrossEntropy.apply(input, target, weight, reduction=reduction)


class BinaryCrossEntropyWithLogits(Op):
    name_ = "binarycrossentropywithlogits"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, x, t, w, pw, reduction="mean"):
        ctx.reduction = reduction
        softplus_neg = xp.maximum(-x, 0.0) + xp.log1p(xp.exp(-xp.abs(x)))  # log(1 + exp(-x)), never overflows
        if pw is None:
            losses = (1 - t) * x + softplus_neg
        else:
            losses = (1 - t) * x + (1 + (pw - 1) * t) * softplus_neg
        return reduce_array(xp, losses if w is None else losses * w, reduction)

    @staticmethod
    def backward(ctx, g):
        x, t, w, pw = ctx.saved_tensors
        scale = _scaled(ctx, g, x, w)
        need = ctx.needs_input_grad
        gx = gt = None
        if need[0]:
            sig = (x * 0.5).tanh() * 0.5 + 0.5  # sigmoid(x), with no where (slow on NumPy for mixed signs)
        if pw is None:
            if need[0]:
                gx = (sig - t) * scale
            if need[1]:
                gt = -x * scale
        else:
            if need[0]:
                gx = ((1 + (pw - 1) * t) * sig - pw * t) * scale
            if need[1]:
                gt = ((pw - 1) * softplus(-x, threshold=math.inf) - x) * scale
        return gx, gt, None, None


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """``binary_cross_entropy(sigmoid(input), target)`` computed from the logits without overflow:
    ``(1 - target) * input + (1 + (pos_weight - 1) * target) * log(1 + exp(-input))``.

    ``pos_weight`` (broadcast along the last, class dimension) weighs the positive term of each class.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.binary_cross_entropy_with_logits(ember.tensor([100.0, -100.0]), ember.tensor([0.0, 1.0]),
    ...                                    reduction="none")
    tensor([100., 100.])
    """
    reduction = get_reduction(reduction, size_average, reduce)
    fn = "binary_cross_entropy_with_logits"
    check_tensor(fn, "input", 1, input)
    check_tensor(fn, "target", 2, target)
    same_size("Target size ({target}) must be the same as input size ({input})", input, target)
    if not input._dtype.is_floating_point:
        raise not_implemented_for(fn, input._dtype)
    if not target._dtype.is_floating_point:
        raise RuntimeError(f"{fn}: expected a floating point target, got {dtype_name(target)} "
                           "(convert it with target.float())")
    input, target = float_pair(fn, input, target)
    weight = _weight_like(fn, "weight", weight, input)
    pos_weight = _weight_like(fn, "pos_weight", pos_weight, input)
    return BinaryCrossEntropyWithLogits.apply(input, target, weight, pos_weight, reduction=reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Two-class logistic loss ``log(1 + exp(-target * input))`` for targets of 1 or -1.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.soft_margin_loss(ember.tensor([0.0, 2.0]), ember.tensor([1.0, -1.0]), reduction="none")
    tensor([0.6931, 2.1269])
    """
    reduction = get_reduction(reduction, size_average, reduce)
    input, target = float_pair("soft_margin_loss", input, target)
    return reduce_tensor(softplus(-target * input, threshold=math.inf), reduction)
