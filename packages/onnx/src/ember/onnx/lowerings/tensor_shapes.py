"""ONNX lowerings of the shape and view ops (view/reshape, permute, squeeze, expand, basic indexing, cat, stack,
flip, repeat, tril/triu) and of indexing with integer tensors (index_select, gather, advanced indexing).

:func:`shape_input` and :func:`reshape` are for other lowerings too: they write a target shape that keeps the
dynamic axes free.
"""
from __future__ import annotations

import math

import numpy as np

from .._graph import onnx_dtype

INT64_MAX = np.iinfo(np.int64).max


def _ints(g, values):
    return g.const(np.asarray(list(values), dtype=np.int64))


def shape_input(g, node, x, shape, input_index=0):
    """A shape tensor for ``Reshape`` of ``node``'s input ``x`` to the traced ``shape`` (output 0).

    An output axis that follows a dynamic axis becomes ``0`` (the input's size
    at the same position), the size of the input axis that has its size in
    both traces (through ``Shape``), or ``-1`` for one left over.
    """
    shape = [int(s) for s in shape]
    out_dyn = sorted(a for j, a in node.output_dynamic if j == 0)
    if not out_dyn:
        return _ints(g, shape)
    in_a = node.input_shapes[input_index]
    in_b = node.input_shapes_alt[input_index] if node.input_shapes_alt else in_a
    out_b = node.output_shapes_alt[0] if node.output_shapes_alt else shape
    in_dyn = [a for i, a in node.dynamic if i == input_index]
    pieces, left = list(shape), []
    for k in out_dyn:
        same = [a for a in in_dyn if in_a[a] == shape[k] and in_b[a] == out_b[k]]
        if k in same:
            pieces[k] = 0
        elif same:
            pieces[k] = ("gather", same[0])
        else:
            left.append(k)
    if left:
        pieces[left[0]] = -1
    for k in left[1:]:
        pieces[k] = ("size", g.symbolic_size(shape[k], out_b[k], node))
    if not any(isinstance(p, tuple) for p in pieces):
        return _ints(g, pieces)
    sizes = g.op("Shape", x)
    parts = [(g.op("Gather", sizes, _ints(g, [p[1]]), axis=0) if p[0] == "gather" else p[1])
             if isinstance(p, tuple) else _ints(g, [p]) for p in pieces]
    return g.op("Concat", *parts, axis=0)


def reshape(g, node, x, shape, input_index=0):
    """``Reshape`` of input ``x`` to the traced ``shape``, keeping dynamic axes free."""
    return g.op("Reshape", x, shape_input(g, node, x, shape, input_index))


def _unsqueeze(g, x, axes):
    return g.op("Unsqueeze", x, _ints(g, axes))


def _squeeze(g, x, axes):
    return g.op("Squeeze", x, _ints(g, axes)) if axes else x


# -- shapes and views ----------------------------------------------------------------------------------------------
def lower_view(g, node):
    return [reshape(g, node, node.inputs[0], node.output_shapes[0])]


def lower_identity(g, node):
    return [g.op("Identity", node.inputs[0])]


def lower_permute(g, node):
    return [g.op("Transpose", node.inputs[0], perm=[int(d) for d in node.op.dims])]


def lower_squeeze(g, node):
    dims = node.attrs.get("dims", ())
    return [g.op("Squeeze", node.inputs[0], _ints(g, dims)) if dims else g.op("Identity", node.inputs[0])]


def lower_expand(g, node):
    """``Expand``; a dynamic size the input has stays 1 (Expand broadcasts both ways), one it lacks is computed
    from the graph inputs' sizes."""
    in_shape, out_shape = node.input_shapes[0], node.output_shapes[0]
    out_alt = node.output_shapes_alt[0] if node.output_shapes_alt else out_shape
    lead = len(out_shape) - len(in_shape)
    pieces = [_ints(g, [s]) for s in out_shape]
    dynamic = sorted(a for j, a in node.output_dynamic if j == 0)
    for a in dynamic:
        own = in_shape[a - lead] if a >= lead else 1
        if own == out_shape[a] and (0, a - lead) in node.dynamic:
            pieces[a] = _ints(g, [1])
        else:
            pieces[a] = g.symbolic_size(out_shape[a], out_alt[a], node)
    if not dynamic:
        return [g.op("Expand", node.inputs[0], _ints(g, out_shape))]
    return [g.op("Expand", node.inputs[0], g.op("Concat", *pieces, axis=0))]


def _from_end(value, alt, size, size_alt):
    """A start/stop/index that the second trace shows to count from the end (``-1``, ``:-2``) as negative."""
    if value is None or alt is None or value == alt or value - size != alt - size_alt:
        return value
    return value - size


def lower_basic_index(g, node):
    """``a[key]`` (ints, in-bounds slices, None, a trailing Ellipsis): Slice, then Squeeze, then Unsqueeze.

    On a dynamic axis, a position that the second trace shows to count from the end is written negative.
    """
    key = node.attrs["key"]
    key = key if isinstance(key, tuple) else (key,)
    alt = node.attrs_alt["key"] if node.attrs_alt else key
    alt = alt if isinstance(alt, tuple) else (alt,)
    shape = node.input_shapes[0]
    shape_alt = node.input_shapes_alt[0] if node.input_shapes_alt else shape
    nd = len(shape)
    starts, ends, axes, steps, int_axes, new_axes = [], [], [], [], [], []
    dim = out_pos = 0
    for pos, k in enumerate(key):
        if k is Ellipsis:
            skipped = nd - dim - sum(1 for j in key[pos + 1:] if j is not None and j is not Ellipsis)
            dim += skipped
            out_pos += skipped
            continue
        if k is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        n, n_alt, k_alt = shape[dim], shape_alt[dim], alt[pos]
        if isinstance(k, slice):
            start = _from_end(k.start or 0, k_alt.start or 0, n, n_alt)
            stop = _from_end(k.stop, k_alt.stop, n, n_alt)
            step = k.step or 1
            if (start, stop, step) != (0, None, 1):
                starts.append(start)
                ends.append(INT64_MAX if stop is None else stop)
                axes.append(dim)
                steps.append(step)
            out_pos += 1
        else:
            i = _from_end(int(k), int(k_alt), n, n_alt)
            starts.append(i)
            ends.append(INT64_MAX if i == -1 else i + 1)
            axes.append(dim)
            steps.append(1)
            int_axes.append(dim)
        dim += 1
    x = node.inputs[0]
    if axes:
        x = g.op("Slice", x, _ints(g, starts), _ints(g, ends), _ints(g, axes), _ints(g, steps))
    x = _squeeze(g, x, int_axes)
    if new_axes:
        x = _unsqueeze(g, x, new_axes)
    return [x if x != node.inputs[0] else g.op("Identity", x)]


def lower_cat(g, node):
    inputs = [n for n, s in zip(node.inputs, node.input_shapes) if s is not None]
    return [g.op("Concat", *inputs, axis=int(node.attrs.get("dim", 0)))]


def lower_stack(g, node):
    dim = int(node.attrs.get("dim", 0))
    return [g.op("Concat", *(_unsqueeze(g, x, [dim]) for x in node.inputs), axis=dim)]


def lower_flip(g, node):
    dims = list(node.attrs.get("dims", ()))
    if not dims:
        return [g.op("Identity", node.inputs[0])]
    n = len(dims)
    return [g.op("Slice", node.inputs[0], _ints(g, [-1] * n), _ints(g, [-INT64_MAX] * n), _ints(g, dims),
                 _ints(g, [-1] * n))]


def lower_repeat(g, node):
    repeats = list(node.attrs["repeats"])
    x = node.inputs[0]
    lead = len(repeats) - len(node.input_shapes[0])
    if lead:
        x = _unsqueeze(g, x, list(range(lead)))
    return [g.op("Tile", x, _ints(g, repeats))]


def _tri(upper):
    def lower(g, node):
        k = g.const(np.asarray(int(node.attrs.get("diagonal", 0)), dtype=np.int64))
        return [g.op("Trilu", node.inputs[0], k, upper=int(upper))]
    return lower


# -- indexing ------------------------------------------------------------------------------------------------------
def _index(g, array):
    """The ``index=`` array of an op: the model's own tensor (as int64) or a constant."""
    name = g.value_of(array)
    if name is None:
        return g.const(np.asarray(array, dtype=np.int64))
    return name if str(array.dtype) == "int64" else g.op("Cast", name, to=onnx_dtype(np.int64))


def lower_index_select(g, node):
    index = _index(g, node.attrs["index"])
    return [g.op("Gather", node.inputs[0], index, axis=int(node.attrs.get("dim", 0)))]


def lower_gather(g, node):
    index = _index(g, node.attrs["index"])
    return [g.op("GatherElements", node.inputs[0], index, axis=int(node.attrs.get("dim", 0)))]


def lower_index(g, node):
    """Advanced indexing with integer/bool index tensors (traced values): moved, flattened, one Gather."""
    plan = node.attrs["plan"]
    in_shape = node.input_shapes[0]
    if any(i == 0 for i, _ in node.dynamic):
        g.unsupported(node, "advanced indexing of a tensor with dynamic axes")
    nd = len(in_shape)
    perm = list(plan.dims) + [d for d in range(nd) if d not in plan.dims]
    x = node.inputs[0]
    if perm != list(range(nd)):
        x = g.op("Transpose", x, perm=perm)
    k = len(plan.dims)
    rest = [in_shape[d] for d in perm[k:]]
    x = g.op("Reshape", x, _ints(g, [math.prod(in_shape[d] for d in plan.dims)] + rest))
    taken = g.op("Gather", x, g.const(np.asarray(plan.rows, dtype=np.int64)), axis=0)
    out = g.op("Reshape", taken, _ints(g, list(plan.index_shape) + rest))
    if plan.at:
        n = len(plan.index_shape)
        order = list(range(n, n + plan.at)) + list(range(n)) + list(range(n + plan.at, n + len(rest)))
        out = g.op("Transpose", out, perm=order)
    return [out]



LOWERINGS: dict = {
    "view": lower_view, "reshape": lower_view, "clone": lower_identity, "alias": lower_identity,
    "permute": lower_permute, "transpose": lower_permute, "t": lower_permute,
    "squeeze": lower_squeeze, "squeezedim": lower_squeeze, "squeezedims": lower_squeeze, "expand": lower_expand,
    **{name: lower_basic_index for name in ("basicindex", "select", "slice", "unsqueeze", "unbind", "split",
                                            "splitwithsizes")},
    "cat": lower_cat, "stack": lower_stack, "flip": lower_flip, "repeat": lower_repeat,
    "tril": _tri(False), "triu": _tri(True),
    "indexselect": lower_index_select, "gather": lower_gather, "index": lower_index,
}
