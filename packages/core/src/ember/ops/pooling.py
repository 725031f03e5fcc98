"""Pooling as ops: max, average and adaptive pooling over the last one or two dimensions.

A 2-D pool is computed one dimension at a time: first along the rows (the
last dimension), then down the columns of the row results. For the maximum
this also keeps PyTorch's rule for ties: at each step a later element replaces
the current one only if it is strictly greater (or NaN), so the winner is the
first maximum of the window in row-major order (the last NaN if there is one),
and the gradient goes there alone. Max pooling remembers, per dimension, which
tap of the window won; its backward scatters the gradient back through those
choices (:class:`MaxPoolBackward`), and that scatter's own backward gathers
through them again, so double backward is exact.

Average pooling sums the taps and divides by PyTorch's divisor (the window
size, with or without the padding it covers, or ``divisor_override``); its
backward is the transposed sum, whose own backward is the average pool again.
Adaptive pooling uses the same passes over PyTorch's adaptive windows. The
windows and passes live in :mod:`ember.ops._pool_windows`.

>>> import ember
>>> import ember.nn.functional as F
>>> x = ember.tensor([[[1.0, 5.0, 2.0, 2.0]]])
>>> F.max_pool1d(x, 2, return_indices=True)
(tensor([[[5., 2.]]]), tensor([[[1, 2]]]))
"""
from __future__ import annotations

from ..autograd.function import Op
from ..autograd.node import FREED_MSG
from ._common import Tensor
from ._pool_windows import (
    AdaptiveWindows,
    divisor,
    flat_indices,
    max_stage,
    max_stages,
    pool_windows,
    pooled_size,
    scatter_stage,
    select_stage,
    window_sum,
    window_sum_transpose,
)
from .pointwise import not_implemented_for

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_max_pool1d", "adaptive_max_pool2d"]


def max_pool_forward(ctx, xp, a, windows, stage=max_stage):
    """The forward of the max pool ops (``stage`` lets a backend bring a faster one)."""
    out, sels = max_stages(xp, a, windows, stage)
    ctx.windows, ctx.sels = windows, sels
    if type(ctx).multi_output:
        return out, flat_indices(xp, windows, sels, a.shape)
    return out


def max_pool_backward_forward(ctx, xp, g, windows, sels, stage=scatter_stage):
    """The forward of :class:`MaxPoolBackward` (``stage`` lets a backend bring a faster scatter)."""
    ctx.windows, ctx.sels = windows, sels
    nd = len(windows)
    for i in range(nd):
        g = stage(xp, g, i - nd, windows[i], sels[i])
    return g


class MaxPoolBackward(Op):
    """The gradient of a max pool: ``g`` scattered to the winning elements."""

    name_ = "max_pool_backward"

    @staticmethod
    def forward(ctx, xp, g, windows=(), sels=()):
        return max_pool_backward_forward(ctx, xp, g, windows, sels)

    @staticmethod
    def backward(ctx, gg):
        return MaxPoolSelect.apply(gg, windows=ctx.windows, sels=ctx.sels)


class MaxPoolSelect(Op):
    """The winners' positions applied to another tensor (the transpose of :class:`MaxPoolBackward`)."""

    name_ = "max_pool_select"

    @staticmethod
    def forward(ctx, xp, a, windows=(), sels=()):
        ctx.windows, ctx.sels = windows, sels
        nd = len(windows)
        for i in range(nd - 1, -1, -1):
            a = select_stage(xp, a, i - nd, windows[i], sels[i])
        return a

    @staticmethod
    def backward(ctx, g):
        return MaxPoolBackward.apply(g, windows=ctx.windows, sels=ctx.sels)


class _MaxPool(Op, abstract=True):
    @staticmethod
    def forward(ctx, xp, a, kernel_size=(1,), stride=(1,), padding=(0,), dilation=(1,), ceil_mode=False):
        return max_pool_forward(ctx, xp, a, pool_windows(a.shape, kernel_size, stride, padding, dilation, ceil_mode))

    @staticmethod
    def backward(ctx, g, *_):
        if ctx._freed:  # the winners are saved state, freed after a backward as PyTorch frees its indices
            raise RuntimeError(FREED_MSG)
        return MaxPoolBackward.apply(g, windows=ctx.windows, sels=ctx.sels)

    def release(self) -> None:
        super().release()
        self.sels = None


class MaxPool1d(_MaxPool):
    name_ = "max_pool1d"
    backward_name = "MaxPool1DWithIndicesBackward0"


class MaxPool2d(_MaxPool):
    name_ = "max_pool2d"
    backward_name = "MaxPool2DWithIndicesBackward0"


class MaxPool1dWithIndices(MaxPool1d):
    name_ = "max_pool1d_with_indices"
    backward_name = "MaxPool1DWithIndicesBackward0"
    multi_output = True


class MaxPool2dWithIndices(MaxPool2d):
    name_ = "max_pool2d_with_indices"
    backward_name = "MaxPool2DWithIndicesBackward0"
    multi_output = True


class _AdaptiveMaxPool(_MaxPool, abstract=True):
    @staticmethod
    def forward(ctx, xp, a, output_size=(1,)):
        nd = len(output_size)
        return max_pool_forward(ctx, xp, a, tuple(map(AdaptiveWindows, a.shape[-nd:], output_size)))


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    name_ = "adaptive_max_pool1d"
    backward_name = "AdaptiveMaxPool1DBackward0"


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    name_ = "adaptive_max_pool2d"
    backward_name = "AdaptiveMaxPool2DBackward0"


class AdaptiveMaxPool1dWithIndices(AdaptiveMaxPool1d):
    name_ = "adaptive_max_pool1d_with_indices"
    backward_name = "AdaptiveMaxPool1DBackward0"
    multi_output = True


class AdaptiveMaxPool2dWithIndices(AdaptiveMaxPool2d):
    name_ = "adaptive_max_pool2d_with_indices"
    backward_name = "AdaptiveMaxPool2DBackward0"
    multi_output = True


# -- average -------------------------------------------------------------------------------------------------------

def average_forward(ctx, xp, a, windows, count_include_pad, divisor_override, attrs):
    """The forward of the average pool ops: window sums over the divisor."""
    ctx.windows, ctx.attrs = windows, attrs
    ctx.div = divisor(xp, windows, count_include_pad, divisor_override, a.dtype)
    return window_sum(xp, a, windows) / ctx.div


class _AvgPool(Op, abstract=True):
    @staticmethod
    def forward(ctx, xp, a, kernel_size=(1,), stride=(1,), padding=(0,), ceil_mode=False, count_include_pad=True,
                divisor_override=None):
        windows = pool_windows(a.shape, kernel_size, stride, padding, (1,) * len(kernel_size), ceil_mode)
        attrs = dict(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                     count_include_pad=count_include_pad, divisor_override=divisor_override)
        return average_forward(ctx, xp, a, windows, count_include_pad, divisor_override, attrs)

    @staticmethod
    def backward(ctx, g):
        return AvgPoolBackward.apply(g, pool=type(ctx), windows=ctx.windows, div=ctx.div, attrs=ctx.attrs)


class AvgPool1d(_AvgPool):
    name_ = "avg_pool1d"
    backward_name = "AvgPool1DBackward0"


class AvgPool2d(_AvgPool):
    name_ = "avg_pool2d"
    backward_name = "AvgPool2DBackward0"


class AvgPoolBackward(Op):
    """The gradient of an average pool: each output's share added back over its window."""

    name_ = "avg_pool_backward"

    @staticmethod
    def forward(ctx, xp, g, pool=None, windows=(), div=1.0, attrs=None):
        ctx.pool, ctx.attrs = pool, attrs
        return window_sum_transpose(xp, g / div, windows)

    @staticmethod
    def backward(ctx, gg):
        return ctx.pool.apply(gg, **ctx.attrs)


class _AdaptiveAvgPool(_AvgPool, abstract=True):
    @staticmethod
    def forward(ctx, xp, a, output_size=(1,)):
        nd = len(output_size)
        windows = tuple(map(AdaptiveWindows, a.shape[-nd:], output_size))
        return average_forward(ctx, xp, a, windows, True, None, dict(output_size=output_size))


class AdaptiveAvgPool1d(_AdaptiveAvgPool):
    name_ = "adaptive_avg_pool1d"
    backward_name = "AdaptiveAvgPool1DBackward0"


class AdaptiveAvgPool2d(_AdaptiveAvgPool):
    name_ = "adaptive_avg_pool2d"
    backward_name = "AdaptiveAvgPool2DBackward0"


# -- argument checks ------------------------------------------------------------------------------------------------

_COUNT = {1: "one int", 2: "two ints"}


def _ints(fn, name, value, nd, default=None):
    """``value`` (an int or a tuple of 1 or ``nd`` ints) as a tuple of ``nd`` ints."""
    if value is None or (isinstance(value, (tuple, list)) and len(value) == 0 and default is not None):
        if default is None:
            raise TypeError(f"{fn}(): argument '{name}' must be an int or a tuple of ints, not None")
        return default
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    for v in items:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not {type(v).__name__}")
    if len(items) not in (1, nd):
        omitted = "omitted, " if name == "stride" else ""
        raise RuntimeError(f"{fn}: {name} must either be {omitted}a single int, or a tuple of {_COUNT[nd]} "
                           f"(got {value!r})")
    return items * nd if len(items) == 1 else items


def _check_input(fn, input, nd, floating):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    shape = list(input.shape)
    if input.ndim not in (nd + 1, nd + 2) or 0 in shape[-nd - 1:]:
        raise RuntimeError(f"{fn}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got: {shape}")
    dtype = input._dtype
    if dtype.category == dtype.BOOL or (floating and not dtype.is_floating_point):
        raise not_implemented_for(fn, input._dtype, "a floating point" if floating else "a numeric")


def _pool_args(fn, input, nd, kernel_size, stride, padding, dilation, ceil_mode, floating):
    k = _ints(fn, "kernel_size", kernel_size, nd)
    s = _ints(fn, "stride", stride, nd, default=k)
    p = _ints(fn, "padding", padding, nd)
    d = _ints(fn, "dilation", dilation, nd)
    _check_input(fn, input, nd, floating)
    if min(k) <= 0:
        raise RuntimeError(f"{fn}: kernel_size should be greater than zero, but got kernel_size={k}")
    if min(s) <= 0:
        raise RuntimeError(f"{fn}: stride should not be zero" if 0 in s else
                           f"{fn}: stride should be greater than zero, but got stride={s}")
    if min(d) <= 0:
        raise RuntimeError(f"{fn}: dilation should be greater than zero, but got dilation={d}")
    for ki, pi, di in zip(k, p, d):
        if pi < 0:
            raise RuntimeError(f"{fn}: pad must be non-negative, but got pad: {pi}")
        if pi > ((ki - 1) * di + 1) // 2:
            raise RuntimeError(f"{fn}: pad should be at most half of effective kernel size, but got pad={pi}, "
                               f"kernel_size={ki} and dilation={di}")
        if pi > ki // 2:
            raise RuntimeError(f"{fn}: pad should be smaller than or equal to half of kernel size, but got "
                               f"pad={pi} and kernel_size={ki}")
    shape = tuple(input.shape)
    out = [pooled_size(n, ki, si, pi, di, ceil_mode) for n, ki, si, pi, di in zip(shape[-nd:], k, s, p, d)]
    if min(out) < 1:
        channels = shape[-nd - 1]
        raise RuntimeError(f"{fn}: Given input size: ({'x'.join(map(str, (channels,) + shape[-nd:]))}). "
                           f"Calculated output size: ({'x'.join(map(str, [channels] + out))}). "
                           "Output size is too small")
    return dict(kernel_size=k, stride=s, padding=p, ceil_mode=bool(ceil_mode)), d


def _adaptive_size(fn, input, output_size, nd, floating):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * nd
    if len(sizes) != nd:
        raise RuntimeError(f"{fn}: output_size must be {nd} (got {output_size!r})")
    for v in sizes:
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise TypeError(f"{fn}(): argument 'output_size' must be tuple of ints, not {type(v).__name__}")
    shape = list(input.shape)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fn}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {shape}")
    for dim in range(input.ndim - nd, input.ndim):
        if shape[dim] == 0:
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {shape} with dimension {dim} being empty")
    sizes = tuple(n if v is None else v for n, v in zip(shape[-nd:], sizes))
    if min(sizes) < 0:
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{', '.join(map(str, sizes))}}}")
    dtype = input._dtype
    if dtype.category == dtype.BOOL or (floating and not dtype.is_floating_point):
        raise not_implemented_for(fn, input._dtype, "a floating point" if floating else "a numeric")
    return sizes


# -- public functions -----------------------------------------------------------------------------------------------

def _max_pool(fn, ops, nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    attrs, d = _pool_args(fn, input, nd, kernel_size, stride, padding, dilation, ceil_mode, floating=False)
    return ops[bool(return_indices)].apply(input, dilation=d, **attrs)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-D max pooling over the last dimension of a ``(N, C, L)`` or ``(C, L)`` input.

    ``stride`` defaults to ``kernel_size``; ``padding`` (at most half the
    kernel) never wins; ``ceil_mode`` keeps a last partial window that starts
    inside the input. With ``return_indices`` the positions of the maxima come too.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.max_pool1d(ember.tensor([[1.0, 3.0, 2.0, 0.0, 4.0]]), 2, ceil_mode=True)
    tensor([[3., 2., 4.]])
    """
    return _max_pool("max_pool1d", (MaxPool1d, MaxPool1dWithIndices), 1, input, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling over the last two dimensions of a ``(N, C, H, W)`` or ``(C, H, W)`` input.

    Arguments as :func:`max_pool1d`, each an int or an ``(h, w)`` pair; the
    indices are positions in the flattened ``H x W`` plane.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> x = ember.arange(16.0).reshape(1, 1, 4, 4)
    >>> F.max_pool2d(x, 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """
    return _max_pool("max_pool2d", (MaxPool2d, MaxPool2dWithIndices), 2, input, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def _avg_pool(fn, op, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    attrs, _ = _pool_args(fn, input, nd, kernel_size, stride, padding, 1, ceil_mode, floating=True)
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override, int):
            raise TypeError(f"{fn}(): argument 'divisor_override' must be int, not {type(divisor_override).__name__}")
        if divisor_override == 0:
            raise RuntimeError(f"{fn}: divisor must be not zero")
    return op.apply(input, count_include_pad=bool(count_include_pad), divisor_override=divisor_override, **attrs)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling over the last dimension of a ``(N, C, L)`` or ``(C, L)`` input.

    ``count_include_pad`` counts the zero padding in each window's size.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.avg_pool1d(ember.tensor([[1.0, 2.0, 3.0, 4.0]]), 2)
    tensor([[1.5000, 3.5000]])
    """
    return _avg_pool("avg_pool1d", AvgPool1d, 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-D average pooling over the last two dimensions of a ``(N, C, H, W)`` or ``(C, H, W)`` input.

    ``divisor_override`` divides every window's sum by that number instead of its size.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.avg_pool2d(ember.ones(1, 3, 3), 2, stride=1, padding=1, count_include_pad=False)
    tensor([[[1., 1., 1., 1.],
             [1., 1., 1., 1.],
             [1., 1., 1., 1.],
             [1., 1., 1., 1.]]])
    """
    return _avg_pool("avg_pool2d", AvgPool2d, 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to ``output_size`` positions (windows of PyTorch's adaptive sizes).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.adaptive_avg_pool1d(ember.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]]), 2)
    tensor([[2., 4.]])
    """
    return AdaptiveAvgPool1d.apply(input, output_size=_adaptive_size("adaptive_avg_pool1d", input, output_size, 1,
                                                                     floating=True))


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to an ``output_size`` plane (an int, or a pair whose ``None`` keeps that size).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.adaptive_avg_pool2d(ember.ones(2, 3, 7, 5), (1, None)).shape
    ember.Size([2, 3, 1, 5])
    """
    return AdaptiveAvgPool2d.apply(input, output_size=_adaptive_size("adaptive_avg_pool2d", input, output_size, 2,
                                                                     floating=True))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling to ``output_size`` positions; ``return_indices`` also gives where each maximum was.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.adaptive_max_pool1d(ember.tensor([[1.0, 5.0, 3.0, 4.0, 2.0]]), 2)
    tensor([[5., 4.]])
    """
    size = _adaptive_size("adaptive_max_pool1d", input, output_size, 1, floating=False)
    op = AdaptiveMaxPool1dWithIndices if return_indices else AdaptiveMaxPool1d
    return op.apply(input, output_size=size)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to an ``output_size`` plane (``None`` keeps a size); indices are flat ``H x W`` positions.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.adaptive_max_pool2d(ember.arange(9.0).reshape(1, 3, 3), 1, return_indices=True)
    (tensor([[[8.]]]), tensor([[[8]]]))
    """
    size = _adaptive_size("adaptive_max_pool2d", input, output_size, 2, floating=False)
    op = AdaptiveMaxPool2dWithIndices if return_indices else AdaptiveMaxPool2d
    return op.apply(input, output_size=size)
