"""Convolutions as ops: ``conv1d``, ``conv2d``, ``conv_transpose1d``, ``conv_transpose2d``.

Every convolution is one :class:`Convolution` op. Its geometry (stride,
padding, dilation, groups) describes a map from a *big* spatial grid (the
input of a convolution) to a *small* one (its output); a transposed
convolution runs the same map backwards (it is the adjoint, the gradient of a
convolution with respect to its input). The weight is always
``[small channels, big channels / groups, *kernel]``. The public functions
normalise the padding to a *tight* geometry (trailing input that no window
reaches is cropped), so that both directions give exact sizes and the
backward of each is the other one:

- ``d conv / d input`` is a transposed convolution, ``d conv_transpose / d input`` a convolution;
- ``d / d weight`` of either is :class:`ConvolutionWeightGrad` (a correlation of input and gradient);
- the backward of ``ConvolutionWeightGrad`` is again made of these two ops,

so gradients of any order are available. The forwards below use only the
array API (windows as strided slices, then one matmul); the CPU backend
overrides them with strided-window NumPy kernels
(``ember.backends.cpu_kernels.convolution``).

>>> import ember
>>> import ember.nn.functional as F
>>> x = ember.ones(1, 1, 4, 4)
>>> F.conv2d(x, ember.ones(2, 1, 3, 3)).shape
ember.Size([1, 2, 2, 2])
>>> F.conv_transpose2d(x, ember.ones(1, 2, 3, 3), stride=2).shape
ember.Size([1, 2, 9, 9])
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

from ..amp.autocast_mode import autocast_casts
from ..autograd.function import Op
from ._common import Tensor

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]


class ConvGeometry(NamedTuple):
    """How a kernel slides over the big grid; ``padding`` holds ``(before, after)`` per spatial dimension.

    ``after`` may be negative: that much trailing input is cropped (no window reaches it).
    """

    stride: tuple
    padding: tuple
    dilation: tuple
    groups: int

    def small_sizes(self, big, kernel):
        """Output sizes of the convolution of a big grid of sizes ``big``."""
        return tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                     for n, (lo, hi), d, k, s in zip(big, self.padding, self.dilation, kernel, self.stride))

    def big_sizes(self, small, kernel):
        """Output sizes of the transposed convolution of a small grid of sizes ``small``."""
        return tuple((n - 1) * s + d * (k - 1) + 1 - lo - hi
                     for n, (lo, hi), d, k, s in zip(small, self.padding, self.dilation, kernel, self.stride))

    def window_slices(self, offsets, small):
        """The strided slice of the padded big grid that kernel position ``offsets`` sees."""
        return tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                     for o, d, s, n in zip(offsets, self.dilation, self.stride, small))


# -- array-API forwards -----------------------------------------------------------------------------------
def _pad(xp, x, padding):
    """``x`` with zeros added before/after each spatial dimension (negative amounts crop instead)."""
    crop = tuple(slice(0, n + min(hi, 0)) for n, (_, hi) in zip(x.shape[2:], padding))
    x = x[(...,) + crop]
    if all(lo == 0 and hi <= 0 for lo, hi in padding):
        return x
    shape = x.shape[:2] + tuple(n + lo + max(hi, 0) for n, (lo, hi) in zip(x.shape[2:], padding))
    out = xp.zeros(shape, dtype=x.dtype)
    out[(...,) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape[2:], padding))] = x
    return out


def _columns(xp, big, geometry, kernel, small):
    """im2col: ``(N, groups, C/groups * prod(kernel), prod(small))``, one row per channel and kernel position."""
    padded = _pad(xp, big, geometry.padding)
    windows = [padded[(...,) + geometry.window_slices(offsets, small)]
               for offsets in itertools.product(*map(range, kernel))]
    cols = xp.stack(windows, axis=2)  # (N, C, K, *small)
    n, c = big.shape[:2]
    g = geometry.groups
    return xp.reshape(cols, (n, g, c // g * math.prod(kernel), math.prod(small)))


def conv_forward(xp, x, w, b, geometry):
    """Convolution of the big-grid ``x`` (N, C_big, ...) with ``w`` (C_small, C_big/groups, *kernel)."""
    kernel = tuple(w.shape[2:])
    small = geometry.small_sizes(x.shape[2:], kernel)
    g = geometry.groups
    cols = _columns(xp, x, geometry, kernel, small)
    out = xp.matmul(xp.reshape(w, (g, w.shape[0] // g, -1)), cols)  # (N, G, C_small/G, L)
    out = xp.reshape(out, (x.shape[0], w.shape[0]) + small)
    return out if b is None else out + xp.reshape(b, (-1,) + (1,) * len(small))


def conv_transpose_forward(xp, x, w, b, geometry):
    """Transposed convolution (col2im) of the small-grid ``x`` (N, C_small, ...) with the same weight layout."""
    n, c_small = x.shape[:2]
    kernel, small = tuple(w.shape[2:]), tuple(x.shape[2:])
    g = geometry.groups
    c_big = w.shape[1] * g
    big = geometry.big_sizes(small, kernel)
    w2 = xp.reshape(w, (g, c_small // g, -1))
    cols = xp.matmul(xp.matrix_transpose(w2), xp.reshape(x, (n, g, c_small // g, math.prod(small))))
    cols = xp.reshape(cols, (n, c_big, math.prod(kernel)) + small)
    extent = tuple(max((m - 1) * s + d * (k - 1) + 1, lo + size)
                   for m, s, d, k, (lo, _), size in zip(small, geometry.stride, geometry.dilation, kernel,
                                                       geometry.padding, big))
    acc = xp.zeros((n, c_big) + extent, dtype=x.dtype)
    for i, offsets in enumerate(itertools.product(*map(range, kernel))):
        where = (...,) + geometry.window_slices(offsets, small)
        acc[where] = acc[where] + cols[:, :, i, ...]
    out = acc[(...,) + tuple(slice(lo, lo + size) for (lo, _), size in zip(geometry.padding, big))]
    return out if b is None else out + xp.reshape(b, (-1,) + (1,) * len(small))


def weight_grad_forward(xp, big, small, geometry, kernel):
    """Gradient of ``conv(big, w)`` with respect to ``w`` for output gradient ``small``."""
    n, c_small = small.shape[:2]
    g = geometry.groups
    cols = _columns(xp, big, geometry, kernel, tuple(small.shape[2:]))
    grad = xp.reshape(small, (n, g, c_small // g, math.prod(small.shape[2:])))
    out = xp.sum(xp.matmul(grad, xp.matrix_transpose(cols)), axis=0)  # (G, C_small/G, C_big/G * K)
    return xp.reshape(out, (c_small, big.shape[1] // g) + tuple(kernel))


# -- ops --------------------------------------------------------------------------------------------------
class Convolution(Op):
    """``conv`` (``transposed=False``) or ``conv_transpose`` of ``(input, weight, bias or None)``."""

    name_ = "convolution"
    saves_inputs = True
    backward_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, xp, x, w, b=None, *, geometry, transposed):
        ctx.geometry, ctx.transposed = geometry, transposed
        return (conv_transpose_forward if transposed else conv_forward)(xp, x, w, b, geometry)

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        geometry, transposed = ctx.geometry, ctx.transposed
        gx = gw = gb = None
        if need_x:
            gx = ConvolutionBackward.apply(g, w, None, geometry=geometry, transposed=not transposed)
        if need_w:
            big, small = (g, x) if transposed else (x, g)
            gw = ConvolutionWeightGrad.apply(big, small, geometry=geometry, kernel_size=tuple(w.shape[2:]))
        if need_b:
            gb = g.sum(dim=(0,) + tuple(range(2, g.ndim)))
        return gx, gw, gb


class ConvolutionBackward(Convolution):
    """A convolution computed inside a backward pass (same kernel; PyTorch's name for its node)."""

    name_ = "convolution_backward"
    backward_name = "ConvolutionBackwardBackward0"


class ConvolutionWeightGrad(Op):
    """``d conv(big, w) / d w`` contracted with the gradient ``small``; differentiable in both."""

    name_ = "convolutionweightgrad"
    saves_inputs = True
    backward_name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, xp, big, small, *, geometry, kernel_size):
        ctx.geometry = geometry
        return weight_grad_forward(xp, big, small, geometry, kernel_size)

    @staticmethod
    def backward(ctx, gw):
        big, small = ctx.saved_tensors
        need_big, need_small = ctx.needs_input_grad
        geometry = ctx.geometry
        return (ConvolutionBackward.apply(small, gw, None, geometry=geometry, transposed=True) if need_big else None,
                ConvolutionBackward.apply(big, gw, None, geometry=geometry, transposed=False) if need_small else None)


# -- argument checks --------------------------------------------------------------------------------------
def _sizes(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _per_channel(sizes):
    return "(" + " x ".join(str(s) for s in sizes) + ")"


def _expand(fn, name, value, nd):
    """An int or a sequence of 1 or ``nd`` ints as an ``nd``-tuple (PyTorch's message otherwise)."""
    if type(value) is int:
        return (value,) * nd
    if isinstance(value, bool) or not isinstance(value, (int, tuple, list)):
        raise TypeError(f"{fn}(): argument '{name}' must be int or tuple of ints, not {type(value).__name__}")
    if isinstance(value, int):
        return (value,) * nd
    if any(isinstance(v, bool) or not isinstance(v, int) for v in value):
        bad = next(v for v in value if isinstance(v, bool) or not isinstance(v, int))
        raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, but found element of type "
                        f"{type(bad).__name__}")
    if len(value) == 1:
        return tuple(value) * nd
    if len(value) != nd:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {nd} values to match the "
                           f"convolution dimensions, but got {name}={list(value)}")
    return tuple(value)


def _check_common(fn, nd, input, weight, bias, stride, dilation, groups):
    """Types, ranks and the values every convolution shares; returns (input, batched, stride, dilation)."""
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{fn}(): argument 'bias' must be Tensor or None, not {type(bias).__name__}")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {fn}, "
                           f"but got input of size: {_sizes(input.shape)}")
    if weight.ndim != nd + 2:
        layout = "in_channels, out_channels/groups" if "transpose" in fn else "out_channels, in_channels/groups"
        raise RuntimeError(f"{fn}: expected a {nd + 2}D weight [{layout}, {nd} kernel sizes], "
                           f"but got weight of size {_sizes(weight.shape)}")
    stride = _expand(fn, "stride", stride, nd)
    dilation = _expand(fn, "dilation", dilation, nd)
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise TypeError(f"{fn}(): argument 'groups' must be int, not {type(groups).__name__}")
    if min(stride) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    kernel = weight._data.shape[2:]
    if min(kernel) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got {_kernel_words(kernel)}")
    if weight._data.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{_sizes(weight.shape)}] instead")
    if input._dtype is not weight._dtype and not autocast_casts("convolution", input):  # autocast casts them
        raise RuntimeError(f"expected scalar type {input._dtype.scalar_type_name} but found "
                           f"{weight._dtype.scalar_type_name}")
    if bias is not None and bias._dtype is not input._dtype and not autocast_casts("convolution", input):
        raise RuntimeError(f"Input type ({input._dtype.scalar_type_name.lower()}) and bias type "
                           f"({bias._dtype.scalar_type_name.lower()}) should be the same")
    batched = input.ndim == nd + 2
    return (input if batched else input.unsqueeze(0)), batched, stride, dilation


def _kernel_words(kernel):
    """The kernel sizes as PyTorch's message spells them (a 1-d kernel is a 1 x k one)."""
    if len(kernel) == 3:
        return "{} x {} x {} (TxHxW)".format(*kernel)
    kh, kw = (1, *kernel) if len(kernel) == 1 else kernel
    return f"kernel_height: {kh} kernel_width: {kw}"


def _check_channels(input, weight, expected, label):
    if input._data.shape[1] != expected:
        raise RuntimeError(f"Given {label}, weight of size {_sizes(weight.shape)}, expected input"
                           f"{_sizes(input.shape)} to have {expected} channels, but got {input.shape[1]} "
                           "channels instead")


def _check_bias(bias, weight, out_channels, label):
    if bias is not None and bias._data.shape != (out_channels,):
        raise RuntimeError(f"Given {label}weight of size {_sizes(weight.shape)}, expected bias to be 1-dimensional "
                           f"with {out_channels} elements, but got bias of size {_sizes(bias.shape)} instead")


def _conv_padding(fn, padding, nd, kernel, dilation, stride):
    """``(before, after)`` per dimension for an int/tuple padding or ``'valid'`` / ``'same'``."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        return tuple((t // 2, t - t // 2) for t in total)
    padding = _expand(fn, "padding", padding, nd)
    if min(padding) < 0:
        raise RuntimeError("negative padding is not supported")
    return tuple((p, p) for p in padding)


def _convnd(fn, nd, input, weight, bias, stride, padding, dilation, groups):
    input, batched, stride, dilation = _check_common(fn, nd, input, weight, bias, stride, dilation, groups)
    w_shape = weight._data.shape
    _check_channels(input, weight, w_shape[1] * groups, f"groups={groups}")
    _check_bias(bias, weight, w_shape[0], "")
    kernel = w_shape[2:]
    pads = _conv_padding(fn, padding, nd, kernel, dilation, stride)
    size = input._data.shape[2:]
    padded = [n + lo + hi for n, (lo, hi) in zip(size, pads)]
    extent = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    if any(p < e for p, e in zip(padded, extent)):
        raise RuntimeError(f"Calculated padded input size per channel: {_per_channel(padded)}. Kernel size: "
                           f"{_per_channel(extent)}. Kernel size can't be greater than actual input size")
    # tight geometry: the padding after each dimension ends where the last window ends
    small = [(p - e) // s + 1 for p, e, s in zip(padded, extent, stride)]
    pads = tuple((lo, (m - 1) * s + e - n - lo) for (lo, _), m, s, e, n in zip(pads, small, stride, extent, size))
    geometry = ConvGeometry(stride, pads, dilation, groups)
    out = Convolution.apply(input, weight, bias, geometry=geometry, transposed=False)
    return out if batched else out.squeeze(0)


def _conv_transpose_nd(fn, nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    if isinstance(padding, str):
        raise TypeError(f"{fn}(): argument 'padding' must be tuple of ints, not str")
    input, batched, stride, dilation = _check_common(fn, nd, input, weight, bias, stride, dilation, groups)
    _check_channels(input, weight, weight.shape[0], "transposed=1")
    _check_bias(bias, weight, weight.shape[1] * groups, "transposed=1, ")
    padding = _expand(fn, "padding", padding, nd)
    output_padding = _expand(fn, "output_padding", output_padding, nd)
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        names = ("height", "width") if nd == 2 else ("width",)
        parts = [f"{label}_{n}: {v}" for label, values in (("output_padding", output_padding), ("stride", stride),
                                                            ("dilation", dilation))
                 for n, v in zip(names, values)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                           + " ".join(parts))
    kernel = tuple(weight.shape[2:])
    geometry = ConvGeometry(stride, tuple((p, p - op) for p, op in zip(padding, output_padding)), dilation, groups)
    big = geometry.big_sizes(tuple(input.shape[2:]), kernel)
    if any(n <= 0 for n in big):
        raise RuntimeError(f"Given input size per channel: {_per_channel(input.shape[2:])}. Calculated output "
                           f"size per channel: {_per_channel(big)}. Output size is too small")
    out = Convolution.apply(input, weight, bias, geometry=geometry, transposed=True)
    return out if batched else out.squeeze(0)


# -- public functions -------------------------------------------------------------------------------------
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) of ``input`` (N, C_in, L) or (C_in, L) with ``weight``
    (C_out, C_in/groups, k); ``padding`` is an int, a 1-tuple, ``'valid'`` or ``'same'``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.conv1d(ember.tensor([[[1., 2., 3., 4.]]]), ember.tensor([[[1., 0., -1.]]]))
    tensor([[[-2., -2.]]])
    """
    return _convnd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of ``input`` (N, C_in, H, W) or (C_in, H, W) with ``weight``
    (C_out, C_in/groups, kH, kW); ``padding`` is an int, a pair, ``'valid'`` or ``'same'`` (stride 1 only).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> x = ember.arange(16.).reshape(1, 1, 4, 4)
    >>> F.conv2d(x, ember.ones(1, 1, 2, 2), stride=2)
    tensor([[[[10., 18.],
              [42., 50.]]]])
    >>> F.conv2d(x, ember.ones(3, 1, 3, 3), padding="same").shape
    ember.Size([1, 3, 4, 4])
    """
    return _convnd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution of ``input`` (N, C_in, L) or (C_in, L) with ``weight``
    (C_in, C_out/groups, k): the gradient of ``conv1d`` with respect to its input.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.conv_transpose1d(ember.tensor([[[1., 2.]]]), ember.tensor([[[1., 1., 1.]]]), stride=2)
    tensor([[[1., 1., 3., 2., 2.]]])
    """
    return _conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding,
                              groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution of ``input`` (N, C_in, H, W) or (C_in, H, W) with ``weight``
    (C_in, C_out/groups, kH, kW); ``output_padding`` adds rows/columns at the end (less than stride or dilation).

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.conv_transpose2d(ember.ones(1, 1, 2, 2), ember.ones(1, 1, 2, 2), stride=2, output_padding=1).shape
    ember.Size([1, 1, 5, 5])
    """
    return _conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding,
                              groups, dilation)
