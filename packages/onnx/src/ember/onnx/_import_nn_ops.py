"""ONNX convolution, pooling, normalisation and resize ops as ember's functional ops (1-D and 2-D)."""
from __future__ import annotations

import math

import numpy as np

import ember
import ember.nn.functional as F

from ._import_node import checked_at_load, handles, ints, normalize_axis

_CONV = {1: F.conv1d, 2: F.conv2d}
_CONV_TRANSPOSE = {1: F.conv_transpose1d, 2: F.conv_transpose2d}
_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d}
_AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d}


def _spatial_rank(node, x, table):
    dims = x.ndim - 2
    if dims not in table:
        raise node.unsupported(f"a {dims}-D input (shape {list(x.shape)}); only 1-D and 2-D inputs are")
    return dims


def _pads(node, x, kernel, strides, dilations):
    """``(begin, end)`` padding per spatial axis from ``pads`` or ``auto_pad``."""
    dims = len(kernel)
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", "VALID"):
        pads = node.attr("pads") if auto_pad == "NOTSET" else None
        pads = list(pads) if pads else [0] * 2 * dims
        return pads[:dims], pads[dims:]
    begin, end = [], []  # SAME_UPPER or SAME_LOWER (the load refuses other values)
    for size, k, s, d in zip(x.shape[2:], kernel, strides, dilations):
        total = max(0, (math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return begin, end


def _check_padded(node, x, begin, end):
    """Refuse, before allocating, a padded input past the load's ``max_elements``."""
    padded = list(x.shape[:2]) + [d + b + e for d, b, e in zip(x.shape[2:], begin, end)]
    node.check_elements(padded, "its padded input")


def _pad_input(x, begin, end, value=0.0):
    """``x`` padded explicitly, for padding the functional op cannot express (asymmetric, too large)."""
    flat = [p for b, e in zip(reversed(begin), reversed(end)) for p in (b, e)]
    return F.pad(x, flat, value=value) if any(flat) else x


def _pooled_padded(node, pool, x, begin, end, strides, value=0.0, **options):
    """``pool`` over ``x`` padded explicitly. With ``ceil_mode`` the extra window must start inside the input or
    its begin padding, as it would had the pool padded (the explicit padding hides where the input ended)."""
    y = pool(_pad_input(x, begin, end, value), ceil_mode=_ceil_mode(node), stride=strides, **options)
    if not _ceil_mode(node):
        return y
    keep = [slice(None), slice(None)]
    for out, size, b, s in zip(y.shape[2:], x.shape[2:], begin, strides):
        keep.append(slice(0, out - 1 if out > 1 and (out - 1) * s >= size + b else out))
    return y[tuple(keep)]


def _window(node, x, kernel):
    dims = len(kernel)
    strides = list(node.attr("strides") or [1] * dims)
    dilations = list(node.attr("dilations") or [1] * dims)
    return strides, dilations, _pads(node, x, kernel, strides, dilations)


@handles("Conv")
def _conv(node, x, weight, bias=None):
    dims = _spatial_rank(node, x, _CONV)
    kernel = list(node.attr("kernel_shape") or weight.shape[2:])
    strides, dilations, (begin, end) = _window(node, x, kernel)
    _check_padded(node, x, begin, end)
    if begin != end:
        x, begin = _pad_input(x, begin, end), [0] * dims
    return _CONV[dims](x, weight, bias, stride=strides, padding=begin, dilation=dilations,
                       groups=node.attr("group", 1))


@handles("ConvTranspose")
def _conv_transpose(node, x, weight, bias=None):
    dims = _spatial_rank(node, x, _CONV_TRANSPOSE)
    kernel = list(node.attr("kernel_shape") or weight.shape[2:])
    strides = list(node.attr("strides") or [1] * dims)
    dilations = list(node.attr("dilations") or [1] * dims)
    extra = list(node.attr("output_padding") or [0] * dims)
    auto_pad = node.attr("auto_pad", "NOTSET")
    output_shape = node.attr("output_shape")
    if output_shape is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        output_shape = [size * s for size, s in zip(x.shape[2:], strides)]
    if output_shape is not None:
        output_shape = list(output_shape)[-dims:]
        begin, end = [], []
        for size, k, s, d, e, out in zip(x.shape[2:], kernel, strides, dilations, extra, output_shape):
            total = max(0, s * (size - 1) + e + (k - 1) * d + 1 - out)  # onnxruntime pads no less than 0
            begin.append(total // 2 if auto_pad == "SAME_UPPER" else total - total // 2)
            end.append(total - begin[-1])
    else:
        pads = list(node.attr("pads") or [0] * 2 * dims)
        begin, end = pads[:dims], pads[dims:]
    fn = _CONV_TRANSPOSE[dims]
    groups = node.attr("group", 1)
    full_shape = [s * (size - 1) + e + (k - 1) * d + 1
                  for size, k, s, d, e in zip(x.shape[2:], kernel, strides, dilations, extra)]
    node.check_elements([x.shape[0], weight.shape[1] * groups] + full_shape, "its unpadded output")
    if begin == end:
        return fn(x, weight, bias, stride=strides, padding=begin, output_padding=extra, groups=groups,
                  dilation=dilations)
    # asymmetric padding crops the unpadded result differently at each end
    full = fn(x, weight, bias, stride=strides, padding=0, output_padding=extra, groups=groups, dilation=dilations)
    crop = [slice(None), slice(None)] + [slice(b, size - e) for b, e, size in zip(begin, end, full.shape[2:])]
    return full[tuple(crop)]


def _ceil_mode(node) -> bool:
    """``ceil_mode`` applies to explicit pads and ``VALID``; ``SAME_*`` fixes the output size, ``ceil(in / stride)``."""
    return bool(node.attr("ceil_mode", 0)) and not node.attr("auto_pad", "NOTSET").startswith("SAME")


@checked_at_load("Conv", "ConvTranspose", "MaxPool", "AveragePool")
def _check_window(node):
    kernel = node.attr("kernel_shape")
    if kernel is not None and len(kernel) not in (1, 2):
        raise node.unsupported(f"a {len(kernel)}-D kernel_shape {list(kernel)}; only 1-D and 2-D windows are")
    if node.op_type == "MaxPool" and node.wants_output(1):
        raise node.unsupported("the Indices output")
    dilations = list(node.attr("dilations") or [])
    if node.op_type == "AveragePool" and any(d != 1 for d in dilations):
        raise node.unsupported(f"dilations {dilations}")


@handles("MaxPool")
def _max_pool(node, x):
    dims = _spatial_rank(node, x, _MAX_POOL)
    kernel = list(node.attr("kernel_shape"))
    strides, dilations, (begin, end) = _window(node, x, kernel)
    _check_padded(node, x, begin, end)
    pool = _MAX_POOL[dims]
    if begin != end or any(2 * p > k for p, k in zip(begin, kernel)):
        return _pooled_padded(node, pool, x, begin, end, strides, value=-math.inf, kernel_size=kernel,
                              dilation=dilations)
    return pool(x, kernel, stride=strides, padding=begin, dilation=dilations, ceil_mode=_ceil_mode(node))


@handles("AveragePool")
def _average_pool(node, x):
    dims = _spatial_rank(node, x, _AVG_POOL)
    kernel = list(node.attr("kernel_shape"))
    strides, dilations, (begin, end) = _window(node, x, kernel)
    _check_padded(node, x, begin, end)
    include_pad = bool(node.attr("count_include_pad", 0))
    pool = _AVG_POOL[dims]
    if begin == end and all(2 * p <= k for p, k in zip(begin, kernel)):
        return pool(x, kernel, stride=strides, padding=begin, ceil_mode=_ceil_mode(node),
                    count_include_pad=include_pad)
    # padding the pool cannot express: pad explicitly; without count_include_pad, divide by the share of real
    # elements in each window (the mean of a padded all-ones input)
    mean = _pooled_padded(node, pool, x, begin, end, strides, kernel_size=kernel)
    if include_pad:
        return mean
    ones = ember.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype, device=x.device)
    return mean / _pooled_padded(node, pool, ones, begin, end, strides, kernel_size=kernel)


@handles("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(node, x):
    axes = tuple(range(2, x.ndim))
    if node.op_type == "GlobalAveragePool":
        return ember.mean(x, dim=axes, keepdim=True)
    return ember.amax(x, dim=axes, keepdim=True)


@checked_at_load("BatchNormalization", "LayerNormalization")
def _check_normalization(node):
    if node.op_type == "BatchNormalization" and (node.attr("training_mode", 0) or node.wants_output(1)):
        raise node.unsupported("training mode (batch statistics, running-statistics outputs)")
    if node.op_type == "LayerNormalization" and (node.wants_output(1) or node.wants_output(2)):
        raise node.unsupported("the Mean and InvStdDev outputs")


@handles("BatchNormalization")
def _batch_norm(node, x, scale, bias, mean, var):
    return F.batch_norm(x, mean, var, scale, bias, training=False, eps=node.attr("epsilon", 1e-5))


@handles("InstanceNormalization")
def _instance_norm(node, x, scale, bias):
    return F.instance_norm(x, weight=scale, bias=bias, eps=node.attr("epsilon", 1e-5))


@handles("LayerNormalization")
def _layer_norm(node, x, scale, bias=None):
    shape = list(x.shape[normalize_axis(node.attr("axis", -1), x.ndim):])
    eps = node.attr("epsilon", 1e-5)
    if list(scale.shape) == shape and (bias is None or list(bias.shape) == shape):
        return F.layer_norm(x, shape, scale, bias, eps=eps)
    y = F.layer_norm(x, shape, eps=eps) * scale  # Scale and B broadcast to the normalised shape
    return y if bias is None else y + bias


# Resize's source coordinate of output index o (float32, as onnxruntime computes it), and nearest rounding
_SOURCE = {
    "half_pixel": lambda o, scale, n_in, n_out: (o + 0.5) / scale - 0.5,
    "pytorch_half_pixel": lambda o, scale, n_in, n_out: (o + 0.5) / scale - 0.5 if n_out > 1 else 0 * o,
    "align_corners": lambda o, scale, n_in, n_out: o * np.float32((n_in - 1) / (n_out - 1)) if n_out > 1 else 0 * o,
    "asymmetric": lambda o, scale, n_in, n_out: o / scale,
}
_LINEAR_TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "align_corners")
_ROUND = {"round_prefer_floor": lambda c: np.ceil(c - 0.5), "round_prefer_ceil": lambda c: np.floor(c + 0.5),
          "floor": np.floor, "ceil": np.ceil}


def _resize_nearest(x, request, by_size, source, rounding):
    """Nearest-neighbour resize as one ``index_select`` per spatial axis (differentiable, any ONNX mode)."""
    for axis, (n_in, r) in enumerate(zip(x.shape[2:], request), start=2):
        n_out = r if by_size else math.floor(n_in * r)
        scale = np.float32(n_out / n_in if by_size else r)
        where = rounding(source(np.arange(n_out, dtype=np.float32), scale, n_in, n_out))
        index = np.clip(where, 0, n_in - 1).astype(np.int64)
        x = ember.index_select(x, axis, ember.tensor(index, device=x.device))
    return x


def _resize_modes(node):
    """``(mode, coordinate transformation, nearest rounding)``: Resize(X, scales) of opset 10 and Upsample
    are asymmetric with floor rounding."""
    if node.op_type == "Upsample" or node.opset < 11:
        return node.attr("mode", "nearest"), "asymmetric", "floor"
    return (node.attr("mode", "nearest"), node.attr("coordinate_transformation_mode", "half_pixel"),
            node.attr("nearest_mode", "round_prefer_floor"))


@checked_at_load("Resize", "Upsample")
def _check_resize(node):
    mode, transform, nearest_mode = _resize_modes(node)
    for name, default in (("antialias", 0), ("exclude_outside", 0), ("keep_aspect_ratio_policy", "stretch")):
        if node.attr(name, default) != default:
            raise node.unsupported(f"{name}={node.attr(name)!r}")
    if mode == "nearest" and (transform not in _SOURCE or nearest_mode not in _ROUND):
        raise node.unsupported(f"nearest resize with coordinate_transformation_mode '{transform}' and "
                               f"nearest_mode '{nearest_mode}'")
    if mode != "nearest" and (mode != "linear" or transform not in _LINEAR_TRANSFORMS):
        raise node.unsupported(f"mode '{mode}' with coordinate_transformation_mode '{transform}'")
    if node.attr("axes") is not None:
        raise node.unsupported("the axes attribute")


@handles("Resize", "Upsample")
def _resize(node, x, roi=None, scales=None, sizes=None):
    mode, transform, nearest_mode = _resize_modes(node)  # checked at load
    if node.op_type == "Upsample" or node.opset < 11:  # the second input is the scales
        roi, scales = None, roi
    kwargs = {}
    if mode == "linear":
        kwargs = {"mode": {3: "linear", 4: "bilinear"}.get(x.ndim), "align_corners": transform == "align_corners"}
        if kwargs["mode"] is None:
            raise node.unsupported(f"linear resize of a {x.ndim}-D input")
    by_size = sizes is not None and sizes.numel()
    request = ints(sizes) if by_size else [float(s) for s in scales.tolist()]
    if request[:2] != ([x.shape[0], x.shape[1]] if by_size else [1.0, 1.0]):
        raise node.unsupported(f"resizing the batch or channel axis ({'sizes' if by_size else 'scales'} {request})")
    request = request[2:]
    if not by_size and any(not math.isfinite(r) or r <= 0 for r in request):
        raise node.invalid(f"its scales {request} must be finite and positive")
    lengths = request if by_size else [math.floor(n * f) for n, f in zip(x.shape[2:], request)]
    if any(n < 0 for n in lengths):
        raise node.invalid(f"its sizes {request} include a negative size")
    node.check_elements(list(x.shape[:2]) + lengths)
    if mode == "nearest":
        return _resize_nearest(x, request, by_size, _SOURCE[transform], _ROUND[nearest_mode])
    if transform == "pytorch_half_pixel":  # an axis resized to length 1 samples its first element
        ones = [i for i, n in enumerate(lengths) if n == 1]
        if ones:
            x = x[(slice(None), slice(None)) + tuple(slice(0, 1) if i in ones else slice(None)
                                                     for i in range(len(lengths)))]
            request = [(1 if by_size else 1.0) if i in ones else r for i, r in enumerate(request)]
    if by_size:
        return F.interpolate(x, size=request, **kwargs)
    return F.interpolate(x, scale_factor=request, **kwargs)
