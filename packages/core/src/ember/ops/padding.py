"""``pad``: constant, reflect, replicate and circular padding of the last dimensions.

``pad`` lists (left, right) amounts starting from the last dimension, as in
PyTorch: ``(1, 2)`` pads the last dimension by 1 before and 2 after,
``(1, 1, 2, 2)`` also the one before it by 2 on both sides. Negative amounts
crop. Constant padding works on any number of dimensions; the other modes pad
the last 1, 2 or 3 dimensions of an input with one or two leading dimensions
(batch and channels, the batch optional).

>>> import ember
>>> import ember.nn.functional as F
>>> F.pad(ember.tensor([[1.0, 2.0, 3.0]]), (2, 1), mode="reflect")
tensor([[3., 2., 1., 2., 3., 2.]])
"""
from __future__ import annotations

from ..autograd.function import Op
from ._common import Tensor, cast_scalar
from ._resample import AxisMap, Resample

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")
_GRAD_NAMES = {"reflect": "ReflectionPad{}DBackward0", "replicate": "ReplicationPad{}DBackward0",
               "circular": "CircularPad{}DBackward0"}


class ConstantPadNd(Op):
    """Constant padding (negative amounts crop); its backward is the same op with the amounts negated."""

    name_ = "constant_pad_nd"

    @staticmethod
    def forward(ctx, xp, a, pad=(), value=0):
        ctx.pad = pad
        keep = [slice(None)] * a.ndim
        place = [slice(None)] * a.ndim
        shape = list(a.shape)
        for i in range(len(pad) // 2):
            axis = a.ndim - 1 - i
            left, right = pad[2 * i], pad[2 * i + 1]
            keep[axis] = slice(max(-left, 0), a.shape[axis] - max(-right, 0))
            shape[axis] = a.shape[axis] + left + right
            place[axis] = slice(max(left, 0), shape[axis] - max(right, 0))
        out = xp.full(tuple(shape), value, dtype=a.dtype)
        out[tuple(place)] = a[tuple(keep)]
        return out

    @staticmethod
    def backward(ctx, g):
        return ConstantPadNd.apply(g, pad=tuple(-p for p in ctx.pad), value=0)


class Pad(Resample):
    """Reflect, replicate or circular padding: a fixed gather along each padded dimension."""

    name_ = "pad"


def _source_indices(mode: str, size: int, left: int, right: int) -> list:
    """Which input position each output position reads along one dimension."""
    if mode == "circular":  # PyTorch crops the negative amounts first, then wraps the rest
        start, stop = max(-left, 0), size - max(-right, 0)
        left, right = max(left, 0), max(right, 0)
        return [start + (o - left) % (stop - start) for o in range(stop - start + left + right)]
    positions = range(-left, size + right)
    if mode == "replicate":
        return [min(max(j, 0), size - 1) for j in positions]
    return [-j if j < 0 else (2 * (size - 1) - j if j >= size else j) for j in positions]  # reflect


def _check_pad_arg(input, pad):
    if not isinstance(input, Tensor):
        raise TypeError(f"pad(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not isinstance(pad, (tuple, list)):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not {type(pad).__name__}")
    for i, p in enumerate(pad):
        if isinstance(p, bool) or not isinstance(p, int):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                            f"{type(p).__name__} at pos {i}")
    if len(pad) % 2:
        raise RuntimeError(f"Padding length must be divisible by 2, got {len(pad)} values {tuple(pad)}")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")


def _check_mode_args(input, pad, mode, value):
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode} (expected one of {', '.join(_MODES)})")
    if mode == "constant":
        return
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    nd = len(pad) // 2
    if nd not in (1, 2, 3) or input.ndim not in (nd + 1, nd + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    shape = list(input.shape)
    if mode != "circular" and any(s == 0 for s in shape[input.ndim - nd - 1:]):
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {shape}")
    for i in range(nd):
        dim = input.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        if mode == "reflect" and (left >= shape[dim] or right >= shape[dim]):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({left}, {right}) at dimension {dim} of input {shape}")
        kept = shape[dim] - max(-left, 0) - max(-right, 0)
        if mode == "circular" and (left > kept or right > kept):
            raise RuntimeError(f"Padding value causes wrapping around more than once: padding ({left}, {right}) at "
                               f"dimension {dim} of input {shape} (circular padding is at most the dimension's size)")


def pad(input, pad, mode="constant", value=None):
    """Pad (or, with negative amounts, crop) the last ``len(pad) // 2`` dimensions of ``input``.

    ``mode``: ``'constant'`` (fill with ``value``, default 0), ``'reflect'``
    (mirror without repeating the edge), ``'replicate'`` (repeat the edge) or
    ``'circular'`` (wrap around). Differentiable in every mode.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> F.pad(ember.tensor([[1, 2]]), (1, 1), value=9)
    tensor([[9, 1, 2, 9]])
    >>> F.pad(ember.tensor([[[1.0, 2.0, 3.0]]]), (1, 2), mode="replicate")
    tensor([[[1., 1., 2., 3., 3., 3.]]])
    >>> F.pad(ember.tensor([[[1.0, 2.0, 3.0]]]), (1, 1), mode="circular")
    tensor([[[3., 1., 2., 3., 1.]]])
    """
    _check_pad_arg(input, pad)
    _check_mode_args(input, pad, mode, value)
    shape = list(input.shape)
    for i in range(len(pad) // 2):
        dim = input.ndim - 1 - i
        if shape[dim] + pad[2 * i] + pad[2 * i + 1] < 0:
            raise RuntimeError(f"pad: padding ({pad[2 * i]}, {pad[2 * i + 1]}) of dimension {dim} of input {shape} "
                               f"would leave it a negative size {shape[dim] + pad[2 * i] + pad[2 * i + 1]}")
    if mode == "constant":
        fill = cast_scalar(0 if value is None else value, input)
        return ConstantPadNd.apply(input, pad=tuple(pad), value=fill)
    nd = len(pad) // 2
    maps = tuple(AxisMap(-1 - i, shape[-1 - i],
                         ((_source_indices(mode, shape[-1 - i], pad[2 * i], pad[2 * i + 1]), None),))
                 for i in range(nd))
    return Pad.apply(input, maps=maps, grad_name=_GRAD_NAMES[mode].format(nd), mode=mode, pad=tuple(pad))
