"""Ops along one dimension: ``index_select``, ``gather``, ``take_along_dim``, and the out-of-place
writes ``scatter`` (with ``reduce``), ``scatter_add``, ``index_add``; all differentiable.

``gather`` reads ``out[i][j] = input[index[i][j]][j]`` (for ``dim=0``);
``scatter`` writes the other way, and its backward gathers. Repeated indices
accumulate in ``scatter_add`` and ``index_add``.

>>> import ember
>>> x = ember.tensor([[1, 2], [3, 4]])
>>> x.gather(1, ember.tensor([[1], [0]]))
tensor([[2],
        [3]])
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ..autograd.function import Op
from ._common import Tensor, tensor_method, wrap_dim
from ._scatter import add_rows, along_dim_index, mul_rows, put_rows
from .conversion import move_array
from .creation import full, zeros
from .indexing import _cast_scalar
from .slicing import BasicIndexBackward

__all__ = ["index_select", "gather", "take_along_dim", "scatter", "scatter_add", "index_add"]


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
    name_ = "indexselect"

    @staticmethod
    def forward(ctx, xp, a, index=None, dim=0):
        ctx.shape, ctx.index, ctx.dim = a.shape, index, dim
        if a.ndim == 0:
            return xp.reshape(a, (1,))[index] if index.ndim else a
        return xp.take(a, index, axis=dim)

    @staticmethod
    def backward(ctx, g):
        return IndexAdd.apply(zeros(ctx.shape, dtype=g.dtype, device=g.device), g, index=ctx.index, dim=ctx.dim)


class IndexAdd(Op):
    name_ = "indexadd"

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
    return move_array(index._data, index._device, like._device)


class Gather(Op):
    name_ = "gather"

    @staticmethod
    def forward(ctx, xp, a, index=None, dim=0):
        ctx.shape, ctx.index, ctx.dim = a.shape, index, dim
        key = tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index.shape))
        return xp.take_along_axis(a[key], index, axis=dim)

    @staticmethod
    def backward(ctx, g):
        return ScatterAdd.apply(zeros(ctx.shape, dtype=g.dtype, device=g.device), g, index=ctx.index, dim=ctx.dim)


def _scatter_positions(xp, a, index, dim):
    return along_dim_index(xp, index, dim, a.shape)


def _narrow_to(xp, src, shape):
    key = tuple(slice(0, n) for n in shape)
    return xp.reshape(src[key], (-1,))


class ScatterAdd(Op):
    """Add ``src`` into ``a`` at the positions ``index`` gives along ``dim``."""

    #: how rows are written: added (``scatter_add``) or put (``scatter``)
    name_ = "scatteradd"
    write = staticmethod(add_rows)
    #: whether the values of ``a`` that get written over lose their gradient
    overwrites = False

    @staticmethod
    def forward(ctx, xp, a, src, index=None, dim=0):
        ctx.index, ctx.dim, ctx.src_shape = index, dim, src.shape
        flat = ctx.write(xp, xp.reshape(a, (-1,)), _scatter_positions(xp, a, index, dim),
                         _narrow_to(xp, src, index.shape))
        return xp.reshape(flat, a.shape)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        ga = gs = None
        if need[0]:
            ga = ScatterValue.apply(g, index=ctx.index, dim=ctx.dim, value=0.0) if ctx.overwrites else g
        if need[1]:
            gs = Gather.apply(g, index=ctx.index, dim=ctx.dim)
            if tuple(gs.shape) != tuple(ctx.src_shape):
                gs = _pad_to(gs, ctx.src_shape)
        return ga, gs


class Scatter(ScatterAdd):
    """Put ``src`` into ``a`` at the positions ``index`` gives along ``dim``."""

    name_ = "scatter"
    write = staticmethod(put_rows)
    overwrites = True


def _pad_to(g, shape):
    """``g`` placed at the start of zeros of ``shape`` (the adjoint of narrowing to ``g``'s shape)."""
    return BasicIndexBackward.apply(g, key=tuple(slice(0, n) for n in g.shape), shape=tuple(shape))


class ScatterValue(Op):
    name_ = "scattervalue"
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
    name_ = "scattermultiply"

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
        raise RuntimeError(f"ember.take_along_dim(): input and indices should have the same number of dimensions, "
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
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce is None:
        if is_tensor_src:
            return Scatter.apply(input, src, index=idx, dim=d)
        return ScatterValue.apply(input, index=idx, dim=d, value=_cast_scalar(src, input))
    if reduce == "add":
        if not is_tensor_src:
            src = full(tuple(index.shape), src, dtype=input._dtype, device=input._device)
        return ScatterAdd.apply(input, src, index=idx, dim=d)
    if reduce == "multiply":
        return ScatterMultiply.apply(input, src if is_tensor_src else _cast_scalar(src, input), index=idx, dim=d)
    raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce!r}")


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
