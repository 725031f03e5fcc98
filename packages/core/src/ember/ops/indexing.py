"""Reading by index: ``x[key]`` (advanced indexing included), ``index_select``, ``gather``,
``take_along_dim``, and the out-of-place writes ``scatter``, ``scatter_add``, ``index_add``, ``index_put``.

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

import numpy as np

from .. import _dtype as dt
from ..autograd.function import Op
from ._common import Tensor, tensor_method, wrap_dim
from ._scatter import add_rows, along_dim_index, mul_rows, put_rows
from .slicing import index_view

__all__ = ["index_select", "gather", "take_along_dim", "scatter", "scatter_add", "index_add", "index_put",
           "masked_select", "take"]

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
    @staticmethod
    def forward(ctx, xp, a, plan=None):
        ctx.plan, ctx.shape = plan, a.shape
        flat, _, moved_shape = plan.moved(xp, a)
        return plan.place(xp, xp.take(flat, plan.rows, axis=0), moved_shape[len(plan.dims):])

    @staticmethod
    def backward(ctx, g):
        from .creation import zeros
        base = zeros(ctx.shape, dtype=g.dtype, device=g.device)
        return IndexPut.apply(base, g, plan=ctx.plan, accumulate=True)


class IndexPut(Op):
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
    return isinstance(k, (list, tuple, np.ndarray))


def split_key(x, key):
    """``key`` -> (basic key, [(dim in the basic result, NumPy index array)]), masks expanded to int arrays."""
    if not isinstance(key, tuple):
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
            if lo < -n or hi >= n:
                bad = hi if hi >= n else lo
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


# -- along one dimension ---------------------------------------------------------
def _check_index(index, fn, dtypes=(dt.int64,)):
    if not isinstance(index, Tensor):
        raise TypeError(f"{fn}(): argument 'index' must be a Tensor, not {type(index).__name__}")
    if index._dtype not in dtypes:
        names = " or ".join(d.name for d in dtypes)
        raise RuntimeError(f"{fn}(): Expected dtype {names} for index")


def _bounds(xp, idx, n, d, fn, allow_negative=False):
    if idx.size == 0:
        return
    lo, hi = int(xp.min(idx)), int(xp.max(idx))
    lo_ok = -n if allow_negative else 0
    if lo < lo_ok or hi >= n:
        if fn == "index_select":
            raise IndexError("index out of range in self")
        raise RuntimeError(f"index {hi if hi >= n else lo} is out of bounds for dimension {d} with size {n}")


class IndexSelect(Op):
    @staticmethod
    def forward(ctx, xp, a, index=None, dim=0):
        ctx.shape, ctx.index, ctx.dim = a.shape, index, dim
        if a.ndim == 0:
            return xp.reshape(a, (1,))[index] if index.ndim else a
        return xp.take(a, index, axis=dim)

    @staticmethod
    def backward(ctx, g):
        from .creation import zeros
        return IndexAdd.apply(zeros(ctx.shape, dtype=g.dtype, device=g.device), g, index=ctx.index, dim=ctx.dim)


class IndexAdd(Op):
    @staticmethod
    def forward(ctx, xp, a, src, index=None, dim=0, alpha=1):
        ctx.index, ctx.dim, ctx.alpha = index, dim, alpha
        if alpha != 1:
            src = src * alpha
        if a.ndim == 0:
            return a + xp.sum(src)
        moved_a = xp.moveaxis(a, dim, 0)
        moved_src = xp.moveaxis(src, dim, 0)
        out = add_rows(xp, moved_a, index, xp.astype(moved_src, a.dtype))
        return xp.moveaxis(out, 0, dim)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        gs = None
        if need[1]:
            gs = IndexSelect.apply(g, index=ctx.index, dim=ctx.dim)
            if ctx.alpha != 1:
                gs = gs * ctx.alpha
        return (g if need[0] else None), gs


@tensor_method()
def index_select(input, dim, index):
    """The entries at ``index`` (a 1-D int tensor) along ``dim``.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).index_select(1, ember.tensor([1, 1]))
    tensor([[2, 2],
            [4, 4]])
    """
    _check_index(index, "index_select", (dt.int64, dt.int32))
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    if index._data.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    idx = _same_device(index, input)
    _bounds(input._device.backend.xp, idx, input._data.shape[d] if nd else 1, d, "index_select")
    return IndexSelect.apply(input, index=idx, dim=d)


@tensor_method()
def index_add(input, dim, index, source, *, alpha=1):
    """``input`` with ``alpha * source`` slices added at ``index`` along ``dim`` (repeats accumulate).

    >>> import ember
    >>> ember.zeros(3).index_add(0, ember.tensor([0, 0, 2]), ember.ones(3))
    tensor([2., 0., 1.])
    """
    _check_index(index, "index_add", (dt.int64, dt.int32))
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    idx = _same_device(index, input)
    if idx.ndim > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    want = input._data.shape[:d] + (idx.shape[0] if idx.ndim else 1,) + input._data.shape[d + 1:] if nd else ()
    if tuple(source.shape) != tuple(want) and not (nd == 0 and source._data.size == idx.size):
        raise RuntimeError(f"index_add_(): Source/destination tensor must have same slice shapes. Destination "
                           f"slice shape: {list(input.shape[d + 1:] if nd else [])} at dimension {d} and source "
                           f"slice shape: {list(source.shape)[d + 1:]} at dimension 0.")
    _bounds(input._device.backend.xp, idx, input._data.shape[d] if nd else 1, d, "index_add")
    if source._dtype is not input._dtype:
        source = source.to(input._dtype)
    return IndexAdd.apply(input, source, index=idx, dim=d, alpha=alpha)


def _same_device(index, like):
    if index._device.key == like._device.key:
        return index._data
    from .conversion import move_array
    return move_array(index._data, index._device, like._device)


class Gather(Op):
    @staticmethod
    def forward(ctx, xp, a, index=None, dim=0):
        ctx.shape, ctx.index, ctx.dim = a.shape, index, dim
        key = tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index.shape))
        return xp.take_along_axis(a[key], index, axis=dim)

    @staticmethod
    def backward(ctx, g):
        from .creation import zeros
        return ScatterAdd.apply(zeros(ctx.shape, dtype=g.dtype, device=g.device), g, index=ctx.index, dim=ctx.dim)


def _scatter_positions(xp, a, index, dim):
    return along_dim_index(xp, index, dim, a.shape)


def _narrow_to(xp, src, shape):
    key = tuple(slice(0, n) for n in shape)
    return xp.reshape(src[key], (-1,))


class ScatterAdd(Op):
    @staticmethod
    def forward(ctx, xp, a, src, index=None, dim=0):
        ctx.index, ctx.dim, ctx.src_shape = index, dim, src.shape
        flat = add_rows(xp, xp.reshape(a, (-1,)), _scatter_positions(xp, a, index, dim),
                        _narrow_to(xp, src, index.shape))
        return xp.reshape(flat, a.shape)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        gs = None
        if need[1]:
            gs = Gather.apply(g, index=ctx.index, dim=ctx.dim)
            if tuple(gs.shape) != tuple(ctx.src_shape):
                gs = _pad_to(gs, ctx.src_shape)
        return (g if need[0] else None), gs


class Scatter(Op):
    @staticmethod
    def forward(ctx, xp, a, src, index=None, dim=0):
        ctx.index, ctx.dim, ctx.src_shape = index, dim, src.shape
        flat = put_rows(xp, xp.reshape(a, (-1,)), _scatter_positions(xp, a, index, dim),
                        _narrow_to(xp, src, index.shape))
        return xp.reshape(flat, a.shape)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        ga = gs = None
        if need[0]:
            ga = ScatterValue.apply(g, index=ctx.index, dim=ctx.dim, value=0.0)
        if need[1]:
            gs = Gather.apply(g, index=ctx.index, dim=ctx.dim)
            if tuple(gs.shape) != tuple(ctx.src_shape):
                gs = _pad_to(gs, ctx.src_shape)
        return ga, gs


def _pad_to(g, shape):
    """``g`` placed at the start of zeros of ``shape`` (the adjoint of narrowing to ``g``'s shape)."""
    from .slicing import BasicIndexBackward
    return BasicIndexBackward.apply(g, key=tuple(slice(0, n) for n in g.shape), shape=tuple(shape))


class ScatterValue(Op):
    backward_name = "ScatterBackward1"

    @staticmethod
    def forward(ctx, xp, a, index=None, dim=0, value=0):
        ctx.index, ctx.dim = index, dim
        src = xp.full((index.size,), value, dtype=a.dtype)
        flat = put_rows(xp, xp.reshape(a, (-1,)), _scatter_positions(xp, a, index, dim), src)
        return xp.reshape(flat, a.shape)

    @staticmethod
    def backward(ctx, g):
        return ScatterValue.apply(g, index=ctx.index, dim=ctx.dim, value=0.0)


class ScatterMultiply(Op):
    @staticmethod
    def forward(ctx, xp, a, src, index=None, dim=0):
        if not hasattr(src, "shape"):
            src = xp.full(index.shape, src, dtype=a.dtype)
        flat = mul_rows(xp, xp.reshape(a, (-1,)), _scatter_positions(xp, a, index, dim),
                        _narrow_to(xp, src, index.shape))
        return xp.reshape(flat, a.shape)

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("the derivative for 'scatter' with reduce='multiply' is not implemented")


def _check_gather_args(input, dim, index, fn, src=None):
    _check_index(index, fn)
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    ishape = index._data.shape
    if len(ishape) != max(nd, 1) and index._data.size:
        raise RuntimeError("Index tensor must have the same number of dimensions as "
                           f"{'input' if fn == 'gather' else 'self'} tensor")
    shape = input._data.shape if nd else (1,)
    for k, (m, n) in enumerate(zip(ishape, shape)):
        if k != d and m > n:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(ishape)} to be no larger "
                               f"than self {list(shape)} apart from dimension {d}")
    if src is not None:
        for k, (m, n) in enumerate(zip(ishape, src._data.shape)):
            if m > n:
                raise RuntimeError(f"Expected index {list(ishape)} to be no larger than self {list(shape)} apart "
                                   f"from dimension {d} and to be no larger size than src {list(src.shape)}")
    idx = _same_device(index, input)
    _bounds(input._device.backend.xp, idx, shape[d], d, fn)
    return d, idx


@tensor_method()
def gather(input, dim, index, *, sparse_grad=False):
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (and likewise for other dims).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).gather(1, ember.tensor([[0, 0], [1, 0]]))
    tensor([[1, 1],
            [4, 3]])
    """
    if input._data.ndim == 0:
        return gather(input.reshape(1), 0, index.reshape(-1), sparse_grad=sparse_grad).reshape(index.shape)
    d, idx = _check_gather_args(input, dim, index, "gather")
    return Gather.apply(input, index=idx, dim=d)


@tensor_method()
def take_along_dim(input, indices, dim=None):
    """Values of ``input`` at ``indices`` along ``dim`` (of the flattened input when ``dim`` is None);
    ``input`` and ``indices`` broadcast in the other dimensions.

    >>> import ember
    >>> x = ember.tensor([[10, 30, 20]])
    >>> ember.take_along_dim(x, x.argsort(dim=1), dim=1)
    tensor([[10, 20, 30]])
    """
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    nd = input._data.ndim
    if indices._data.ndim != nd:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {nd} dimensions for input, and {indices._data.ndim} dimensions for indices")
    d = wrap_dim(dim, nd)
    a_shape, i_shape = list(input.shape), list(indices.shape)
    a_shape[d] = i_shape[d] = 1
    common = list(np.broadcast_shapes(tuple(a_shape), tuple(i_shape)))
    a_want, i_want = list(common), list(common)
    a_want[d], i_want[d] = input.shape[d], indices.shape[d]
    return gather(input.expand(a_want), d, indices.expand(i_want))


@tensor_method()
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """``input`` with ``src`` (a tensor or a number) written at ``index`` along ``dim``.

    ``reduce='add'`` or ``'multiply'`` combines instead of overwriting.

    >>> import ember
    >>> ember.zeros(2, 3).scatter(1, ember.tensor([[2], [0]]), 5.0)
    tensor([[0., 0., 5.],
            [5., 0., 0.]])
    """
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing the 'src' tensor or 'value' number to write")
    if input._data.ndim == 0:
        flat_src = src.reshape(-1) if isinstance(src, Tensor) else src
        return scatter(input.reshape(1), 0, index.reshape(-1), flat_src, reduce=reduce).reshape(())
    is_tensor_src = isinstance(src, Tensor)
    d, idx = _check_gather_args(input, dim, index, "scatter", src if is_tensor_src else None)
    if is_tensor_src and src._dtype is not input._dtype:
        raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce is None:
        if is_tensor_src:
            return Scatter.apply(input, src, index=idx, dim=d)
        return ScatterValue.apply(input, index=idx, dim=d, value=_cast_scalar(src, input))
    if reduce == "add":
        if not is_tensor_src:
            from .creation import full
            src = full(tuple(index.shape), src, dtype=input._dtype, device=input._device)
        return ScatterAdd.apply(input, src, index=idx, dim=d)
    if reduce == "multiply":
        return ScatterMultiply.apply(input, src if is_tensor_src else _cast_scalar(src, input), index=idx, dim=d)
    raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce!r}")


def _cast_scalar(value, like):
    if isinstance(value, Tensor):
        value = value.item()
    cat = like._dtype.category
    return float(value) if cat == 2 else (bool(value) if cat == 0 else int(value))


@tensor_method()
def scatter_add(input, dim, index, src):
    """``input`` with ``src`` added at ``index`` along ``dim`` (repeated indices accumulate).

    >>> import ember
    >>> ember.zeros(3).scatter_add(0, ember.tensor([0, 0, 2]), ember.ones(3))
    tensor([2., 0., 1.])
    """
    if input._data.ndim == 0:
        return scatter_add(input.reshape(1), 0, index.reshape(-1), src.reshape(-1)).reshape(())
    d, idx = _check_gather_args(input, dim, index, "scatter_add", src)
    if src._dtype is not input._dtype:
        raise RuntimeError("scatter_add(): Expected self.dtype to be equal to src.dtype")
    return ScatterAdd.apply(input, src, index=idx, dim=d)


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
        raise RuntimeError(f"masked_select: expected BoolTensor for mask")
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
