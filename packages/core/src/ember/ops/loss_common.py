"""What the loss ops share: reduction names (and PyTorch's deprecated ``size_average``/``reduce`` flags),
argument checks with PyTorch's messages, and the per-element gradient scale a reduction gives.

A loss op reduces inside its forward (``reduce_array``); its backward scales
the incoming gradient by ``grad_scale`` and multiplies by the elementwise
derivative, so broadcasting a 0-dim gradient does the expansion.
"""
from __future__ import annotations

import math
import sys
import warnings

import ember

from ..amp.autocast_mode import autocast_inputs
from ..autograd.grad_mode import STATE
from ._common import Tensor, promote
from .pointwise import SCALAR_NAMES, not_implemented_for

__all__: list = []

REDUCTIONS = ("none", "mean", "sum")


def warn_at_caller(message: str, category=UserWarning) -> None:
    """Warn, attributed to the first frame outside ember (the user's line, shown once per line)."""
    roots = tuple(p.rstrip("/\\") + "/" for p in ember.__path__)
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.replace("\\", "/").startswith(roots):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)


def get_reduction(reduction, size_average=None, reduce=None, allowed=REDUCTIONS) -> str:
    """The reduction to apply: from the deprecated ``size_average``/``reduce`` flags when either is given
    (with PyTorch's deprecation warning), else ``reduction`` checked against ``allowed``."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warn_at_caller(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                       "instead.")
        return reduction
    if reduction == "elementwise_mean":
        warn_at_caller("reduction='elementwise_mean' is deprecated, please use reduction='mean' instead.")
        return "mean"
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def reduce_array(xp, losses, reduction: str):
    """Elementwise ``losses`` (an array) reduced: 'none', 'mean' or 'sum'."""
    if reduction == "mean":
        return xp.mean(losses)
    if reduction == "sum":
        return xp.sum(losses)
    return losses


def grad_scale(g, reduction: str, shape):
    """The factor each element's derivative is multiplied by: the incoming gradient ``g`` over the count that
    the reduction divided by (``g`` itself for 'none' and 'sum')."""
    return g / math.prod(shape) if reduction == "mean" else g


def reduce_tensor(losses, reduction: str):
    """Elementwise ``losses`` (a tensor) reduced with differentiable ember ops (for the composite losses)."""
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses


def check_tensor(fn: str, name: str, position: int, value) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Tensor, not {type(value).__name__}")


def float_pair(fn: str, input, target, names=("input", "target")):
    """``input`` and ``target`` checked to be tensors, promoted to their common dtype, which must be floating."""
    check_tensor(fn, names[0], 1, input)
    check_tensor(fn, names[1], 2, target)
    input, target = autocast_inputs(fn, input, target)  # float32 for the losses on autocast's lists
    input, target = promote(input, target)
    if not input._dtype.is_floating_point:
        raise not_implemented_for(fn, input._dtype)
    return input, target


def broadcast_shape(a_shape, b_shape) -> tuple:
    """The shape ``a`` and ``b`` broadcast to, or PyTorch's error naming the first dimension that does not."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    n = max(len(a_shape), len(b_shape))
    a_full = (1,) * (n - len(a_shape)) + a_shape
    b_full = (1,) * (n - len(b_shape)) + b_shape
    out = []
    for i in range(n - 1, -1, -1):
        a, b = a_full[i], b_full[i]
        if a != b and a != 1 and b != 1:
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                               f"dimension {i}")
        out.append(b if a == 1 else a)
    return tuple(reversed(out))


def broadcast_pair(input, target, warn: bool = True):
    """``input`` and ``target`` expanded to their common shape; when the shapes differ and ``warn`` is set,
    PyTorch's warning that broadcasting a target is likely a mistake."""
    if tuple(input.shape) == tuple(target.shape):
        return input, target
    if warn:
        warn_at_caller(f"Using a target size ({target.size()}) that is different to the input size "
                       f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
                       "Please ensure they have the same size.")
    shape = broadcast_shape(input.shape, target.shape)
    if tuple(input.shape) != shape:
        input = input.expand(shape)
    if tuple(target.shape) != shape:
        target = target.expand(shape)
    return input, target


def same_size(fn_message: str, input, target) -> None:
    """Raise ``ValueError(fn_message)`` unless ``input`` and ``target`` have the same shape."""
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(fn_message.format(target=target.size(), input=input.size()))


def constant_argument(fn: str, name: str, value) -> None:
    """PyTorch's error for a tensor argument the op has no derivative for (``weight``, ``pos_weight``)
    that requires grad while grad mode is on."""
    if value is not None and value._requires_grad and STATE.enabled:
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument '{name}'. "
                           "This input cannot have requires_grad True.")


def dtype_name(t) -> str:
    """PyTorch's scalar type name of ``t``'s dtype ('Float', 'Long', ...)."""
    return SCALAR_NAMES[t._dtype.name]
