"""Regression losses: ``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``, ``poisson_nll_loss``.

Input and target broadcast together, with PyTorch's warning when their shapes
differ; both get gradients. ``mse_loss``, ``smooth_l1_loss`` and
``huber_loss`` are single ops (reduction included) whose backward is written
with ember ops, so their double backward works (a gradient penalty through
``mse_loss``, for one).

>>> import ember
>>> import ember.nn.functional as F
>>> F.mse_loss(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 4.0]))
tensor(2.)
"""
from __future__ import annotations

import math

from ..autograd.function import Op
from .loss_common import broadcast_pair, float_pair, get_reduction, grad_scale, reduce_array, reduce_tensor
from .shape import where

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "poisson_nll_loss"]


def _pair(fn, input, target):
    input, target = float_pair(fn, input, target)
    return broadcast_pair(input, target)


def _input_target_grads(ctx, grad):
    """``grad`` for the input and ``-grad`` for the target, each only where it is needed (tensors or arrays)."""
    need = ctx.needs_input_grad
    return (grad if need[0] else None), (-grad if need[1] else None)


class MseLoss(Op):
    name_ = "mseloss"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, a, b, reduction="mean"):
        ctx.reduction = reduction
        d = a - b
        return reduce_array(xp, d * d, reduction)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return _input_target_grads(ctx, (a - b) * (grad_scale(g, ctx.reduction, a.shape) * 2))

    @staticmethod
    def backward_arrays(ctx, xp, g):
        a, b = ctx.saved_tensors
        grad = a._data - b._data
        grad *= grad_scale(g, ctx.reduction, a.shape) * 2
        return _input_target_grads(ctx, grad)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Mean squared error ``(input - target) ** 2``, reduced by ``reduction`` ('mean', 'sum' or 'none').

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.mse_loss(ember.tensor([0.0, 3.0]), ember.tensor([1.0, 1.0]), reduction="none")
    tensor([1., 4.])
    """
    reduction = get_reduction(reduction, size_average, reduce)
    input, target = _pair("mse_loss", input, target)
    return MseLoss.apply2(input, target, {"reduction": reduction})


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Mean absolute error ``|input - target|``; its gradient is ``sign(input - target)`` (0 where equal).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.l1_loss(ember.tensor([0.0, 3.0]), ember.tensor([1.0, 1.0]))
    tensor(1.5000)
    """
    reduction = get_reduction(reduction, size_average, reduce)
    input, target = _pair("l1_loss", input, target)
    return reduce_tensor((input - target).abs(), reduction)


def _quadratic_then_linear(xp, d, width, slope):
    """``0.5 * slope / width * d**2`` where ``|d| < width``, else ``slope * (|d| - width / 2)``: with
    ``m = min(|d|, width)`` both are ``slope / width * m * (|d| - m / 2)``, and no ``where`` is needed (slow on
    NumPy for mixed masks)."""
    ad = xp.abs(d)
    if width == 0:
        return ad
    m = xp.minimum(ad, width)
    return (slope / width) * m * (ad - 0.5 * m) if slope != width else m * (ad - 0.5 * m)


def _quadratic_then_linear_backward(ctx, g):
    a, b = ctx.saved_tensors
    d = a - b
    # d / width inside the quadratic part, its sign outside it
    unit = d.sign() if ctx.width == 0 else (d / ctx.width).clamp(-1.0, 1.0)
    scale = grad_scale(g, ctx.reduction, a.shape)
    if ctx.slope != 1:
        scale = scale * ctx.slope
    return _input_target_grads(ctx, unit * scale)


class SmoothL1Loss(Op):
    name_ = "smoothl1loss"
    saves_inputs = True
    backward = staticmethod(_quadratic_then_linear_backward)

    @staticmethod
    def forward(ctx, xp, a, b, reduction="mean", beta=1.0):
        ctx.reduction, ctx.width, ctx.slope = reduction, beta, 1.0
        return reduce_array(xp, _quadratic_then_linear(xp, a - b, beta, 1.0), reduction)


class HuberLoss(Op):
    name_ = "huberloss"
    saves_inputs = True
    backward = staticmethod(_quadratic_then_linear_backward)

    @staticmethod
    def forward(ctx, xp, a, b, reduction="mean", delta=1.0):
        ctx.reduction, ctx.width, ctx.slope = reduction, delta, delta
        return reduce_array(xp, _quadratic_then_linear(xp, a - b, delta, delta), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (``d = input - target``);
    ``beta=0`` gives the L1 loss.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.smooth_l1_loss(ember.tensor([0.5, 3.0]), ember.tensor([0.0, 0.0]), reduction="none")
    tensor([0.1250, 2.5000])
    """
    reduction = get_reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = _pair("smooth_l1_loss", input, target)
    return SmoothL1Loss.apply(input, target, reduction=reduction, beta=float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0):
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)`` (``d = input - target``):
    ``delta`` times ``smooth_l1_loss`` with ``beta=delta``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.huber_loss(ember.tensor([0.5, 3.0]), ember.tensor([0.0, 0.0]), reduction="none", delta=2.0)
    tensor([0.1250, 4.0000])
    """
    reduction = get_reduction(reduction)
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    input, target = _pair("huber_loss", input, target)
    return HuberLoss.apply(input, target, reduction=reduction, delta=float(delta))


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-08, reduce=None,
                     reduction="mean"):
    """Negative log likelihood of ``target`` under a Poisson distribution with rate ``input``:
    ``exp(input) - target * input`` (``log_input=True``) or ``input - target * log(input + eps)``.
    ``full`` adds Stirling's approximation of ``log(target!)`` where ``target > 1``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.poisson_nll_loss(ember.tensor([0.0, 1.0]), ember.tensor([1.0, 0.0]), reduction="none")
    tensor([1.0000, 2.7183])
    """
    reduction = get_reduction(reduction, size_average, reduce)
    input, target = float_pair("poisson_nll_loss", input, target)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        big = target > 1
        # the approximation at a stand-in of 2 where it is not used, so no log(0) reaches the gradient
        t = where(big, target, 2.0)
        stirling = t * t.log() - t + 0.5 * (t * (2 * math.pi)).log()
        loss = loss + where(big, stirling, 0.0)
    return reduce_tensor(loss, reduction)
