"""Normalisation as ops: ``batch_norm``, ``layer_norm``, ``group_norm``, ``instance_norm``.

Each is one fused op: the forward normalises on arrays, and the backward is
the analytic formula written with ember ops. When a graph of the gradient is
being built (``create_graph=True``), the backward recomputes the batch
statistics from the saved input with ember ops, so second derivatives are
right; otherwise it reuses the statistics the forward computed.

>>> import ember
>>> from ember.ops.normalization import layer_norm
>>> layer_norm(ember.tensor([[1.0, 3.0]]), (2,))
tensor([[-1.0000,  1.0000]])
"""
from __future__ import annotations

import numbers

from ..autograd.function import Op
from ..autograd.grad_mode import STATE, no_grad
from ._common import Tensor

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm"]


# -- shared: normalising over some axes ---------------------------------------------------------------------------
def _moments(xp, x, axes, eps):
    """``x - mean``, the mean, the biased variance and ``1 / sqrt(var + eps)`` over ``axes`` (kept as size 1)."""
    mean = xp.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    var = xp.mean(centered * centered, axis=axes, keepdims=True)
    return centered, mean, var, 1 / xp.sqrt(var + eps)


def _scaled(xp, centered, invstd, weight, bias, shape):
    """``centered * invstd * weight + bias`` with a per-channel weight and bias (reshaped to ``shape``)."""
    scale = invstd if weight is None else invstd * xp.reshape(weight, shape)
    out = centered * scale
    if bias is not None:
        out += xp.reshape(bias, shape)
    return out


def _count(shape, axes):
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _input_grad_arrays(xp, g, x, mean, invstd, axes, scale=None, need_input=True, want_xhat=False):
    """First-order gradients on arrays for ``y = (x - mean(x)) * invstd(x) * scale`` (``scale`` constant over
    ``axes``): ``(grad of x or None, sum of g, sum of g * xhat, xhat or None)``, the sums over ``axes``.

    With ``xhat = (x - mean) * invstd`` the input gradient is
    ``scale * invstd * (g - mean(g) - xhat * mean(g * xhat))``, formed here as
    ``g * a + (x - mean) * b + c`` with per-group ``a``, ``b``, ``c``.
    """
    centered = x - mean
    xhat = centered * invstd if want_xhat else None
    sum_g = xp.sum(g, axis=axes, keepdims=True)
    sum_g_xhat = xp.sum(g * centered, axis=axes, keepdims=True) * invstd
    if not need_input:
        return None, sum_g, sum_g_xhat, xhat
    n = _count(x.shape, axes)
    a = invstd if scale is None else invstd * scale
    centered *= -a * invstd * sum_g_xhat / n  # the temporary becomes the xhat term
    centered += g * a
    centered -= a * sum_g / n
    return centered, sum_g, sum_g_xhat, xhat


def _graph_stats(x, axes, eps):
    """The mean and 1/std of ``x`` over ``axes`` as ember ops of ``x``, for a differentiable gradient."""
    mean = x.mean(axes, keepdim=True)
    centered = x - mean
    return mean, ((centered * centered).mean(axes, keepdim=True) + eps).rsqrt()


def _normalized_grad(g_xhat, x, xhat, invstd, axes):
    """The gradient with respect to ``x`` of ``xhat = (x - mean(x)) * invstd(x)``, given the one of ``xhat``
    (ember ops: differentiable again)."""
    return invstd * (g_xhat - g_xhat.mean(axes, keepdim=True) - xhat * (g_xhat * xhat).mean(axes, keepdim=True))


def _make(array, like):
    return Tensor._make(array, like._device)


def _check_tensor(name, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"{name}(): expected a floating-point input, got {input.dtype}")


def _check_size(what, t, n):
    if t is not None and t.numel() != n:
        raise RuntimeError(f"{what} should contain {n} elements not {t.numel()}")


# -- batch norm ---------------------------------------------------------------------------------------------------
def _channel_shape(ndim, c):
    return (1, c) + (1,) * (ndim - 2)


class BatchNormTraining(Op):
    """Batch norm with the batch's statistics; outputs ``(y, mean, biased var)`` (the statistics are for the
    running averages and carry no gradient)."""

    name_ = "batch_norm_training"
    backward_name = "NativeBatchNormBackward0"
    saves_inputs = True
    multi_output = True

    @staticmethod
    def forward(ctx, xp, x, weight, bias, eps=1e-5):
        axes = (0,) + tuple(range(2, x.ndim))
        centered, mean, var, invstd = _moments(xp, x, axes, eps)
        ctx.axes, ctx.eps, ctx.mean, ctx.invstd = axes, eps, mean, invstd
        c = x.shape[1]
        out = _scaled(xp, centered, invstd, weight, bias, _channel_shape(x.ndim, c))
        return out, xp.reshape(mean, (c,)), xp.reshape(var, (c,))

    @staticmethod
    def backward(ctx, g, _g_mean, _g_var):
        x, weight, _ = ctx.saved_tensors
        need = ctx.needs_input_grad
        c = x.shape[1]
        shape = _channel_shape(x.ndim, c)
        if not STATE.enabled:  # first order: on arrays
            xp = x._device.backend.xp
            scale = None if weight is None else xp.reshape(weight._data, shape)
            gx, sum_g, sum_g_xhat, _ = _input_grad_arrays(xp, g._data, x._data, ctx.mean, ctx.invstd, ctx.axes,
                                                          scale, need[0])
            return (_make(gx, g) if need[0] else None,
                    _make(xp.reshape(sum_g_xhat, (c,)), g) if need[1] else None,
                    _make(xp.reshape(sum_g, (c,)), g) if need[2] else None)
        mean, invstd = _graph_stats(x, ctx.axes, ctx.eps)
        xhat = (x - mean) * invstd
        gx = gw = gb = None
        if need[0]:
            g_xhat = g if weight is None else g * weight.reshape(shape)
            gx = _normalized_grad(g_xhat, x, xhat, invstd, ctx.axes)
        if need[1]:
            gw = (g * xhat).sum(ctx.axes)
        if need[2]:
            gb = g.sum(ctx.axes)
        return gx, gw, gb


class BatchNormInference(Op):
    """Batch norm with given (running) statistics: an affine map per channel."""

    name_ = "batch_norm"
    backward_name = "NativeBatchNormBackward0"
    saves_inputs = True

    @staticmethod
    def factors(xp, running_mean, running_var, weight, bias, eps):
        """``(scale, shift)`` per channel: the map is ``x * scale + shift``."""
        scale = 1 / xp.sqrt(running_var + eps)
        if weight is not None:
            scale = scale * weight
        shift = -running_mean * scale
        if bias is not None:
            shift = shift + bias
        return scale, shift

    @staticmethod
    def forward(ctx, xp, x, running_mean, running_var, weight, bias, eps=1e-5):
        ctx.eps = eps
        shape = _channel_shape(x.ndim, x.shape[1])
        scale, shift = BatchNormInference.factors(xp, running_mean, running_var, weight, bias, eps)
        # per-channel factors in the input's dtype: float64 statistics do not turn a float32 output into float64
        out = x * xp.reshape(xp.astype(scale, x.dtype), shape)
        out += xp.reshape(xp.astype(shift, x.dtype), shape)  # in place: one fresh array, two passes
        return out

    @staticmethod
    def backward(ctx, g):
        x, running_mean, running_var, weight, _ = ctx.saved_tensors
        need = ctx.needs_input_grad
        shape = _channel_shape(x.ndim, x.shape[1])
        axes = (0,) + tuple(range(2, x.ndim))
        invstd = (running_var + ctx.eps).rsqrt().reshape(shape)
        gx = gw = gb = None
        if need[0]:
            gx = g * (invstd if weight is None else invstd * weight.reshape(shape))
        if need[3]:
            gw = (g * (x - running_mean.reshape(shape)) * invstd).sum(axes)
        if need[4]:
            gb = g.sum(axes)
        return gx, None, None, gw, gb


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    """Normalise each channel (dim 1) of an ``(N, C)``, ``(N, C, L)`` or ``(N, C, H, W)`` input.

    In training the batch's statistics are used, and ``running_mean`` and
    ``running_var`` (when given) are updated in place:
    ``running = (1 - momentum) * running + momentum * batch`` with the unbiased
    batch variance. In evaluation the running statistics are used.

    >>> import ember
    >>> from ember.ops.normalization import batch_norm
    >>> mean, var = ember.zeros(1), ember.ones(1)
    >>> batch_norm(ember.tensor([[1.0], [3.0]]), mean, var, training=True)
    tensor([[-1.0000],
            [ 1.0000]])
    >>> mean, var
    (tensor([0.2000]), tensor([1.1000]))
    """
    _check_tensor("batch_norm", input)
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected an input of at least 2 dimensions (N, C, *), got input of size "
                         f"{input.shape}")
    c = input.shape[1]
    for what, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        _check_size(what, t, c)
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError(f"{'running_mean' if running_mean is None else 'running_var'} must be defined in "
                               "evaluation mode")
        return BatchNormInference.apply(input, running_mean, running_var, weight, bias, eps=float(eps))
    per_channel = input.numel() // c if c else 0
    if per_channel == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
    out, mean, var = BatchNormTraining.apply(input, weight, bias, eps=float(eps))
    with no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.detach(), alpha=momentum)
        if running_var is not None:
            unbiased = var.detach() * (per_channel / (per_channel - 1)) if per_channel > 1 else var.detach()
            running_var.mul_(1 - momentum).add_(unbiased, alpha=momentum)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-05):
    """Normalise each channel of each sample separately (batch norm with a batch of one, per sample).

    With ``use_input_stats`` (the default) the sample's own statistics are used
    and the running ones, when given, are updated with their average over the
    batch; otherwise the running statistics are used.

    >>> import ember
    >>> from ember.ops.normalization import instance_norm
    >>> instance_norm(ember.tensor([[[1.0, 3.0], [5.0, 5.0]]]))
    tensor([[[-1.0000,  1.0000],
             [ 0.0000,  0.0000]]])
    """
    _check_tensor("instance_norm", input)
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected an input of at least 3 dimensions (N, C, *), got input of size "
                         f"{input.shape}")
    n, c = input.shape[0], input.shape[1]
    for what, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        _check_size(what, t, c)
    merged = input.reshape((1, n * c) + tuple(input.shape[2:]))
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    out = batch_norm(merged, rm, rv, w, b, use_input_stats, momentum, eps)
    if use_input_stats:
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(rm.reshape(n, c).mean(0))
            if running_var is not None:
                running_var.copy_(rv.reshape(n, c).mean(0))
    return out.reshape(input.shape)


# -- layer norm ---------------------------------------------------------------------------------------------------
class LayerNorm(Op):
    name_ = "layer_norm"
    backward_name = "NativeLayerNormBackward0"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, x, weight, bias, ndim=1, eps=1e-5):
        axes = tuple(range(x.ndim - ndim, x.ndim))
        centered, mean, _, invstd = _moments(xp, x, axes, eps)
        ctx.axes, ctx.eps, ctx.mean, ctx.invstd = axes, eps, mean, invstd
        out = centered * invstd
        if weight is not None:
            out *= weight
        if bias is not None:
            out += bias
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight, _ = ctx.saved_tensors
        need = ctx.needs_input_grad
        lead = tuple(range(x.ndim - len(ctx.axes)))
        if not STATE.enabled:  # first order: on arrays
            xp = x._device.backend.xp
            g_xhat = g._data if weight is None else g._data * weight._data
            gx, _, _, xhat = _input_grad_arrays(xp, g_xhat, x._data, ctx.mean, ctx.invstd, ctx.axes,
                                                need_input=need[0], want_xhat=need[1])
            gw = gb = None
            if need[1]:
                gw = g._data * xhat
                gw = _make(xp.sum(gw, axis=lead) if lead else gw, g)
            if need[2]:
                gb = _make(xp.sum(g._data, axis=lead), g) if lead else g
            return (_make(gx, g) if need[0] else None), gw, gb
        mean, invstd = _graph_stats(x, ctx.axes, ctx.eps)
        xhat = (x - mean) * invstd
        gx = gw = gb = None
        if need[0]:
            gx = _normalized_grad(g if weight is None else g * weight, x, xhat, invstd, ctx.axes)
        if need[1]:
            gw = (g * xhat).sum(lead) if lead else g * xhat
        if need[2]:
            gb = g.sum(lead) if lead else g
        return gx, gw, gb


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalise over the last ``len(normalized_shape)`` dimensions, which must equal ``normalized_shape``.

    >>> import ember
    >>> from ember.ops.normalization import layer_norm
    >>> layer_norm(ember.tensor([[0.0, 2.0], [5.0, 5.0]]), [2])
    tensor([[-1.0000,  1.0000],
            [ 0.0000,  0.0000]])
    """
    _check_tensor("layer_norm", input)
    if isinstance(normalized_shape, numbers.Integral) or not all(
            isinstance(s, numbers.Integral) for s in normalized_shape):
        raise TypeError(f"layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    shape = [int(s) for s in normalized_shape]
    k = len(shape)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    if input.ndim < k or list(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and list(t.shape) != shape:
            raise RuntimeError(f"Expected {what} to be of same shape as normalized_shape, but got {what} of shape "
                               f"{list(t.shape)} and normalized_shape = {shape}")
    return LayerNorm.apply(input, weight, bias, ndim=k, eps=float(eps))


# -- group norm ---------------------------------------------------------------------------------------------------
class GroupNorm(Op):
    name_ = "group_norm"
    backward_name = "NativeGroupNormBackward0"
    saves_inputs = True

    @staticmethod
    def forward(ctx, xp, x, weight, bias, num_groups=1, eps=1e-5):
        n, c = x.shape[0], x.shape[1]
        centered, mean, _, invstd = _moments(xp, xp.reshape(x, (n, num_groups, -1)), (2,), eps)
        ctx.eps, ctx.mean, ctx.invstd, ctx.groups = eps, mean, invstd, num_groups
        # one factor per (sample, channel): the group's 1/std times the channel's weight
        per_group = (1, num_groups, c // num_groups)
        w = xp.ones(per_group, dtype=x.dtype) if weight is None else xp.reshape(weight, per_group)
        out = xp.reshape(centered, (n, c, -1)) * xp.reshape(invstd * w, (n, c, 1))
        if bias is not None:
            out += xp.reshape(bias, (1, c, 1))
        return xp.reshape(out, x.shape)

    @staticmethod
    def backward(ctx, g):
        x, weight, _ = ctx.saved_tensors
        need = ctx.needs_input_grad
        shape = _channel_shape(x.ndim, x.shape[1])
        grouped_shape = (x.shape[0], ctx.groups, -1)
        axes = (0,) + tuple(range(2, x.ndim))
        if not STATE.enabled:  # first order: on arrays
            xp = x._device.backend.xp
            g_xhat = g._data if weight is None else g._data * xp.reshape(weight._data, shape)
            gx, _, _, xhat = _input_grad_arrays(xp, xp.reshape(g_xhat, grouped_shape),
                                                xp.reshape(x._data, grouped_shape), ctx.mean, ctx.invstd, (2,),
                                                need_input=need[0], want_xhat=need[1])
            return (_make(xp.reshape(gx, x.shape), g) if need[0] else None,
                    _make(xp.sum(g._data * xp.reshape(xhat, x.shape), axis=axes), g) if need[1] else None,
                    _make(xp.sum(g._data, axis=axes), g) if need[2] else None)
        grouped = x.reshape(grouped_shape)
        mean, invstd = _graph_stats(grouped, (2,), ctx.eps)
        xhat = (grouped - mean) * invstd
        gx = gw = gb = None
        if need[0]:
            g_xhat = (g if weight is None else g * weight.reshape(shape)).reshape(grouped_shape)
            gx = _normalized_grad(g_xhat, grouped, xhat, invstd, (2,)).reshape(x.shape)
        if need[1]:
            gw = (g * xhat.reshape(x.shape)).sum(axes)
        if need[2]:
            gb = g.sum(axes)
        return gx, gw, gb


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Split the channels (dim 1) into ``num_groups`` groups and normalise each group of each sample.

    >>> import ember
    >>> from ember.ops.normalization import group_norm
    >>> group_norm(ember.tensor([[1.0, 3.0, 5.0, 5.0]]), 2)
    tensor([[-1.0000,  1.0000,  0.0000,  0.0000]])
    """
    _check_tensor("group_norm", input)
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    c = input.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {what} to be a vector of size equal to the number of channels in input, "
                               f"but got {what} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    return GroupNorm.apply(input, weight, bias, num_groups=int(num_groups), eps=float(eps))
