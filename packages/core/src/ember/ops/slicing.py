"""Views that pick part of a tensor: basic indexing (ints, slices, ``None``, ``...``), ``select``,
``narrow``, ``unsqueeze``, ``unbind``, ``split``, ``chunk``, ``diagonal``.

All share one forward (``a[key]`` with a normalized key) and one backward
(the gradient written into zeros at ``key``), so each is a view of its input.

>>> import ember
>>> x = ember.arange(6).view(2, 3)
>>> x[1, ::2]
tensor([3, 5])
>>> [c.tolist() for c in x.split(2, dim=1)]
[[[0, 1], [3, 4]], [[2], [5]]]
"""
from __future__ import annotations

import math

from ..autograd.function import Op
from ._common import Tensor, tensor_method, wrap_dim

__all__ = ["select", "narrow", "unsqueeze", "unbind", "split", "chunk", "diagonal"]


class BasicIndex(Op):
    """``a[key]`` for a key of ints, in-bounds slices and ``None`` ending in ``...`` (a view)."""

    name_ = "basicindex"
    is_view = True

    @staticmethod
    def forward(ctx, xp, a, key=None):
        ctx.shape, ctx.key = a.shape, key
        return a[key]

    @staticmethod
    def backward(ctx, g):
        return BasicIndexBackward.apply(g, key=ctx.key, shape=ctx.shape)


class Select(BasicIndex):
    name_ = "select"
    pass


class Slice(BasicIndex):
    name_ = "slice"
    pass


class Unsqueeze(BasicIndex):
    name_ = "unsqueeze"
    pass


class Alias(BasicIndex):
    name_ = "alias"
    pass


class Unbind(BasicIndex):
    name_ = "unbind"
    pass


class Split(BasicIndex):
    name_ = "split"
    pass


class SplitWithSizes(BasicIndex):
    name_ = "splitwithsizes"
    pass


class BasicIndexBackward(Op):
    """Zeros of ``shape`` with ``g`` written at ``key`` (the adjoint of :class:`BasicIndex`)."""

    name_ = "basicindexbackward"

    @staticmethod
    def forward(ctx, xp, g, key=None, shape=None):
        ctx.key = key
        out = xp.zeros(shape, dtype=g.dtype)
        put_key = tuple(k for k in key if k is not None)
        region = out[put_key]
        out[put_key] = xp.reshape(g, region.shape)
        return out

    @staticmethod
    def backward(ctx, gg):
        return BasicIndex.apply(gg, key=ctx.key)


def norm_slice(s: slice, n: int) -> slice:
    """``s`` for a dimension of size ``n`` with in-bounds ``start``/``stop`` (as the array API requires)."""
    if s.step is not None and s.step <= 0:
        raise ValueError("step must be greater than zero")
    if s.start is None and s.stop is None:
        return slice(None, None, s.step)
    start, stop, step = s.indices(n)
    if stop <= start:
        return slice(0, 0, 1)
    return slice(start, None if stop >= n else stop, step)


def norm_int(i: int, n: int, dim: int) -> int:
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {n}")
    return i % n


_FULL = slice(None)


def basic_key(key: tuple, shape: tuple):
    """Normalize a key of ints/slices/None/Ellipsis: (full key, op class, whether anything is picked)."""
    nd = len(shape)
    n_ell = sum(k is Ellipsis for k in key)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(k is not None and k is not Ellipsis for k in key)
    if used > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    out = []
    cls = Alias
    d = 0
    for k in key:
        if k is Ellipsis:
            out.extend([_FULL] * (nd - used))
            d += nd - used
        elif k is None:
            out.append(None)
            cls = Unsqueeze
        elif isinstance(k, slice):
            out.append(norm_slice(k, shape[d]))
            if k != _FULL:
                cls = Slice
            d += 1
        else:
            out.append(norm_int(int(k), shape[d], d))
            cls = Select
            d += 1
    out.extend([_FULL] * (nd - d))
    out.append(Ellipsis)  # NumPy then returns a 0-d view rather than a scalar copy
    return tuple(out), cls


def index_view(input, key: tuple):
    """``input[key]`` for a key without tensors or lists."""
    key, cls = basic_key(key, input._data.shape)
    return cls.apply(input, key=key)


@tensor_method()
def select(input, dim, index):
    """The slice at ``index`` along ``dim``, without that dimension (a view).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).select(1, 0)
    tensor([1, 3])
    """
    shape = input._data.shape
    d = wrap_dim(dim, len(shape))
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    if not -shape[d] <= index < shape[d]:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(shape)} at dimension {dim}")
    return Select.apply(input, key=(_FULL,) * d + (index % shape[d], Ellipsis))


def _slice_key(shape, d, start, stop):
    n = shape[d]
    return (_FULL,) * d + (norm_slice(slice(start, stop), n), Ellipsis)


@tensor_method()
def narrow(input, dim, start, length):
    """``length`` elements from ``start`` along ``dim`` (a view).

    >>> import ember
    >>> ember.arange(5).narrow(0, 1, 3)
    tensor([1, 2, 3])
    """
    shape = input._data.shape
    if not shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape))
    n = shape[d]
    if isinstance(start, Tensor):
        start = int(start.item())
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return Slice.apply(input, key=_slice_key(shape, d, start, start + length))


@tensor_method()
def unsqueeze(input, dim):
    """A view with a size-1 dimension inserted at ``dim`` (in ``[-ndim-1, ndim]``).

    >>> import ember
    >>> ember.zeros(3).unsqueeze(0).shape
    ember.Size([1, 3])
    """
    nd = input._data.ndim
    d = wrap_dim(dim, nd + 1)
    return Unsqueeze.apply(input, key=(_FULL,) * d + (None, Ellipsis))


@tensor_method()
def unbind(input, dim=0):
    """The slices along ``dim`` as a tuple of views.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).unbind(1)
    (tensor([1, 3]), tensor([2, 4]))
    """
    shape = input._data.shape
    if not shape:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, len(shape))
    pre = (_FULL,) * d
    return tuple(Unbind.apply(input, key=pre + (i, Ellipsis)) for i in range(shape[d]))


@tensor_method()
def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive pieces along ``dim``: of size ``split_size`` (the last may be smaller),
    or of the given list of sizes.

    >>> import ember
    >>> [p.tolist() for p in ember.arange(5).split([1, 4])]
    [[0], [1, 2, 3, 4]]
    """
    shape = tensor._data.shape
    if not shape:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, len(shape))
    n = shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
        if size == 0:
            if n:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
            sizes = [0]
        else:
            sizes = [min(size, n - s) for s in range(0, n, size)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
    op = Split if isinstance(split_size_or_sections, int) else SplitWithSizes
    out, start = [], 0
    for s in sizes:
        out.append(op.apply(tensor, key=_slice_key(shape, d, start, start + s)))
        start += s
    return tuple(out)


@tensor_method()
def chunk(input, chunks, dim=0):
    """``chunks`` views of (nearly) equal size along ``dim``; the last may be smaller, and there may be
    fewer than ``chunks`` of them.

    >>> import ember
    >>> [c.tolist() for c in ember.arange(5).chunk(3)]
    [[0, 1], [2, 3], [4]]
    """
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    shape = input._data.shape
    if not shape:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    n = shape[wrap_dim(dim, len(shape))]
    return split(input, max(math.ceil(n / chunks), 1) if n else 0, dim)


# -- diagonal -------------------------------------------------------------------------
def _diag_plan(shape, offset, dim1, dim2):
    """Permutation putting dim1, dim2 last, and the flat positions of the diagonal in those two dims."""
    n1, n2 = shape[dim1], shape[dim2]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    first = offset if offset >= 0 else -offset * n2
    positions = [first + i * (n2 + 1) for i in range(length)]
    perm = tuple(d for d in range(len(shape)) if d not in (dim1, dim2)) + (dim1, dim2)
    return perm, positions


class Diagonal(Op):
    """A view on NumPy (writable, like PyTorch's); a gathered copy on backends without strided views."""

    name_ = "diagonal"
    is_view = True

    @staticmethod
    def forward(ctx, xp, a, offset=0, dim1=0, dim2=1):
        ctx.attrs, ctx.shape = (offset, dim1, dim2), a.shape
        if hasattr(xp, "diagonal"):  # NumPy: a strided view
            out = xp.diagonal(a, offset, dim1, dim2)
            if a.flags.writeable:
                out.flags.writeable = True
            return out
        perm, pos = _diag_plan(a.shape, offset, dim1, dim2)
        moved = xp.permute_dims(a, perm)
        flat = xp.reshape(moved, moved.shape[:-2] + (-1,))
        return xp.take(flat, xp.asarray(pos, dtype=xp.int64), axis=flat.ndim - 1)

    @staticmethod
    def backward(ctx, g):
        return DiagonalBackward.apply(g, attrs=ctx.attrs, shape=ctx.shape)


class DiagonalBackward(Op):
    name_ = "diagonalbackward"

    @staticmethod
    def forward(ctx, xp, g, attrs=None, shape=None):
        ctx.attrs = attrs
        offset, dim1, dim2 = attrs
        perm, pos = _diag_plan(shape, offset, dim1, dim2)
        moved_shape = tuple(shape[d] for d in perm)
        rest = moved_shape[:-2]
        n = moved_shape[-2] * moved_shape[-1]
        # out[..., pos[i]] = g[..., i]: a one-hot matrix product keeps this to array-API ops
        onehot = xp.astype(xp.reshape(xp.arange(n), (-1, 1)) == xp.reshape(xp.asarray(pos, dtype=xp.int64), (1, -1)),
                           g.dtype)
        flat = xp.matmul(g, xp.matrix_transpose(onehot)) if len(pos) else xp.zeros(rest + (n,), dtype=g.dtype)
        moved = xp.reshape(flat, moved_shape)
        inverse = [0] * len(perm)
        for i, d in enumerate(perm):
            inverse[d] = i
        return xp.permute_dims(moved, tuple(inverse))

    @staticmethod
    def backward(ctx, gg):
        offset, dim1, dim2 = ctx.attrs
        return Diagonal.apply(gg, offset=offset, dim1=dim1, dim2=dim2)


@tensor_method()
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of the ``dim1``/``dim2`` planes (above it for ``offset > 0``), as the last dimension.

    A view on the CPU backend; see :class:`Diagonal` for other backends.

    >>> import ember
    >>> ember.arange(9).view(3, 3).diagonal(1)
    tensor([1, 5])
    """
    nd = input._data.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, offset=int(offset), dim1=d1, dim2=d2)
