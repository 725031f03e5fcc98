"""Indexing: ``x[key]`` (advanced indexing included), ``index_put``, ``masked_select``, ``take``.

``x[key]`` follows PyTorch: ints, slices and ``None`` make a view; integer
tensors or lists and boolean masks (advanced indexing) make a copy whose
backward adds the gradient back at the indexed positions (so a repeated
index accumulates).

>>> import ember
>>> x = ember.arange(12).view(3, 4)
>>> x[[0, 2], 1:3]
tensor([[ 1,  2],
        [ 9, 10]])
>>> x[x > 9]
tensor([10, 11])
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as dt
from ..autograd.function import Op
from ._common import Tensor, cast_scalar, tensor_method
from ._scatter import add_rows, put_rows
from .creation import zeros
from .slicing import index_view

__all__ = ["index_put", "masked_select", "take"]

_INDEX_DTYPES = (dt.int64, dt.int32, dt.int16, dt.int8, dt.uint8)


# -- advanced indexing ------------------------------------------------------------
class AdvancedPlan:
    """Where the advanced indices act: ``dims`` of the (basic-indexed) input, their flat row numbers ``rows``
    into those dims taken together, and the broadcast index shape, placed first or at ``dims[0]``."""

    __slots__ = ("dims", "rows", "index_shape", "at")

    def __init__(self, dims, rows, index_shape, at):
        self.dims, self.rows, self.index_shape, self.at = dims, rows, index_shape, at

    def moved(self, xp, a):
        """``a`` with the indexed dims first, merged into one: shape ``(N, *rest)``."""
        nd = a.ndim
        perm = self.dims + tuple(d for d in range(nd) if d not in self.dims)
        moved = xp.permute_dims(a, perm) if perm != tuple(range(nd)) else a
        k = len(self.dims)
        rest = moved.shape[k:]
        return xp.reshape(moved, (math.prod(moved.shape[:k]),) + rest), perm, moved.shape

    def place(self, xp, taken, rest):
        """Rows gathered as ``(M, *rest)`` -> the result's layout."""
        out = xp.reshape(taken, self.index_shape + rest)
        k = len(self.index_shape)
        if self.at:
            order = tuple(range(k, k + self.at)) + tuple(range(k)) + tuple(range(k + self.at, out.ndim))
            out = xp.permute_dims(out, order)
        return out

    def unplace(self, xp, value, rest):
        """The result's layout -> rows ``(M, *rest)`` (the inverse of :meth:`place`)."""
        k = len(self.index_shape)
        if self.at:
            order = tuple(range(self.at, self.at + k)) + tuple(range(self.at)) + tuple(range(self.at + k, value.ndim))
            value = xp.permute_dims(value, order)
        return xp.reshape(value, (math.prod(self.index_shape),) + rest)


def _unmove(xp, flat, perm, moved_shape):
    moved = xp.reshape(flat, moved_shape)
    inverse = [0] * len(perm)
    for i, d in enumerate(perm):
        inverse[d] = i
    return xp.permute_dims(moved, tuple(inverse)) if perm != tuple(range(len(perm))) else moved


class Index(Op):
    name_ = "index"

    @staticmethod
    def forward(ctx, xp, a, plan=None):
        ctx.plan, ctx.shape = plan, a.shape
        flat, _, moved_shape = plan.moved(xp, a)
        return plan.place(xp, xp.take(flat, plan.rows, axis=0), moved_shape[len(plan.dims):])

    @staticmethod
    def backward(ctx, g):
        base = zeros(ctx.shape, dtype=g.dtype, device=g.device)
        return IndexPut.apply(base, g, plan=ctx.plan, accumulate=True)


class IndexPut(Op):
    name_ = "indexput"

    @staticmethod
    def forward(ctx, xp, a, value, plan=None, accumulate=False):
        ctx.plan, ctx.accumulate = plan, accumulate
        ctx.value_shape = getattr(value, "shape", None)
        flat, perm, moved_shape = plan.moved(xp, a)
        rest = moved_shape[len(plan.dims):]
        if not hasattr(value, "shape"):
            value = xp.full(plan.index_shape + rest, value, dtype=a.dtype)
        rows = plan.unplace(xp, value, rest)
        out = (add_rows if accumulate else put_rows)(xp, flat, plan.rows, rows)
        return _unmove(xp, out, perm, moved_shape)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        ga = gv = None
        if need[0]:
            ga = g if ctx.accumulate else IndexPut.apply(g, 0.0, plan=ctx.plan)
        if need[1]:
            gv = Index.apply(g, plan=ctx.plan)
        return ga, gv


def _to_index_array(idx, device):
    """An index entry (tensor, list, NumPy array) as a NumPy array of int64 or bool."""
    if isinstance(idx, Tensor):
        if idx._dtype not in _INDEX_DTYPES and idx._dtype is not dt.bool_:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        arr = idx._device.backend.to_numpy(idx._data)
        return arr if arr.dtype == np.bool_ else arr.astype(np.int64, copy=False)
    if isinstance(idx, (list, tuple)):  # entries may be tensors (``x[[t0, t1], 0]``)
        idx = [e.tolist() if isinstance(e, Tensor) else e for e in idx]
    arr = np.asarray(idx)
    if arr.dtype == np.bool_:
        return arr
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return arr.astype(np.int64, copy=False)


def _is_advanced(k):
    if isinstance(k, Tensor):
        return k._data.ndim > 0 or k._dtype is dt.bool_
    return isinstance(k, (list, tuple, range, np.ndarray))


def _sequence_as_tuple(key: list) -> bool:
    """PyTorch's legacy rule: a list index (of fewer than 32 entries) that holds a slice, ``...``, None, a sequence or
    a tensor means the tuple of its entries (``x[[0, slice(None)]]`` is ``x[0, :]``), with a warning; a list of
    numbers is an index array."""
    return len(key) < 32 and any(k is None or k is Ellipsis or isinstance(k, (slice, list, tuple, range, Tensor,
                                                                              np.ndarray)) for k in key)


def split_key(x, key):
    """``key`` -> (basic key, [(dim in the basic result, NumPy index array)]), masks expanded to int arrays."""
    if isinstance(key, list) and _sequence_as_tuple(key):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated; use x[tuple(seq)] "
                      "instead of x[seq] (PyTorch will read it as an index tensor, x[tensor(seq)], in a future "
                      "release)", UserWarning, stacklevel=3)
        key = tuple(key)
    elif not isinstance(key, tuple):
        key = (key,)
    basic, adv = [], []
    dim_in = dim_out = 0
    shape = x._data.shape
    for k in key:
        if k is None:
            basic.append(None)
            dim_out += 1
        elif k is Ellipsis:
            basic.append(Ellipsis)
            n_rest = sum(1 for j in key if j is not None and j is not Ellipsis and not _is_mask(j)) + \
                sum(_mask_ndim(j) for j in key if _is_mask(j))
            skipped = len(shape) - n_rest
            dim_in += skipped
            dim_out += skipped
        elif isinstance(k, slice):
            basic.append(k)
            dim_in += 1
            dim_out += 1
        elif _is_advanced(k):
            arr = _to_index_array(k, x._device)
            if arr.dtype == np.bool_:
                k_nd = max(arr.ndim, 1)
                want = shape[dim_in:dim_in + arr.ndim]
                for j, (m, n) in enumerate(zip(arr.shape, want)):
                    if m != n:
                        raise IndexError(f"The shape of the mask {list(arr.shape)} at index {j} does not match the "
                                         f"shape of the indexed tensor {list(shape)} at index {dim_in + j}")
                if arr.ndim == 0:
                    raise IndexError("indexing with a 0-dim bool tensor is not supported; use an int or a slice")
                for j, part in enumerate(np.nonzero(arr)):
                    adv.append((dim_out + j, part))
                basic.extend([slice(None)] * k_nd)
                dim_in += k_nd
                dim_out += k_nd
            else:
                adv.append((dim_out, arr))
                basic.append(slice(None))
                dim_in += 1
                dim_out += 1
        elif isinstance(k, bool):
            raise IndexError("indexing with a Python bool is not supported; use an int, a slice or a bool tensor")
        else:
            try:
                k = int(k.item()) if isinstance(k, Tensor) else k.__index__()
            except (AttributeError, TypeError, RuntimeError):
                raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte tensors "
                                 f"are valid indices (got {type(k).__name__})") from None
            basic.append(k)
            dim_in += 1
    return tuple(basic), adv


def _is_mask(k):
    return (isinstance(k, Tensor) and k._dtype is dt.bool_) or (isinstance(k, np.ndarray) and k.dtype == np.bool_)


def _mask_ndim(k):
    return max(k.ndim, 1)


def make_plan(v, adv):
    """The :class:`AdvancedPlan` for index arrays ``adv`` acting on tensor ``v``."""
    shape = v._data.shape
    dims = tuple(d for d, _ in adv)
    try:
        arrays = np.broadcast_arrays(*(a for _, a in adv))
    except ValueError:
        shapes = ", ".join(str(list(a.shape)) for _, a in adv)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes "
                         f"[{shapes}]") from None
    index_shape = arrays[0].shape if arrays else ()
    rows = np.zeros(index_shape, dtype=np.int64)
    for d, arr in zip(dims, arrays):
        n = shape[d]
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if lo < -n or hi >= n:  # PyTorch names the first one out of bounds
                bad = int(arr.flat[np.argmax((arr < -n) | (arr >= n))])
                raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")
        rows = rows * n + np.where(arr < 0, arr + n, arr)
    consecutive = dims == tuple(range(dims[0], dims[0] + len(dims)))
    backend = v._device.backend
    return AdvancedPlan(dims, backend.from_numpy(np.ascontiguousarray(rows.reshape(-1)), v._device),
                        tuple(index_shape), dims[0] if consecutive else 0)


@tensor_method("__getitem__")
def _getitem(self, key):
    """``self[key]``: a view for ints/slices/None/Ellipsis, a copy with advanced (tensor/list/mask) indices."""
    basic, adv = split_key(self, key)
    v = index_view(self, basic)
    if not adv:
        return v
    return Index.apply(v, plan=make_plan(v, adv))


def _cast_scalar(value, like):
    if isinstance(value, Tensor):
        value = value.item()
    return cast_scalar(value, like)


@tensor_method()
def index_put(input, indices, values, accumulate=False):
    """``input`` with ``values`` written (or added, ``accumulate=True``) at ``input[indices]``.

    >>> import ember
    >>> ember.zeros(3).index_put((ember.tensor([0, 2]),), ember.tensor(1.0))
    tensor([1., 0., 1.])
    """
    adv = [(d, _to_index_array(i, input._device)) for d, i in enumerate(indices)]
    expanded = []
    for d, arr in adv:
        if arr.dtype == np.bool_:
            expanded.extend((d + j, part) for j, part in enumerate(np.nonzero(arr)))
        else:
            expanded.append((d, arr))
    return put_advanced(input, make_plan(input, expanded), values, accumulate)


def put_advanced(target, plan, values, accumulate):
    """``target`` with ``values`` (broadcast to the indexed shape) written or added by ``plan``."""
    rest = tuple(n for d, n in enumerate(target.shape) if d not in plan.dims)
    k = len(plan.index_shape)
    shape = list(plan.index_shape + rest)
    if plan.at:
        shape = shape[k:k + plan.at] + shape[:k] + shape[k + plan.at:]
    if isinstance(values, Tensor):
        if values._dtype is not target._dtype:
            values = values.to(target._dtype)
        values = _broadcast_value(values, tuple(shape))
        return IndexPut.apply(target, values, plan=plan, accumulate=accumulate)
    return IndexPut.apply(target, _cast_scalar(values, target), plan=plan, accumulate=accumulate)


def _broadcast_value(value, shape):
    vshape = tuple(value.shape)
    while len(vshape) > len(shape) and vshape[0] == 1:
        vshape = vshape[1:]
    if vshape != tuple(value.shape):
        value = value.reshape(vshape)
    try:
        np.broadcast_shapes(vshape, shape)
        if len(vshape) > len(shape) or np.broadcast_shapes(vshape, shape) != tuple(shape):
            raise ValueError
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(vshape)} cannot be broadcast to indexing "
                           f"result of shape {list(shape)}") from None
    return value if vshape == tuple(shape) else value.expand(shape)


@tensor_method()
def masked_select(input, mask):
    """The elements of ``input`` where ``mask`` (broadcast) is True, as a 1-D tensor.

    >>> import ember
    >>> ember.tensor([1, 2, 3]).masked_select(ember.tensor([True, False, True]))
    tensor([1, 3])
    """
    if mask._dtype is not dt.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    return _getitem(input.expand(shape), mask.expand(shape))


@tensor_method()
def take(input, index):
    """Elements of the flattened ``input`` at ``index`` (any shape, negative indices count from the end).

    >>> import ember
    >>> ember.tensor([[4, 3], [5, 7]]).take(ember.tensor([0, 3]))
    tensor([4, 7])
    """
    flat = input.reshape(-1)
    return _getitem(flat, index)
