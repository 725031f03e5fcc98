"""Building and rearranging tensors: ``cat``/``concat``/``concatenate``, ``stack``, ``hstack``,
``vstack``, ``flip``, ``roll``, ``repeat``, ``tile``, ``repeat_interleave``, ``tril``/``triu``, ``where``, ``nonzero``,
``masked_fill``; all differentiable where PyTorch's are.

>>> import ember
>>> a = ember.tensor([[1, 2]])
>>> ember.cat([a, a * 10]).tolist()
[[1, 2], [10, 20]]
>>> ember.stack([a, a], dim=2).shape
ember.Size([1, 2, 2])
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._overflow import check_scalar
from ..autograd.function import Op
from ._common import Tensor, cast_scalar, promote, sum_to, tensor_method, wrap_dim
from .creation import arange, tensor, zeros
from .gather import index_select

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "flip", "fliplr", "flipud", "roll",
           "tile", "repeat_interleave", "tril", "triu", "where", "nonzero", "masked_fill"]


# -- joining ------------------------------------------------------------------------
class Cat(Op):
    name_ = "cat"

    @staticmethod
    def forward(ctx, xp, *arrays, dim=0):
        ctx.sizes, ctx.dim = [a.shape[dim] for a in arrays], dim
        return xp.concat(arrays, axis=dim)

    @staticmethod
    def backward(ctx, g):
        out, start = [], 0
        for need, n in zip(ctx.needs_input_grad, ctx.sizes):
            out.append(g.narrow(ctx.dim, start, n) if need else None)
            start += n
        return tuple(out)


class Stack(Op):
    name_ = "stack"

    @staticmethod
    def forward(ctx, xp, *arrays, dim=0):
        ctx.dim = dim
        return xp.stack(arrays, axis=dim)

    @staticmethod
    def backward(ctx, g):
        return tuple(g.select(ctx.dim, i) if need else None for i, need in enumerate(ctx.needs_input_grad))


def _tensor_list(tensors, fn):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{fn}(): argument 'tensors' must be a tuple or list of Tensors, not Tensor")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return tensors


@tensor_method()
def cat(tensors, dim=0):
    """Tensors joined along an existing dimension; all other sizes must match. Dtypes promote.

    >>> import ember
    >>> ember.cat([ember.zeros(2, 1), ember.ones(2, 2)], dim=1)
    tensor([[0., 1., 1.],
            [0., 1., 1.]])
    """
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("ember.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    # legacy rule kept by PyTorch: 1-d empty tensors are skipped whatever the other shapes
    def legacy_empty(t):
        return t._data.ndim == 1 and t._data.shape[0] == 0

    kept = [t for t in tensors if not legacy_empty(t)] or tensors[:1]
    ref = kept[0]
    d = wrap_dim(dim, ref._data.ndim)
    for i, t in enumerate(tensors):
        if legacy_empty(t) and t is not ref:
            continue
        if t._data.ndim != ref._data.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref._data.ndim} and "
                               f"{t._data.ndim}")
        for k, (m, n) in enumerate(zip(ref._data.shape, t._data.shape)):
            if k != d and m != n:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {m} but got "
                                   f"size {n} for tensor number {i} in the list.")
    if len(kept) == 1 and kept[0]._dtype is _result_dtype(tensors):
        return Cat.apply(kept[0], dim=d)
    return Cat.apply(*_promoted_to(kept, _result_dtype(tensors)), dim=d)


def _result_dtype(tensors):
    """The dtype ``cat`` and ``stack`` give: every input counts fully (zero-dim ones too, as in PyTorch)."""
    want = tensors[0]._dtype
    for t in tensors[1:]:
        if t._dtype is not want:
            want = dt.promote_types(want, t._dtype)
    return want


def _promoted_to(tensors, want):
    return [t if t._dtype is want else t.to(want) for t in tensors]


concat = concatenate = cat


@tensor_method()
def stack(tensors, dim=0):
    """Tensors of equal shape joined along a new dimension ``dim``.

    >>> import ember
    >>> ember.stack([ember.tensor([1, 2]), ember.tensor([3, 4])], dim=1)
    tensor([[1, 3],
            [2, 4]])
    """
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors[1:], 1):
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 and "
                               f"{list(t.shape)} at entry {i}")
    d = wrap_dim(dim, len(shape) + 1)
    return Stack.apply(*_promoted_to(tensors, _result_dtype(tensors)), dim=d)


@tensor_method()
def hstack(tensors):
    """Join along dimension 1 (dimension 0 for 1-d tensors).

    >>> import ember
    >>> ember.hstack([ember.tensor([1, 2]), ember.tensor([3])])
    tensor([1, 2, 3])
    """
    tensors = [t.reshape(1) if t._data.ndim == 0 else t for t in _tensor_list(tensors, "hstack")]
    if not tensors:
        raise RuntimeError("hstack expects a non-empty TensorList")
    return cat(tensors, 0 if tensors[0]._data.ndim == 1 else 1)


@tensor_method()
def vstack(tensors):
    """Join along dimension 0, with 0-d and 1-d tensors made rows first.

    >>> import ember
    >>> ember.vstack([ember.tensor([1, 2]), ember.tensor([3, 4])])
    tensor([[1, 2],
            [3, 4]])
    """
    tensors = [t.reshape(1, -1) if t._data.ndim < 2 else t for t in _tensor_list(tensors, "vstack")]
    if not tensors:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return cat(tensors, 0)


# -- reordering ------------------------------------------------------------------------
class Flip(Op):
    name_ = "flip"

    @staticmethod
    def forward(ctx, xp, a, dims=()):
        ctx.dims = dims
        return xp.flip(a, axis=dims) if dims else xp.asarray(a, copy=True)

    @staticmethod
    def backward(ctx, g):
        return Flip.apply(g, dims=ctx.dims)


def _dims_tuple(dims, nd):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    out = tuple(wrap_dim(d, nd) for d in dims)
    for d in out:
        if out.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


@tensor_method()
def flip(input, dims):
    """A copy with the order of elements reversed along ``dims``.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).flip(1)
    tensor([[2, 1],
            [4, 3]])
    """
    return Flip.apply(input, dims=_dims_tuple(dims, input._data.ndim))


@tensor_method()
def fliplr(input):
    """Flip along dimension 1 (needs at least 2 dimensions)."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@tensor_method()
def flipud(input):
    """Flip along dimension 0 (needs at least 1 dimension)."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


class Roll(Op):
    name_ = "roll"

    @staticmethod
    def forward(ctx, xp, a, shifts=(), dims=()):
        ctx.shifts, ctx.dims = shifts, dims
        if dims is None:  # the flattened tensor, shape restored
            return xp.roll(a, shifts[0])
        return xp.roll(a, shifts, axis=dims)

    @staticmethod
    def backward(ctx, g):
        return Roll.apply(g, shifts=tuple(-s for s in ctx.shifts), dims=ctx.dims)


@tensor_method()
def roll(input, shifts, dims=None):
    """Elements shifted cyclically by ``shifts`` along ``dims`` (of the flattened tensor if ``dims`` is None).

    >>> import ember
    >>> ember.tensor([1, 2, 3, 4]).roll(1)
    tensor([4, 1, 2, 3])
    """
    shifts = (shifts,) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return Roll.apply(input, shifts=shifts, dims=None)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    nd = input._data.ndim
    return Roll.apply(input, shifts=shifts, dims=tuple(wrap_dim(d, nd) for d in dims))


class Repeat(Op):
    name_ = "repeat"

    @staticmethod
    def forward(ctx, xp, a, repeats=()):
        ctx.repeats = repeats
        lead = len(repeats) - a.ndim
        ctx.padded = (1,) * lead + a.shape
        ctx.shape = a.shape
        return xp.tile(xp.reshape(a, ctx.padded), repeats)

    @staticmethod
    def backward(ctx, g):
        split = []
        for r, n in zip(ctx.repeats, ctx.padded):
            split += [r, n]
        summed = g.reshape(split).sum(dim=tuple(range(0, len(split), 2))) if split else g
        return summed.reshape(ctx.shape)


@tensor_method()
def repeat(input, *sizes):
    """The tensor tiled ``sizes[i]`` times along each dimension (``sizes`` may add leading dimensions).

    >>> import ember
    >>> ember.tensor([1, 2]).repeat(2, 2)
    tensor([[1, 2, 1, 2],
            [1, 2, 1, 2]])
    """
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    sizes = tuple(int(s) for s in sizes)
    if len(sizes) < input._data.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {list(sizes)}")
    return Repeat.apply(input, repeats=sizes)


@tensor_method()
def tile(input, dims):
    """Like :func:`repeat`, but ``dims`` shorter than the tensor's rank is padded with leading 1s.

    >>> import ember
    >>> ember.tensor([[1, 2]]).tile((2,))
    tensor([[1, 2, 1, 2]])
    """
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    pad = input._data.ndim - len(dims)
    return repeat(input, (1,) * max(pad, 0) + dims)



@tensor_method()
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element repeated ``repeats`` times in place (``repeats`` an int or a tensor, one count per element).

    Without ``dim`` the input is flattened first. ``repeat_interleave(counts)`` alone repeats each index
    ``i`` ``counts[i]`` times. The result is an ``index_select``, so its gradient sums the copies.

    >>> import ember
    >>> ember.tensor([1, 2]).repeat_interleave(2)
    tensor([1, 1, 2, 2])
    >>> ember.tensor([[1, 2], [3, 4]]).repeat_interleave(ember.tensor([1, 2]), dim=0)
    tensor([[1, 2],
            [3, 4],
            [3, 4]])
    """
    if repeats is None:  # repeat_interleave(counts): the indices, each repeated by its count
        repeats, input = input, arange(len(input), device=input.device)
    if dim is None:
        input, dim = input.reshape(-1), 0
    dim = wrap_dim(dim, input._data.ndim)
    n = input.shape[dim]
    counts = np.asarray(repeats.tolist() if isinstance(repeats, Tensor) else repeats, dtype=np.int64)
    if counts.ndim > 1 or (counts.ndim == 1 and counts.size not in (1, n)):
        raise RuntimeError(f"repeats must be 0-dim or 1-dim tensor with {n} elements along dim {dim}, got "
                           f"shape {list(counts.shape)}")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    index = np.repeat(np.arange(n), counts.reshape(-1) if counts.ndim else int(counts))
    if output_size is not None and output_size != len(index):
        raise RuntimeError(f"allocated size does not match required size: output_size={output_size}, "
                           f"needed {len(index)}")
    return index_select(input, dim, tensor(index, device=input.device))

class Tril(Op):
    """Keep the lower triangle; the gradient is masked the same way."""

    name_ = "tril"
    xp_function = "tril"

    @staticmethod
    def forward(ctx, xp, a, diagonal=0):
        ctx.diagonal = diagonal
        return getattr(xp, ctx.xp_function)(a, k=diagonal)

    @staticmethod
    def backward(ctx, g):
        return type(ctx).apply(g, diagonal=ctx.diagonal)


class Triu(Tril):
    name_ = "triu"
    xp_function = "triu"


@tensor_method()
def tril(input, diagonal=0):
    """The lower triangle of the last two dimensions (on and below ``diagonal``); the rest zero.

    >>> import ember
    >>> ember.ones(2, 2).tril()
    tensor([[1., 0.],
            [1., 1.]])
    """
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return Tril.apply(input, diagonal=int(diagonal))


@tensor_method()
def triu(input, diagonal=0):
    """The upper triangle of the last two dimensions (on and above ``diagonal``); the rest zero.

    >>> import ember
    >>> ember.ones(2, 2).triu(1)
    tensor([[0., 1.],
            [0., 0.]])
    """
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return Triu.apply(input, diagonal=int(diagonal))


# -- selecting by condition ------------------------------------------------------------
class Where(Op):
    name_ = "where"

    @staticmethod
    def forward(ctx, xp, cond, a, b):
        ctx.cond = cond
        ctx.shapes = (getattr(a, "shape", None), getattr(b, "shape", None))
        ref = a if hasattr(a, "dtype") else b
        if not hasattr(a, "dtype"):
            a = xp.asarray(a, dtype=ref.dtype)
        if not hasattr(b, "dtype"):
            b = xp.asarray(b, dtype=ref.dtype)
        return xp.where(cond, a, b)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        cond = Tensor._make(ctx.cond, g.device, dt.bool_)
        zero = zeros((), dtype=g.dtype, device=g.device)
        sa, sb = ctx.shapes
        ga = sum_to(where(cond, g, zero), sa) if need[1] else None
        gb = sum_to(where(cond, zero, g), sb) if need[2] else None
        return None, ga, gb


@tensor_method()
def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (broadcast; either may be a number).

    With only ``condition``, the same as ``nonzero(condition, as_tuple=True)``.

    >>> import ember
    >>> x = ember.tensor([-1.0, 2.0])
    >>> ember.where(x > 0, x, 0.0)
    tensor([0., 2.])
    """
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if condition._dtype is not dt.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{condition._dtype.scalar_type_name}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        dtype = dt.get_default_dtype() if isinstance(input, float) or isinstance(other, float) else None
        input = tensor(input, dtype=dtype, device=condition._device)
    a, b = promote(input, other)
    for scalar, like in ((input, b), (other, a)):
        if not isinstance(scalar, Tensor):
            check_scalar(scalar, like._dtype)
    return Where.apply(condition, a, b)


class Nonzero(Op):
    name_ = "nonzero"

    @staticmethod
    def forward(ctx, xp, a):
        if a.ndim == 0:
            return xp.zeros((int(xp.sum(xp.astype(a != 0, xp.int64))), 0), dtype=xp.int64)
        return xp.stack(xp.nonzero(a), axis=1)


@tensor_method()
def nonzero(input, *, as_tuple=False):
    """Indices of the non-zero elements: an ``(n, ndim)`` int64 tensor, or one 1-d tensor per dim.

    >>> import ember
    >>> ember.tensor([[0, 1], [2, 0]]).nonzero()
    tensor([[0, 1],
            [1, 0]])
    """
    out = Nonzero.apply(input.detach())
    if as_tuple:
        if input._data.ndim == 0:
            return (_zeros_long(out.shape[0], input),)
        return out.unbind(1)
    return out


def _zeros_long(n, like):
    return zeros(n, dtype=dt.int64, device=like._device)


class MaskedFill(Op):
    name_ = "maskedfill"

    @staticmethod
    def forward(ctx, xp, a, mask, value):
        ctx.mask, ctx.shape = mask, a.shape
        if not hasattr(value, "dtype"):
            value = xp.asarray(value, dtype=a.dtype)
        elif value.dtype != a.dtype:
            value = xp.astype(value, a.dtype)
        return xp.where(mask, value, a)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        mask = Tensor._make(ctx.mask, g.device, dt.bool_)
        zero = zeros((), dtype=g.dtype, device=g.device)
        ga = sum_to(where(mask, zero, g), ctx.shape) if need[0] else None
        gv = where(mask, g, zero).sum() if need[2] else None
        return ga, None, gv


class MaskedFillTensor(MaskedFill):
    name_ = "maskedfilltensor"
    backward_name = "MaskedFillBackward1"  # PyTorch's name when the value is a tensor


@tensor_method()
def masked_fill(input, mask, value):
    """``input`` with ``value`` (a number or a 0-d tensor) where the boolean ``mask`` (broadcast) is True.

    >>> import ember
    >>> ember.zeros(3).masked_fill(ember.tensor([True, False, True]), 2.0)
    tensor([2., 0., 2.])
    """
    if mask._dtype is not dt.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask._dtype.name.replace('ember.', '')}")
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        if value._dtype is not input._dtype:
            value = value.to(input._dtype)
    elif not isinstance(value, (int, float, bool)):
        raise TypeError(f"masked_fill(): argument 'value' must be a number or a 0-d Tensor, not "
                        f"{type(value).__name__}")
    else:
        value = cast_scalar(value, input)
        return MaskedFill.apply(input, mask, value)
    return MaskedFillTensor.apply(input, mask, value)



