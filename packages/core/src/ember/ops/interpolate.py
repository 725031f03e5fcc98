"""``interpolate``: resizing the spatial dimensions with nearest or (bi/tri)linear interpolation.

Each spatial dimension is resized on its own (the last one first) by a fixed
gather with weights (:mod:`ember.ops._resample`), so the op is exactly linear
and its gradient, and the gradient's gradient, are exact. Source positions
follow PyTorch:

- ``'nearest'``: ``floor(o * scale)`` (computed in single precision, as
  PyTorch does), ``'nearest-exact'``: ``floor((o + 0.5) * scale)``, both
  clamped to the last input position; ``scale`` is ``1 / scale_factor`` when a
  scale factor is given (and not recomputed), else ``in / out``.
- linear modes: ``o * (in - 1) / (out - 1)`` with ``align_corners=True``,
  else ``(o + 0.5) * scale - 0.5`` clamped at 0; the two neighbours are
  weighted by distance.

``'area'`` is adaptive average pooling.

>>> import ember
>>> import ember.nn.functional as F
>>> F.interpolate(ember.tensor([[[1.0, 2.0]]]), scale_factor=2)
tensor([[[1., 1., 2., 2.]]])
>>> F.interpolate(ember.tensor([[[1.0, 2.0]]]), size=4, mode="linear")
tensor([[[1.0000, 1.2500, 1.7500, 2.0000]]])
"""
from __future__ import annotations

import math

import numpy as np

from ._common import Tensor
from ._resample import AxisMap, Resample
from .pointwise import not_implemented_for
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d

__all__ = ["interpolate"]

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}
_LABELS = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}


class Upsample(Resample):
    """Nearest or linear resizing (a fixed gather with weights along each spatial dimension)."""

    name_ = "upsample"


def _nearest(size: int, out: int, scale, exact: bool, shortcuts: bool) -> list:
    """PyTorch's nearest source index of each output position (single-precision arithmetic, as its kernels).

    PyTorch's 2-D nearest kernel maps an unchanged or doubled size directly,
    whatever the scale factor says (``shortcuts``); its 1-D and 3-D ones do not.
    """
    if shortcuts and out == size:
        return list(range(out))
    if shortcuts and out == 2 * size:
        return [o >> 1 for o in range(out)]
    s = np.float32(1.0 / scale) if scale else np.float32(size) / np.float32(out)
    o = np.arange(out)
    if exact:
        src = np.floor(((o + 0.5) * np.float64(s)).astype(np.float32))
    else:
        src = np.floor(o.astype(np.float32) * s)
    return np.minimum(src.astype(np.int64), size - 1).tolist()


def _linear(size: int, out: int, scale, align_corners: bool) -> tuple:
    """The two neighbours and their weights for each output position (PyTorch's source-index rule)."""
    if align_corners:
        step = (size - 1) / (out - 1) if out > 1 else 0.0
    else:
        step = 1.0 / scale if scale else size / out
    low, high, w_low, w_high = [], [], [], []
    for o in range(out):
        src = step * o if align_corners else max(step * (o + 0.5) - 0.5, 0.0)
        i = min(math.floor(src), size - 1)
        frac = min(max(src - i, 0.0), 1.0)
        low.append(i)
        high.append(i + 1 if i < size - 1 else i)
        w_low.append(1.0 - frac)
        w_high.append(frac)
    return (low, w_low), (high, w_high)


def _check_mode(input, mode, align_corners, antialias):
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate(): argument 'input' must be Tensor, not {type(input).__name__}")
    modes = " | ".join(("nearest", "linear", "bilinear", "bicubic", "trilinear", "lanczos", "area", "nearest-exact"))
    if mode not in _MODES or input.ndim not in (3, 4, 5):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: {modes} (got {mode})")
    if align_corners is not None and mode not in ("linear", "bilinear", "bicubic", "trilinear"):
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                         "4-D tensor as input")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by ember (only antialias=False)")
    if mode in _LINEAR and input.ndim != _LINEAR[mode] + 2:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {_LINEAR[mode] + 2}D input")
    if mode == "bicubic":
        raise NotImplementedError("interpolate: mode='bicubic' is not supported by ember (supported: nearest, "
                                  "nearest-exact, linear, bilinear, trilinear, area)")
    if mode == "area" and input.ndim == 5:
        raise NotImplementedError("interpolate: mode='area' supports 3D and 4D inputs in ember (got 5D)")


def _output_size(input, size, scale_factor, recompute_scale_factor):
    """The output's spatial sizes and the scale factors the kernel uses (``None`` each: ``in / out``)."""
    nd = input.ndim - 2
    spatial = list(input.shape[2:])
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = list(size) if isinstance(size, (tuple, list)) else [size] * nd
        if any(isinstance(v, bool) or not isinstance(v, int) for v in sizes):
            raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                            f"Tuple[int, int, int], but got size with types {[type(v) for v in sizes]}")
        if len(sizes) != nd:
            raise ValueError("Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {spatial} and output size of {tuple(size)}. Please provide input "
                             "tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return sizes, [None] * nd
    scales = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * nd
    if len(scales) != nd:
        raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got input with "
                         f"spatial dimensions of {spatial} and scale_factor of shape {tuple(scale_factor)}. Please "
                         "provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                         "format.")
    scales = [float(s) for s in scales]
    sizes = [math.floor(n * s) for n, s in zip(spatial, scales)]
    return sizes, ([None] * nd if recompute_scale_factor else scales)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resize the spatial dimensions of ``input`` (``(N, C, W)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)``).

    Give either ``size`` (an int or one per spatial dimension) or
    ``scale_factor`` (output size ``floor(in * scale_factor)``). ``mode``:
    ``'nearest'``, ``'nearest-exact'``, ``'linear'`` (3D), ``'bilinear'``
    (4D), ``'trilinear'`` (5D) or ``'area'``; ``align_corners`` (linear modes)
    maps the corner pixels' centres onto each other.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> x = ember.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    >>> F.interpolate(x, size=3, mode="bilinear", align_corners=True)
    tensor([[[[1.0000, 1.5000, 2.0000],
              [2.0000, 2.5000, 3.0000],
              [3.0000, 3.5000, 4.0000]]]])
    """
    _check_mode(input, mode, align_corners, antialias)
    sizes, scales = _output_size(input, size, scale_factor, recompute_scale_factor)
    nd = input.ndim - 2
    spatial = list(input.shape[2:])
    if min(spatial) <= 0 or min(sizes) <= 0:
        labels = _LABELS[nd]
        raise RuntimeError("Input and output sizes should be greater than 0, but got input ("
                           + ", ".join(f"{k}: {v}" for k, v in zip(labels, spatial)) + ") output ("
                           + ", ".join(f"{k}: {v}" for k, v in zip(labels, sizes)) + ")")
    if input.shape[1] == 0:
        raise RuntimeError(f"Non-empty {input.ndim}D data tensor expected but got a tensor with sizes "
                           f"{list(input.shape)}")
    if mode == "area":
        return (adaptive_avg_pool1d if nd == 1 else adaptive_avg_pool2d)(input, sizes)
    dtype = input._dtype
    if dtype.category == dtype.BOOL or (mode in _LINEAR and not dtype.is_floating_point):
        kernel = f"upsample_{'nearest' if mode.startswith('nearest') else mode}{nd}d"
        raise not_implemented_for(kernel, input._dtype, "a floating point" if mode in _LINEAR else "a numeric")
    maps = []
    for i in range(nd - 1, -1, -1):
        n, m, s = spatial[i], sizes[i], scales[i]
        if mode in _LINEAR:
            taps = _linear(n, m, s, bool(align_corners))
        else:
            exact = mode == "nearest-exact"
            taps = ((_nearest(n, m, s, exact, shortcuts=nd == 2 and not exact), None),)
        maps.append(AxisMap(i - nd, n, taps))
    kind = {"nearest": "Nearest", "nearest-exact": "NearestExact"}.get(mode) or mode.capitalize()
    return Upsample.apply(input, maps=tuple(maps), grad_name=f"Upsample{kind}{nd}DBackward0", mode=mode,
                          size=tuple(sizes), scales=tuple(scales), align_corners=bool(align_corners))
