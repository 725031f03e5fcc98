"""ONNX tensor and math ops (opset 13-17 semantics, older attribute forms where cheap) as ember ops."""
from __future__ import annotations

import functools
import math

import numpy as np

import ember
import ember.nn.functional as F

from ._import_node import axis_list, ember_dtype, from_numpy, handles, ints, normalize_axis

# -- elementwise ---------------------------------------------------------------------------------------------
_UNARY = {
    "Neg": ember.neg, "Abs": ember.abs, "Exp": ember.exp, "Log": ember.log, "Sqrt": ember.sqrt,
    "Erf": ember.erf, "Tanh": ember.tanh, "Sigmoid": ember.sigmoid, "Relu": ember.relu,
    "Reciprocal": ember.reciprocal, "Floor": ember.floor, "Ceil": ember.ceil, "Sin": ember.sin, "Cos": ember.cos,
    "Identity": lambda x: x, "Not": ember.logical_not, "IsNaN": ember.isnan, "Sign": ember.sign,
    "Round": ember.round,  # both round half to even
    "Tan": ember.tan, "Asin": ember.asin, "Acos": ember.acos, "Atan": ember.atan, "Sinh": ember.sinh,
    "Cosh": ember.cosh, "Asinh": ember.asinh, "Acosh": ember.acosh, "Atanh": ember.atanh,
    "BitwiseNot": ember.bitwise_not, "HardSwish": F.hardswish,
}
_BINARY = {
    "Add": ember.add, "Sub": ember.sub, "Mul": ember.mul, "MatMul": ember.matmul,
    "Equal": ember.eq, "Less": ember.lt, "Greater": ember.gt, "LessOrEqual": ember.le,
    "GreaterOrEqual": ember.ge, "And": ember.logical_and, "Or": ember.logical_or, "Xor": ember.logical_xor,
    "BitwiseAnd": ember.bitwise_and, "BitwiseOr": ember.bitwise_or, "BitwiseXor": ember.bitwise_xor,
}


@handles(*_UNARY)
def _unary(node, x):
    return _UNARY[node.op_type](x)


@handles(*_BINARY)
def _binary(node, a, b):
    return _BINARY[node.op_type](a, b)


@handles("Div")
def _div(node, a, b):
    if a.is_floating_point():
        return ember.div(a, b)
    return ember.div(a, b, rounding_mode="trunc")  # ONNX integer division truncates


@handles("Mod")
def _mod(node, a, b):
    return ember.fmod(a, b) if node.attr("fmod", 0) else ember.remainder(a, b)


@handles("Pow")
def _pow(node, base, exponent):
    return ember.pow(base, exponent).to(base.dtype)


@handles("Max", "Min", "Sum", "Mean")
def _variadic(node, *xs):
    combine = {"Max": ember.maximum, "Min": ember.minimum, "Sum": ember.add, "Mean": ember.add}[node.op_type]
    result = functools.reduce(combine, xs)
    return result / len(xs) if node.op_type == "Mean" else result


@handles("Where")
def _where(node, condition, x, y):
    return ember.where(condition, x, y)


@handles("Clip")
def _clip(node, x, low=None, high=None):
    low = node.attr("min") if low is None else low.item()
    high = node.attr("max") if high is None else high.item()
    return ember.clamp(x, min=low, max=high)


@handles("LeakyRelu")
def _leaky_relu(node, x):
    return F.leaky_relu(x, node.attr("alpha", 0.01))


@handles("Elu")
def _elu(node, x):
    return F.elu(x, node.attr("alpha", 1.0))


@handles("Softplus")
def _softplus(node, x):
    return F.softplus(x)


@handles("HardSigmoid")
def _hard_sigmoid(node, x):
    return ember.clamp(x * node.attr("alpha", 0.2) + node.attr("beta", 0.5), min=0.0, max=1.0)


@handles("Shrink")
def _shrink(node, x):
    bias, lambd = node.attr("bias", 0.0), node.attr("lambd", 0.5)
    return ember.where(x < -lambd, x + bias, ember.where(x > lambd, x - bias, ember.zeros_like(x)))


@handles("IsInf")
def _is_inf(node, x):
    negative, positive = node.attr("detect_negative", 1), node.attr("detect_positive", 1)
    if negative and positive:
        return ember.isinf(x)
    if positive:
        return ember.isposinf(x)
    return ember.isneginf(x) if negative else ember.zeros(x.shape, dtype=ember.bool, device=x.device)


@handles("Gelu")
def _gelu(node, x):
    return F.gelu(x, approximate=node.attr("approximate", "none"))


@handles("Softmax", "LogSoftmax")
def _softmax(node, x):
    fn = F.softmax if node.op_type == "Softmax" else F.log_softmax
    if node.opset >= 13:
        return fn(x, dim=node.attr("axis", -1))
    axis = normalize_axis(node.attr("axis", 1), x.ndim)  # before opset 13: over the flattened trailing axes
    flat = x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
    return fn(flat, dim=1).reshape(x.shape)


@handles("Gemm")
def _gemm(node, a, b, c=None):
    if node.attr("transA", 0):
        a = a.t()
    if node.attr("transB", 0):
        b = b.t()
    y = ember.matmul(a, b)
    alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c if beta == 1.0 else c * beta)
    return y


@handles("Dropout")
def _dropout(node, x, ratio=None, training_mode=None):
    if training_mode is not None and bool(training_mode.item()):
        raise node.unsupported("training_mode=True")
    if node.wants_output(1):
        return x, ember.ones(x.shape, dtype=ember.bool, device=x.device)
    return x


# -- shapes --------------------------------------------------------------------------------------------------
@handles("Shape")
def _shape(node, x):
    start, end = node.attr("start", 0), node.attr("end")
    return ember.tensor(list(x.shape)[start:end], dtype=ember.int64, device=x.device)


@handles("Size")
def _size(node, x):
    return ember.tensor(x.numel(), dtype=ember.int64, device=x.device)


@handles("Reshape")
def _reshape(node, x, shape):
    shape = ints(shape)
    if not node.attr("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return ember.reshape(x, shape)


@handles("Flatten")
def _flatten(node, x):
    axis = normalize_axis(node.attr("axis", 1), x.ndim)
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


@handles("Transpose")
def _transpose(node, x):
    perm = node.attr("perm") or list(range(x.ndim))[::-1]
    return x.permute(*perm)


@handles("Squeeze")
def _squeeze(node, x, axes=None):
    axes = axis_list(node, axes)
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    axes = {normalize_axis(a, x.ndim) for a in axes}
    for a in axes:
        if x.shape[a] != 1:
            raise node.invalid(f"cannot squeeze axis {a} of size {x.shape[a]} (input shape {list(x.shape)})")
    return x.reshape([d for i, d in enumerate(x.shape) if i not in axes])


@handles("Unsqueeze")
def _unsqueeze(node, x, axes=None):
    axes = axis_list(node, axes)
    rank = x.ndim + len(axes)
    axes = {normalize_axis(a, rank) for a in axes}
    sizes = iter(x.shape)
    return x.reshape([1 if i in axes else next(sizes) for i in range(rank)])


@handles("Concat")
def _concat(node, *xs):
    return ember.cat(list(xs), dim=node.attr("axis"))


@handles("Split")
def _split(node, x, split=None):
    axis = normalize_axis(node.attr("axis", 0), x.ndim)
    sizes = ints(split) if split is not None else node.attr("split")
    if not sizes:
        count = node.attr("num_outputs", len(node.outputs))
        chunk = -(-x.shape[axis] // count)
        sizes = [min(chunk, x.shape[axis] - i * chunk) for i in range(count)]
    return tuple(ember.split(x, list(sizes), dim=axis))


@handles("Expand")
def _expand(node, x, shape):
    try:
        out = np.broadcast_shapes(tuple(x.shape), tuple(ints(shape)))
    except ValueError:
        raise node.invalid(f"its input of shape {list(x.shape)} does not broadcast to {ints(shape)}") from None
    node.check_elements(out)
    return x.expand(*out)


def _slice_positions(start: int, end: int, step: int, size: int) -> range:
    """The positions ONNX's Slice takes along an axis of ``size``: negative bounds count from the end, then
    clamp to ``[0, size]`` (``[0, size - 1]`` and ``[-1, size - 1]`` for a negative step)."""
    start, end = (start + size if start < 0 else start), (end + size if end < 0 else end)
    if step > 0:
        return range(min(max(start, 0), size), min(max(end, 0), size), step)
    return range(min(max(start, 0), size - 1), min(max(end, -1), size - 1), step)


@handles("Slice")
def _slice(node, x, starts=None, ends=None, axes=None, steps=None):
    if starts is None:  # before opset 10 the ranges are attributes
        starts, ends, axes = node.attr("starts"), node.attr("ends"), node.attr("axes")
    else:
        starts, ends, axes, steps = ints(starts), ints(ends), ints(axes), ints(steps)
    axes = list(range(len(starts))) if axes is None else [normalize_axis(a, x.ndim) for a in axes]
    steps = steps or [1] * len(starts)
    index, flips = [slice(None)] * x.ndim, []
    for start, end, axis, step in zip(starts, ends, axes, steps):
        positions = _slice_positions(start, end, step, x.shape[axis])
        if step > 0:
            index[axis] = slice(positions.start, positions.stop, step)
        elif not positions:
            index[axis] = slice(0, 0)
        else:  # a negative step: the same positions in increasing order, then flipped
            index[axis] = slice(positions[-1], positions[0] + 1, -step)
            flips.append(axis)
    result = x[tuple(index)]
    return ember.flip(result, flips) if flips else result


@handles("Gather")
def _gather(node, data, indices):
    axis = normalize_axis(node.attr("axis", 0), data.ndim)
    size = data.shape[axis]
    flat = indices.reshape(-1).to(ember.int64)
    flat = ember.where(flat < 0, flat + size, flat)
    picked = ember.index_select(data, axis, flat)
    return picked.reshape(list(data.shape[:axis]) + list(indices.shape) + list(data.shape[axis + 1:]))


@handles("GatherElements")
def _gather_elements(node, data, indices):
    axis = normalize_axis(node.attr("axis", 0), data.ndim)
    indices = indices.to(ember.int64)
    return ember.gather(data, axis, ember.where(indices < 0, indices + data.shape[axis], indices))


@handles("OneHot")
def _one_hot(node, indices, depth, values):
    depth = int(depth.item())
    node.check_elements(list(indices.shape) + [depth])
    axis = normalize_axis(node.attr("axis", -1), indices.ndim + 1)
    indices = indices.to(ember.int64)
    indices = ember.where(indices < 0, indices + depth, indices).unsqueeze(axis)
    classes = ember.arange(depth, device=indices.device).reshape([depth] + [1] * (indices.ndim - axis - 1))
    return ember.where(indices == classes, values[1], values[0])


@handles("Tile")
def _tile(node, x, repeats):
    repeats = ints(repeats)
    if len(repeats) != x.ndim or any(r < 0 for r in repeats):
        raise node.invalid(f"its repeats {repeats} must be {x.ndim} non-negative counts, one per input axis")
    node.check_elements([d * r for d, r in zip(x.shape, repeats)])
    return ember.tile(x, repeats)


@handles("Trilu")
def _trilu(node, x, k=None):
    diagonal = 0 if k is None else int(k.item())
    return ember.triu(x, diagonal) if node.attr("upper", 1) else ember.tril(x, diagonal)


@handles("CumSum")
def _cumsum(node, x, axis):
    axis = normalize_axis(int(axis.item()), x.ndim)
    if node.attr("reverse", 0):
        x = ember.flip(x, [axis])
    y = ember.cumsum(x, axis)
    if node.attr("exclusive", 0):
        y = y - x
    return ember.flip(y, [axis]) if node.attr("reverse", 0) else y


@handles("Einsum")
def _einsum(node, *operands):
    return ember.einsum(node.attr("equation"), *operands)


@handles("Cast")
def _cast(node, x):
    return x.to(ember_dtype(node.attr("to")))


@handles("ConstantOfShape")
def _constant_of_shape(node, shape):
    value = node.attr("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    if value.size != 1:
        raise node.invalid(f"its value attribute has {value.size} elements, 1 expected")
    size = ints(shape)
    if any(d < 0 for d in size):
        raise node.invalid(f"its shape {size} has a negative size")
    node.check_elements(size)
    return ember.full(size, value[0].item(), dtype=from_numpy(value).dtype, device=shape.device)


# -- reductions ----------------------------------------------------------------------------------------------
def _prod(x, dim, keepdim):
    """Product over several axes (ember's ``prod`` takes one at a time)."""
    for axis in sorted((normalize_axis(a, x.ndim) for a in dim), reverse=True):
        x = ember.prod(x, axis, keepdim=keepdim)
    return x


_REDUCE = {"ReduceMean": ember.mean, "ReduceSum": ember.sum, "ReduceMax": ember.amax, "ReduceMin": ember.amin,
           "ReduceLogSumExp": ember.logsumexp, "ReduceProd": _prod}


@handles(*_REDUCE)
def _reduce(node, x, axes=None):
    axes = axis_list(node, axes)
    if not axes:
        if node.attr("noop_with_empty_axes", 0):
            return x
        axes = list(range(x.ndim))
    return _REDUCE[node.op_type](x, dim=tuple(axes), keepdim=bool(node.attr("keepdims", 1)))


@handles("ArgMax", "ArgMin")
def _arg_extreme(node, x):
    axis = normalize_axis(node.attr("axis", 0), x.ndim)
    keepdim = bool(node.attr("keepdims", 1))
    fn = ember.argmax if node.op_type == "ArgMax" else ember.argmin
    if not node.attr("select_last_index", 0):
        return fn(x, dim=axis, keepdim=keepdim)
    return x.shape[axis] - 1 - fn(ember.flip(x, [axis]), dim=axis, keepdim=keepdim)  # the last of equal extremes


# -- padding -------------------------------------------------------------------------------------------------
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}


@handles("Pad")
def _pad(node, x, pads=None, constant_value=None, axes=None):
    pads = ints(pads) if pads is not None else list(node.attr("pads"))
    mode = node.attr("mode", "constant")
    if mode not in _PAD_MODES:
        raise node.unsupported(f"mode '{mode}'")
    axes = list(range(x.ndim)) if axes is None else [normalize_axis(a, x.ndim) for a in ints(axes)]
    if len(pads) != 2 * len(axes):
        raise node.invalid(f"its pads {pads} must hold 2 values per padded axis ({len(axes)})")
    begin, end = dict(zip(axes, pads[:len(axes)])), dict(zip(axes, pads[len(axes):]))
    node.check_elements([d + begin.get(a, 0) + end.get(a, 0) for a, d in enumerate(x.shape)])
    first = min((a for a in axes if begin[a] or end[a]), default=x.ndim)
    # F.pad lists (begin, end) pairs from the last axis backwards; axes before the first padded one are left out
    flat = [p for a in range(x.ndim - 1, first - 1, -1) for p in (begin.get(a, 0), end.get(a, 0))]
    if not flat:
        return x
    if mode != "constant":  # F.pad pads 1-3 trailing axes of an input with one or two axes more
        padded = x.ndim - first
        if padded > 3:
            raise node.unsupported(f"mode '{mode}' on {padded} axes")
        batch = x.reshape([1, math.prod(x.shape[:first])] + list(x.shape[first:]))
        out = F.pad(batch, flat, mode=_PAD_MODES[mode])
        return out.reshape(list(x.shape[:first]) + list(out.shape[2:]))
    value = node.attr("value", 0) if constant_value is None else constant_value.item()
    return F.pad(x, flat, value=value)
