"""ONNX lowerings of the layer ops: linear, convolution, pooling, normalisation, dropout, embedding, padding,
interpolation.

Each lowering emits the ONNX operator a reader expects (``Gemm``, ``Conv``, ``MaxPool``, ``BatchNormalization``,
``LayerNormalization``, ``Pad``, ``Resize``, ...) when its semantics are the same as ember's for the traced call,
and otherwise an exact formulation from smaller operators, so the exported model computes what ember computed:

- group norm and batch statistics (instance norm) from ``ReduceMean`` arithmetic (opset 18's GroupNormalization
  scales per group, not per channel);
- adaptive pooling with uneven windows as products with constant averaging matrices (average) or a ``Max`` over
  ``Gather`` taps (max); ``divisor_override`` as a constant factor on ``AveragePool``;
- PyTorch's ceil-mode rule (no window starts in the right padding) with a ``Slice`` where ONNX's shape formula
  differs; windows of padding only give ``-inf``;
- resampling that ``Resize`` would round differently (checked by reproducing onnxruntime's float32 coordinate
  arithmetic), crop-padding, and circular padding before opset 19 as ``Gather`` taps with weights.

Dropout records an op only in training mode; exporting that is an error (``ember.onnx.export`` runs in eval mode).
"""
from __future__ import annotations

import math

import numpy as np

from ember._sibling_api import AdaptiveWindows, Windows, numpy_dtype, pool_windows, pooled_size

from .._graph import onnx_dtype


# -- small graph helpers ----------------------------------------------------------------------------------------
def _np(dtype):
    """The NumPy dtype of an ember dtype (constants must match the input they combine with)."""
    return numpy_dtype(dtype)


def _ints(g, values):
    return g.const(np.asarray(values, dtype=np.int64))


def _unsqueeze(g, x, axes):
    return g.op("Unsqueeze", x, _ints(g, axes))


def _squeeze(g, x, axes):
    return g.op("Squeeze", x, _ints(g, axes))


def _reduce_mean(g, x, axes):
    """The mean over ``axes``, kept as size-1 dimensions (``axes`` became an input in opset 18)."""
    if g.opset >= 18:
        return g.op("ReduceMean", x, _ints(g, axes), keepdims=1)
    return g.op("ReduceMean", x, axes=list(axes), keepdims=1)


def _normalize(g, x, axes, eps, dtype):
    """``(x - mean) / sqrt(var + eps)`` over ``axes`` (biased variance), and the mean and variance."""
    mean = _reduce_mean(g, x, axes)
    centered = g.op("Sub", x, mean)
    var = _reduce_mean(g, g.op("Mul", centered, centered), axes)
    invstd = g.op("Reciprocal", g.op("Sqrt", g.op("Add", var, g.const(np.asarray(eps, dtype=_np(dtype))))))
    return g.op("Mul", centered, invstd), mean, var


def _per_channel(g, v, rank):
    """A ``[C]`` vector shaped ``[C, 1, ...]`` to broadcast over dim 1 of a rank-``rank`` tensor."""
    return v if rank <= 2 else g.op("Reshape", v, _ints(g, [-1] + [1] * (rank - 2)))


def _affine(g, y, weight, bias, rank):
    """``y * weight + bias`` per channel (either may be ``None``)."""
    if weight is not None:
        y = g.op("Mul", y, _per_channel(g, weight, rank))
    if bias is not None:
        y = g.op("Add", y, _per_channel(g, bias, rank))
    return y


def _batched(g, node, x, nd):
    """``x`` with a batch dimension added when the op got an unbatched ``(C, *spatial)`` input, and whether it did."""
    if len(node.input_shapes[0]) == nd + 1:
        return _unsqueeze(g, x, [0]), True
    return x, False


# -- linear -------------------------------------------------------------------------------------------------------
def linear(g, node):
    """``Gemm`` (transB=1) for a matrix input, else ``MatMul`` with the transposed weight and an ``Add``."""
    x, w, b = (list(node.inputs) + [None])[:3]
    if len(node.input_shapes[0]) == 2:
        return [g.op("Gemm", x, w, *([b] if b is not None else []), transB=1)]
    out = g.op("MatMul", x, g.op("Transpose", w, perm=[1, 0]))
    return [out if b is None else g.op("Add", out, b)]


# -- convolution --------------------------------------------------------------------------------------------------
def convolution(g, node):
    """``Conv`` or ``ConvTranspose`` from the op's geometry.

    ember keeps a *tight* geometry: the padding after a dimension may be
    negative (trailing input no window reaches). For a convolution such input
    is simply never read, so that padding becomes 0; for a transposed one the
    output grows by it, which is ONNX's ``output_padding``.
    """
    geometry, transposed = node.attrs["geometry"], node.attrs["transposed"]
    inputs = [v for v in node.inputs[:3] if v is not None]
    kernel = list(node.input_shapes[1][2:])
    before = [lo for lo, _ in geometry.padding]
    after = [max(hi, 0) for _, hi in geometry.padding]
    common = dict(kernel_shape=kernel, strides=list(geometry.stride), dilations=list(geometry.dilation),
                  group=geometry.groups, pads=before + after)
    if not transposed:
        return [g.op("Conv", *inputs, **common)]
    output_padding = [max(-hi, 0) for _, hi in geometry.padding]
    if all(p < s for p, s in zip(output_padding, geometry.stride)):
        return [g.op("ConvTranspose", *inputs, output_padding=output_padding, **common)]
    # onnxruntime wants output_padding < stride (PyTorch allows it up to the dilation): pad the result instead,
    # then add the bias, which the extra positions hold too
    out = g.op("ConvTranspose", *inputs[:2], **common)
    rank = len(node.input_shapes[0])
    out = g.op("Pad", out, _ints(g, [0] * rank + [0, 0] + output_padding), mode="constant")
    return [out if len(inputs) < 3 else g.op("Add", out, _per_channel(g, inputs[2], rank))]


# -- pooling ------------------------------------------------------------------------------------------------------
def _onnx_ceil_size(n, k, s, p, d):
    """The output length ONNX's shape inference gives a ceil-mode pool (it keeps a last window that PyTorch,
    and onnxruntime, drop when it starts in the right padding)."""
    return -(-(n + 2 * p - d * (k - 1) - 1) // s) + 1


def _pool(g, node, op_type, **extra):
    """``MaxPool`` / ``AveragePool`` with PyTorch's window rules; ``[values]`` or ``[values, plane indices]``."""
    a = node.attrs
    k, s, p = list(a["kernel_size"]), list(a["stride"]), list(a["padding"])
    d = list(a.get("dilation", (1,) * len(k)))
    nd, ceil = len(k), bool(a.get("ceil_mode", False))
    shape = node.input_shapes[0]
    x, unbatched = _batched(g, node, node.inputs[0], nd)
    attrs = dict(kernel_shape=k, strides=s, pads=p + p, ceil_mode=int(ceil), **extra)
    if op_type == "MaxPool" and d != [1] * nd:
        attrs["dilations"] = d
    with_indices = len(node.output_shapes) == 2
    outs = g.op(op_type, x, outputs=2 if with_indices else 1, **attrs)
    outs = list(outs) if with_indices else [outs]
    sizes = [pooled_size(n, *w, ceil) for n, w in zip(shape[-nd:], zip(k, s, p, d))]
    if ceil and any(_onnx_ceil_size(n, *w) != m for n, w, m in zip(shape[-nd:], zip(k, s, p, d), sizes)):
        axes = list(range(-nd, 0))  # drop the window that starts in the padding (a no-op in onnxruntime)
        outs = [g.op("Slice", o, _ints(g, [0] * nd), _ints(g, sizes), _ints(g, axes)) for o in outs]
    if with_indices:  # ONNX counts over the whole tensor, PyTorch within each (flattened) plane
        outs[1] = g.op("Mod", outs[1], _ints(g, math.prod(shape[-nd:])))
    if op_type == "MaxPool":
        outs[0] = _padding_only_windows(g, node, outs[0], shape[-nd:], k, s, p, d, ceil)
    return [_squeeze(g, o, [0]) for o in outs] if unbatched else outs


def _padding_only_windows(g, node, y, spatial, k, s, p, d, ceil):
    """``y`` with ``-inf`` (PyTorch's maximum of nothing but padding) where a dilated window reads no input;
    onnxruntime gives the lowest finite value there."""
    empty = np.zeros(())
    for win in (Windows(n, *w, ceil) for n, w in zip(spatial, zip(k, s, p, d))):
        reads = np.any([win.valid(j) for j in range(win.k)], axis=0)
        empty = np.logical_or.outer(empty, ~reads)
    if not empty.any():
        return y
    dtype = _np(node.input_dtypes[0])
    lowest = -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min
    return g.op("Where", g.const(empty), g.const(np.asarray(lowest, dtype=dtype)), y)


def max_pool(g, node):
    return _pool(g, node, "MaxPool")


def avg_pool(g, node):
    """``AveragePool``; with ``divisor_override`` the window average (padding counted) is rescaled by each
    window's size over the override, a constant per output position."""
    override = node.attrs.get("divisor_override")
    if not override:
        return _pool(g, node, "AveragePool", count_include_pad=int(node.attrs["count_include_pad"]))
    a = node.attrs
    windows = pool_windows(node.input_shapes[0], a["kernel_size"], a["stride"], a["padding"],
                           (1,) * len(a["kernel_size"]), a["ceil_mode"])
    sizes = np.ones(())
    for w in windows:
        sizes = np.multiply.outer(sizes, np.asarray(w.counts(True), dtype=np.float64))
    factor = g.const((sizes / override).astype(_np(node.input_dtypes[0])))
    return [g.op("Mul", _pool(g, node, "AveragePool", count_include_pad=1)[0], factor)]


def _averaging_matrix(n, out):
    """``[out, n]``: row ``o`` averages PyTorch's adaptive window ``o`` of a length-``n`` dimension."""
    m = np.zeros((out, n))
    for o in range(out):
        start, stop = o * n // out, -(-(o + 1) * n // out)
        m[o, start:stop] = 1.0 / (stop - start)
    return m


def _adaptive(g, node, op_type):
    size = list(node.attrs["output_size"])
    nd = len(size)
    shape = node.input_shapes[0]
    spatial = list(shape[-nd:])
    x = node.inputs[0]
    if all(n % m == 0 for n, m in zip(spatial, size)):
        if op_type == "AveragePool" and size == [1] * nd and len(shape) == nd + 2:
            return [g.op("GlobalAveragePool", x)]
        x, unbatched = _batched(g, node, x, nd)
        k = [n // m for n, m in zip(spatial, size)]
        extra = {"count_include_pad": 0} if op_type == "AveragePool" else {}
        outs = g.op(op_type, x, outputs=len(node.output_shapes), kernel_shape=k, strides=k, **extra)
        outs = list(outs) if len(node.output_shapes) == 2 else [outs]
        if len(outs) == 2:
            outs[1] = g.op("Mod", outs[1], _ints(g, math.prod(spatial)))
        return [_squeeze(g, o, [0]) for o in outs] if unbatched else outs
    if op_type == "MaxPool":
        if len(node.output_shapes) == 2:
            g.unsupported(node, f"adaptive max pooling of size {spatial} to {size} with return_indices has uneven "
                                "windows; ONNX can give indices only when each input size is a multiple of the "
                                "output size")
        for axis, n, m in zip(range(-nd, 0), spatial, size):  # the maximum over each window's taps, axis by axis
            taps = [g.op("Gather", x, _ints(g, list(t)), axis=axis) for t in AdaptiveWindows(n, m).taps]
            x = taps[0] if len(taps) == 1 else g.op("Max", *taps)
        return [x]
    # uneven windows: averaging is linear along each dimension, a product with a constant matrix
    dtype = _np(node.input_dtypes[0])
    if nd == 2:  # rows first: [outH, H] @ [..., H, W]
        x = g.op("MatMul", g.const(_averaging_matrix(spatial[0], size[0]).astype(dtype)), x)
    return [g.op("MatMul", x, g.const(_averaging_matrix(spatial[-1], size[-1]).T.astype(dtype)))]


def adaptive_avg_pool(g, node):
    return _adaptive(g, node, "AveragePool")


def adaptive_max_pool(g, node):
    return _adaptive(g, node, "MaxPool")


# -- normalisation ------------------------------------------------------------------------------------------------
def _ones(g, shape, dtype):
    return g.const(np.ones(shape, dtype=_np(dtype)))


def batch_norm(g, node):
    """``BatchNormalization`` with the running statistics (evaluation mode)."""
    x, mean, var, weight, bias = node.inputs
    shape, dtype = node.input_shapes[0], node.input_dtypes[0]
    c = shape[1]
    weight = weight if weight is not None else _ones(g, [c], dtype)
    bias = bias if bias is not None else g.const(np.zeros([c], dtype=_np(dtype)))
    params = [weight, bias, mean, var]
    for i, v in enumerate(params):  # statistics kept in another precision are used in the input's
        if node.input_dtypes[[3, 4, 1, 2][i]] not in (None, dtype):
            params[i] = g.op("Cast", v, to=onnx_dtype(dtype))
    return [g.op("BatchNormalization", x, *params, epsilon=float(node.attrs.get("eps", 1e-5)))]


def batch_norm_training(g, node):
    """Batch norm with the batch's own statistics (instance norm, or a model traced in training mode):
    ``(y, mean, biased variance)``."""
    x, weight, bias = node.inputs
    rank = len(node.input_shapes[0])
    axes = [0] + list(range(2, rank))
    y, mean, var = _normalize(g, x, axes, node.attrs.get("eps", 1e-5), node.input_dtypes[0])
    flat = _ints(g, [-1])
    return [_affine(g, y, weight, bias, rank), g.op("Reshape", mean, flat), g.op("Reshape", var, flat)]


def layer_norm(g, node):
    """``LayerNormalization`` over the last ``ndim`` dimensions (opset 17), else the same arithmetic."""
    x, weight, bias = node.inputs
    ndim, eps = node.attrs.get("ndim", 1), float(node.attrs.get("eps", 1e-5))
    shape, dtype = node.input_shapes[0], node.input_dtypes[0]
    if g.opset >= 17:
        scale = weight if weight is not None else _ones(g, list(shape[-ndim:]), dtype)
        return [g.op("LayerNormalization", x, scale, *([bias] if bias is not None else []),
                     axis=-ndim, epsilon=eps)]
    y, _, _ = _normalize(g, x, list(range(len(shape) - ndim, len(shape))), eps, dtype)
    if weight is not None:
        y = g.op("Mul", y, weight)
    return [y if bias is None else g.op("Add", y, bias)]


def group_norm(g, node):
    """Statistics per (sample, group) on ``x`` reshaped to ``[N, groups, -1]``, then the per-channel affine map
    (opset 18's GroupNormalization has a per-group scale, which is not PyTorch's)."""
    x, weight, bias = node.inputs
    rank = len(node.input_shapes[0])
    grouped = g.op("Reshape", x, _ints(g, [0, node.attrs["num_groups"], -1]))
    y, _, _ = _normalize(g, grouped, [2], node.attrs.get("eps", 1e-5), node.input_dtypes[0])
    y = g.op("Reshape", y, g.op("Shape", x))
    return [_affine(g, y, weight, bias, rank)]


# -- dropout ------------------------------------------------------------------------------------------------------
def dropout(g, node):
    """Dropout only records an op when it drops (``training=True`` and ``p > 0``): a random mask that an
    exported inference graph cannot reproduce. Outside training it returns its input and leaves no node."""
    g.unsupported(node, "dropout was applied in training mode (a random mask); export the model in eval mode, "
                        "or call the functional form with training=False")


# -- embedding ----------------------------------------------------------------------------------------------------
def embedding(g, node):
    """Rows of the weight: ``Gather`` on axis 0."""
    weight, indices = node.inputs[:2]
    return [g.op("Gather", weight, indices, axis=0)]


def one_hot(g, node):
    """``OneHot`` along a new last axis, with values 0 and 1 of the input's (integer) dtype."""
    dtype = _np(node.input_dtypes[0])
    depth = g.const(np.asarray([node.attrs["num_classes"]], dtype=np.int64))
    return [g.op("OneHot", node.inputs[0], depth, g.const(np.asarray([0, 1], dtype=dtype)), axis=-1)]


# -- padding and resampling ---------------------------------------------------------------------------------------
def _onnx_pads(pad, rank):
    """PyTorch's ``(left, right)`` amounts from the last dimension as ONNX's begins-then-ends over all axes."""
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return begins + ends


def constant_pad_nd(g, node):
    """``Pad`` in constant mode (negative amounts crop, as in ember)."""
    pads = _onnx_pads(node.attrs["pad"], len(node.input_shapes[0]))
    value = g.const(np.asarray(node.attrs.get("value", 0), dtype=_np(node.input_dtypes[0])))
    return [g.op("Pad", node.inputs[0], _ints(g, pads), value, mode="constant")]


def _gather_taps(g, x, maps, dtype):
    """Apply ember's per-axis maps exactly: a ``Gather`` per tap, weighted and summed."""
    for m in maps:
        res = None
        for idx, w in m.taps:
            v = g.op("Gather", x, _ints(g, list(idx)), axis=m.axis)
            if w is not None:
                weights = np.asarray(w, dtype=_np(dtype)).reshape((-1,) + (1,) * (-m.axis - 1))
                v = g.op("Mul", v, g.const(weights))
            res = v if res is None else g.op("Add", res, v)
        x = res
    return x


_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad(g, node):
    """Reflect / replicate padding as ``Pad`` (circular too from opset 19, ``wrap``); amounts that crop, and
    circular padding before opset 19, as ``Gather`` taps."""
    mode, amounts = node.attrs["mode"], node.attrs["pad"]
    if min(amounts) < 0 or (mode == "circular" and g.opset < 19):
        return [_gather_taps(g, node.inputs[0], node.attrs["maps"], node.input_dtypes[0])]
    pads = _onnx_pads(amounts, len(node.input_shapes[0]))
    return [g.op("Pad", node.inputs[0], _ints(g, pads), mode=_PAD_MODES[mode])]


def _map_matrix(taps, n, out):
    """The dense ``[out, n]`` matrix of one axis' map."""
    m = np.zeros((out, n))
    for idx, w in taps:
        for o, i in enumerate(idx):
            m[o, i] += 1.0 if w is None else w[o]
    return m


def _resize_matrix(n, out, scale, transform, nearest_mode):
    """What onnxruntime's ``Resize`` computes along one axis (float32 coordinates; ``scale`` out/in) as a dense
    matrix; ``nearest_mode`` ``None`` for linear interpolation."""
    f32 = np.float32
    o = np.arange(out, dtype=f32)
    if transform == "align_corners":
        src = o * f32(n - 1) / f32(out - 1) if out > 1 else np.zeros(out, dtype=f32)
    elif transform == "asymmetric":
        src = o / scale
    elif transform == "half_pixel" or out > 1:
        src = (o + f32(0.5)) / scale - f32(0.5)
    else:  # pytorch_half_pixel maps a single output to 0
        src = np.zeros(out, dtype=f32)
    m = np.zeros((out, n))
    if nearest_mode == "floor":
        idx = np.floor(src)
    elif nearest_mode == "round_prefer_ceil":
        idx = np.where(src - np.floor(src) == f32(0.5), np.ceil(src), np.round(src))
    if nearest_mode is not None:
        m[np.arange(out), np.clip(idx.astype(np.int64), 0, n - 1)] = 1.0
        return m
    src = np.clip(src, f32(0), f32(n - 1))
    low = np.minimum(src.astype(np.int64), n - 1)
    high = np.minimum(low + 1, n - 1)
    w_high = np.where(low == high, 0.5, np.abs(src - low))
    w_low = np.where(low == high, 0.5, np.abs(src - high))
    np.add.at(m, (np.arange(out), low), w_low)
    np.add.at(m, (np.arange(out), high), w_high)
    return m


def _resize_candidates(mode, align_corners):
    """``(coordinate_transformation_mode, nearest_mode)`` pairs that can express ember's ``mode``."""
    if mode == "nearest":
        return (("asymmetric", "floor"),)
    if mode == "nearest-exact":
        return (("half_pixel", "round_prefer_ceil"),)
    return (("align_corners", None),) if align_corners else (("pytorch_half_pixel", None), ("half_pixel", None))


def _resize_form(maps, mode, align_corners, scale_factors):
    """The first ``Resize`` form (transform, nearest mode, whether to give scales) that reproduces ember's maps."""
    f32 = np.float32
    by_axis = {m.axis: m for m in maps}
    axes = sorted(by_axis)
    ember = [_map_matrix(by_axis[a].taps, by_axis[a].size, by_axis[a].out) for a in axes]
    scales = [None] * len(axes) if scale_factors is None else [scale_factors[a] for a in axes]
    for transform, nearest_mode in _resize_candidates(mode, align_corners):
        for use_scales in ((True, False) if None not in scales else (False,)):
            ok = True
            for a, want, sf in zip(axes, ember, scales):
                n, out = by_axis[a].size, by_axis[a].out
                scale = f32(sf) if use_scales else f32(out) / f32(n)
                if use_scales and not math.floor(float(f32(sf)) * n) == int(f32(sf) * f32(n)) == out:
                    # the output size that shape inference (double) and onnxruntime (float) derive must be ember's
                    ok = False
                    break
                got = _resize_matrix(n, out, scale, transform, nearest_mode)
                if not np.allclose(got, want, rtol=0, atol=1e-6):
                    ok = False
                    break
            if ok:
                return transform, nearest_mode, use_scales
    return None


def upsample(g, node):
    """``Resize`` when onnxruntime's rounding reproduces ember's source positions and weights for these sizes
    (with the scale factors, when given, or the sizes); otherwise the same positions and weights as ``Gather``
    taps."""
    a, x = node.attrs, node.inputs[0]
    shape, maps = node.input_shapes[0], a["maps"]
    nd = len(shape) - 2
    scale_factors = None
    if a.get("scales") and None not in a["scales"]:
        scale_factors = {i - nd: s for i, s in enumerate(a["scales"])}
    form = _resize_form(maps, a["mode"], a["align_corners"], scale_factors)
    if form is None:
        return [_gather_taps(g, x, maps, node.input_dtypes[0])]
    transform, nearest_mode, use_scales = form
    attrs = dict(mode="linear" if nearest_mode is None else "nearest", coordinate_transformation_mode=transform)
    if nearest_mode is not None:
        attrs["nearest_mode"] = nearest_mode
    if use_scales:
        scales = g.const(np.asarray([1.0, 1.0] + list(a["scales"]), dtype=np.float32))
        return [g.op("Resize", x, "", scales, **attrs)]
    spatial = list(node.output_shapes[0][2:])
    if any(i == 0 and axis < 2 for i, axis in node.dynamic):  # a dynamic batch: take N and C from the input
        sizes = g.op("Concat", g.op("Shape", x, start=0, end=2), _ints(g, spatial), axis=0)
    else:
        sizes = _ints(g, list(shape[:2]) + spatial)
    return [g.op("Resize", x, "", "", sizes, **attrs)]


LOWERINGS = {
    "linear": linear, "linear_no_bias": linear,
    "convolution": convolution, "convolution_backward": convolution,
    "max_pool1d": max_pool, "max_pool2d": max_pool,
    "max_pool1d_with_indices": max_pool, "max_pool2d_with_indices": max_pool,
    "avg_pool1d": avg_pool, "avg_pool2d": avg_pool,
    "adaptive_avg_pool1d": adaptive_avg_pool, "adaptive_avg_pool2d": adaptive_avg_pool,
    "adaptive_max_pool1d": adaptive_max_pool, "adaptive_max_pool2d": adaptive_max_pool,
    "adaptive_max_pool1d_with_indices": adaptive_max_pool, "adaptive_max_pool2d_with_indices": adaptive_max_pool,
    "batch_norm": batch_norm, "batch_norm_training": batch_norm_training,
    "layer_norm": layer_norm, "group_norm": group_norm,
    "dropout": dropout, "alpha_dropout": dropout,
    "embedding": embedding, "one_hot": one_hot,
    "constant_pad_nd": constant_pad_nd, "pad": pad,
    "upsample": upsample,
}
