"""Extreme values: ``max``, ``min``, ``amax``, ``amin``, ``aminmax``, ``argmax``, ``argmin``.

``max(x)`` is a 0-dim tensor; ``max(x, dim)`` is a named tuple ``(values,
indices)``; ``max(x, other_tensor)`` is :func:`~ember.maximum`. The full
reductions and ``amax`` split the gradient evenly among tied maxima, as
PyTorch does; ``max(x, dim)`` sends it to the returned index.

>>> import ember
>>> x = ember.tensor([[1, 5], [7, 2]])
>>> x.max()
tensor(7)
>>> x.amax(dim=0)
tensor([7, 5])
"""
from __future__ import annotations

from ..autograd.function import Op
from ..return_types import aminmax as AminmaxResult
from ..return_types import max as MaxResult
from ..return_types import min as MinResult
from ._common import Tensor, tensor_method, wrap_dim
from .binary_math import maximum, minimum
from .reduction import expand_back, norm_dims

__all__ = ["max", "min", "amax", "amin", "aminmax", "argmax", "argmin"]


def _evenly(a, value, g):
    """``g`` shared evenly among the elements of ``a`` equal to ``value`` (NaN counts as equal to NaN)."""
    mask = (a == value) | (a.isnan() & value.isnan())
    return g * mask / mask.sum(_all_dims(a), keepdim=True) if a.ndim else g * mask


def _all_dims(a):
    return tuple(range(a.ndim))


class MaxAll(Op):
    name_ = "max"
    backward_name = "MaxBackward1"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a):
        return xp.max(a)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return _evenly(a, ctx.saved_output, g)


class MinAll(MaxAll):
    name_ = "min"
    backward_name = "MinBackward1"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.min(a)


class Amax(Op):
    name_ = "amax"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, dims=None, keepdim=False):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        return xp.max(a, axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        shape, dims, keepdim = ctx.shape, ctx.dims, ctx.keepdim
        value = expand_back(ctx.saved_output, shape, dims, keepdim)
        mask = (a == value) | (a.isnan() & value.isnan())
        count = mask.sum(dims if dims is not None else _all_dims(a), keepdim=True)
        return expand_back(g, shape, dims, keepdim) * mask / count


class Amin(Amax):
    name_ = "amin"

    @staticmethod
    def forward(ctx, xp, a, dims=None, keepdim=False):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        return xp.min(a, axis=dims, keepdims=keepdim)


def _one_hot_along(xp, index, axis, n, ndim):
    """A bool array, True at ``index`` (kept-dim shape) along ``axis`` of length ``n``."""
    positions = xp.reshape(xp.arange(n, dtype=index.dtype), tuple(n if i == axis else 1 for i in range(ndim)))
    return positions == index


class MaxDim(Op):
    name_ = "max_dim"
    backward_name = "MaxBackward0"
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a, dim=0, keepdim=False):
        return _select_along(ctx, xp, a, xp.argmax(a, axis=dim, keepdims=True), dim, keepdim)

    @staticmethod
    def backward(ctx, g_values, g_indices):
        g = expand_back(g_values, ctx.shape, (ctx.dim,), ctx.keepdim)
        return g * Tensor._make(ctx.one_hot, g_values._device)


class MinDim(MaxDim):
    name_ = "min_dim"
    backward_name = "MinBackward0"

    @staticmethod
    def forward(ctx, xp, a, dim=0, keepdim=False):
        return _select_along(ctx, xp, a, xp.argmin(a, axis=dim, keepdims=True), dim, keepdim)


def _select_along(ctx, xp, a, index, dim, keepdim):
    ctx.shape, ctx.dim, ctx.keepdim = a.shape, dim, keepdim
    values = xp.take_along_axis(a, index, axis=dim)
    ctx.one_hot = _one_hot_along(xp, index, dim, a.shape[dim], a.ndim)
    if not keepdim:
        values, index = xp.squeeze(values, axis=dim), xp.squeeze(index, axis=dim)
    return values, index


def _extreme(name, all_op, dim_op, pairwise, tuple_type):
    def fn(input, dim=None, keepdim=False, *, other=None):
        if isinstance(dim, Tensor):
            return pairwise(input, dim)
        if other is not None:
            return pairwise(input, other)
        nd = input._data.ndim
        if dim is None:
            if keepdim:
                raise TypeError(f"{name}(): keepdim=True needs a dim; use amax/amin to keep all dimensions")
            if input._data.size == 0:
                raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                                   "Specify the reduction dim with the 'dim' argument.")
            return all_op.apply(input)
        if not isinstance(dim, int):
            raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__} "
                            f"(use a{name} to reduce several dimensions)")
        d = wrap_dim(dim, nd)
        if nd == 0:
            values, indices = dim_op.apply(input.reshape(1), dim=0)
            return tuple_type(values.reshape(()), indices.reshape(()))
        if input._data.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        return tuple_type(*dim_op.apply(input, dim=d, keepdim=keepdim))
    return fn


def _public(name, fn, doc):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    setattr(Tensor, name, fn)
    return fn


def _maximum(a, b):
    return maximum(a, b)


def _minimum(a, b):
    return minimum(a, b)


max = _public("max", _extreme("max", MaxAll, MaxDim, _maximum, MaxResult),  # noqa: A001
              """The largest element; with ``dim``, ``(values, indices)`` along it; with a tensor, ``maximum``.

    >>> import ember
    >>> x = ember.tensor([[1.0, 5.0], [7.0, 2.0]])
    >>> x.max()
    tensor(7.)
    >>> x.max(dim=1).indices
    tensor([1, 0])
    """)
min = _public("min", _extreme("min", MinAll, MinDim, _minimum, MinResult),  # noqa: A001
              """The smallest element; with ``dim``, ``(values, indices)`` along it; with a tensor, ``minimum``.

    >>> import ember
    >>> x = ember.tensor([[1.0, 5.0], [7.0, 2.0]])
    >>> x.min()
    tensor(1.)
    >>> x.min(dim=0).values
    tensor([1., 2.])
    """)


def _amax_like(name, op):
    def fn(input, dim=(), keepdim=False):
        dims = norm_dims(dim if dim != () else None, input._data.ndim)
        if input._data.size == 0:
            shape = input._data.shape
            if dims is None or any(shape[d] == 0 for d in dims):
                raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                                 "Specify the reduction dim with the 'dim' argument.")
        return op.apply(input, dims=dims, keepdim=keepdim)
    return fn


amax = _public("amax", _amax_like("amax", Amax), """Largest values over ``dim`` (an int or a tuple; all by default).

    >>> import ember
    >>> ember.tensor([[1, 5], [7, 2]]).amax(dim=1)
    tensor([5, 7])
    """)
amin = _public("amin", _amax_like("amin", Amin), """Smallest values over ``dim`` (an int or a tuple; all by default).

    >>> import ember
    >>> ember.tensor([[1, 5], [7, 2]]).amin(dim=(0, 1))
    tensor(1)
    """)


@tensor_method()
def aminmax(input, *, dim=None, keepdim=False):
    """``(min, max)`` over ``dim`` (all elements by default), as ``ember.return_types.aminmax``.

    >>> import ember
    >>> ember.aminmax(ember.tensor([[1, 5], [3, 2]]), dim=1)
    ember.return_types.aminmax(
    min=tensor([1, 2]),
    max=tensor([5, 3]))
    """
    if dim is not None:
        dim = wrap_dim(dim, input._data.ndim)
    if input._data.size == 0 and (dim is None or input._data.shape[dim] == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    if dim is None:
        if keepdim:
            flat_shape = (1,) * input._data.ndim
            return AminmaxResult(amin(input).reshape(flat_shape), amax(input).reshape(flat_shape))
        return AminmaxResult(amin(input), amax(input))
    return AminmaxResult(amin(input, dim, keepdim), amax(input, dim, keepdim))


class Argmax(Op):
    name_ = "argmax"

    @staticmethod
    def forward(ctx, xp, a, dim=None, keepdim=False):
        if dim is None:
            out = xp.argmax(xp.reshape(a, (-1,)))
            return xp.reshape(out, (1,) * a.ndim) if keepdim else out
        return xp.argmax(a, axis=dim, keepdims=keepdim)


class Argmin(Op):
    name_ = "argmin"

    @staticmethod
    def forward(ctx, xp, a, dim=None, keepdim=False):
        if dim is None:
            out = xp.argmin(xp.reshape(a, (-1,)))
            return xp.reshape(out, (1,) * a.ndim) if keepdim else out
        return xp.argmin(a, axis=dim, keepdims=keepdim)


def _arg(name, op):
    def fn(input, dim=None, keepdim=False):
        if dim is not None and not isinstance(dim, int):
            raise TypeError(f"{name}(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
        nd = input._data.ndim
        if dim is not None:
            dim = wrap_dim(dim, nd)
            if nd == 0:
                dim = None
        if input._data.size == 0 and (dim is None or input._data.shape[dim] == 0):
            raise IndexError(f"{name}(): Expected reduction dim "
                             + ("to be specified for input.numel() == 0." if dim is None
                                else f"{dim} to have non-zero size."))
        return op.apply(input, dim=dim, keepdim=keepdim)
    return fn


argmax = _public(
    "argmax", _arg("argmax", Argmax), """Index of the largest value (in the flattened tensor, or along ``dim``).

    >>> import ember
    >>> ember.tensor([[1, 5], [7, 2]]).argmax()
    tensor(2)
    >>> ember.tensor([[1, 5], [7, 2]]).argmax(dim=1, keepdim=True)
    tensor([[1],
            [0]])
    """)
argmin = _public(
    "argmin", _arg("argmin", Argmin), """Index of the smallest value (in the flattened tensor, or along ``dim``).

    >>> import ember
    >>> ember.tensor([[1, 5], [7, 2]]).argmin(dim=0)
    tensor([0, 1])
    """)
