"""Convolution kernels for the GPU: the whole batch as one im2col copy and one GEMM per group (cuBLAS on CuPy).

CuPy 14 has no cuDNN binding, so a convolution is im2col + GEMM. The op's
array-API forward (``ember.ops.convolution``) already does that, but
it multiplies sample by sample (a batched GEMM of ``N x groups`` small
products), builds the columns from one slice per kernel position, and sums
the weight gradient's per-sample products afterwards. Here:

- the columns of the whole batch are one strided view of the padded input
  (``as_strided``: ``(C, *kernel, N, *out)``) copied once, laid out so that
  each group is one GEMM with ``N x positions`` columns;
- the weight gradient is one GEMM over all samples and positions (no
  ``(N, C_out, C_in * K)`` intermediate summed afterwards);
- a transposed convolution (also a convolution's input gradient) is one GEMM
  and then, per kernel position, one in-place add of a slab of the product
  into a strided view of the output (col2im), in the same order as the op's
  forward.

Every stride, padding (cropped trailing input included), dilation, group
count and spatial rank the op takes is handled. Written on plain ``xp``
calls, so CI checks them on NumPy against the op's forward. The kernels take
the op forwards' arguments and set the same ``ctx`` fields.
"""
from __future__ import annotations

import itertools
import math

from ....ops.convolution import Convolution, ConvolutionWeightGrad, _pad
from ._arrays import contiguous, library


def _columns(xp, big, geometry, kernel, small):
    """im2col of the whole batch: ``(groups, C/groups * prod(kernel), N * prod(small))``."""
    padded = _pad(xp, big, geometry.padding)
    n, c = padded.shape[:2]
    sn, sc, *sp = padded.strides
    windows = library(big).lib.stride_tricks.as_strided(  # (C, *kernel, N, *small): one copy makes the columns
        padded, shape=(c,) + tuple(kernel) + (n,) + tuple(small),
        strides=((sc,) + tuple(d * s for d, s in zip(geometry.dilation, sp)) + (sn,)
                 + tuple(st * s for st, s in zip(geometry.stride, sp))))
    g = geometry.groups
    return xp.reshape(contiguous(xp, windows), (g, c // g * math.prod(kernel), n * math.prod(small)))


def _channels_first(xp, a, groups):
    """``(N, C, *grid)`` as ``(groups, C/groups, N * prod(grid))`` (one copy)."""
    n, c = a.shape[:2]
    moved = contiguous(xp, xp.permute_dims(a, (1, 0) + tuple(range(2, a.ndim))))
    return xp.reshape(moved, (groups, c // groups, n * math.prod(a.shape[2:])))


def _batch_first(xp, product, n, channels, grid, b):
    """A ``(.., channels, N * prod(grid))`` product as a contiguous ``(N, channels, *grid)`` array, plus bias."""
    out = contiguous(xp, xp.permute_dims(xp.reshape(product, (channels, n) + tuple(grid)),
                                         (1, 0) + tuple(range(2, 2 + len(grid)))))
    if b is not None:
        out += xp.reshape(b, (-1,) + (1,) * len(grid))
    return out


def _conv(xp, x, w, b, geometry):
    kernel = tuple(w.shape[2:])
    small = geometry.small_sizes(x.shape[2:], kernel)
    g = geometry.groups
    cols = _columns(xp, x, geometry, kernel, small)
    product = xp.matmul(xp.reshape(w, (g, w.shape[0] // g, -1)), cols)  # (G, C_out/G, N * L)
    return _batch_first(xp, product, x.shape[0], w.shape[0], small, b)


def _conv_transpose(xp, x, w, b, geometry):
    n, c_small = x.shape[:2]
    kernel, small = tuple(w.shape[2:]), tuple(x.shape[2:])
    g = geometry.groups
    c_big = w.shape[1] * g
    big = geometry.big_sizes(small, kernel)
    w2 = xp.reshape(w, (g, c_small // g, -1))
    cols = xp.matmul(xp.matrix_transpose(w2), _channels_first(xp, x, g))  # (G, C_big/G * K, N * L)
    cols = xp.reshape(cols, (c_big, math.prod(kernel), n) + small)
    extent = tuple(max((m - 1) * s + d * (k - 1) + 1, lo + size)
                   for m, s, d, k, (lo, _), size in zip(small, geometry.stride, geometry.dilation, kernel,
                                                       geometry.padding, big))
    acc = xp.zeros((c_big, n) + extent, dtype=cols.dtype)  # channels first: each slab adds without transposing
    for i, offsets in enumerate(itertools.product(*map(range, kernel))):
        acc[(slice(None), slice(None)) + geometry.window_slices(offsets, small)] += cols[:, i]
    crop = acc[(slice(None), slice(None)) + tuple(slice(lo, lo + size) for (lo, _), size in zip(geometry.padding, big))]
    return _batch_first(xp, crop, n, c_big, big, b)


def convolution(ctx, xp, x, w, b=None, *, geometry, transposed):
    """The ``convolution`` / ``convolution_backward`` ops' forward (``Convolution.forward``'s contract)."""
    if library(x) is None:
        return Convolution.forward(ctx, xp, x, w, b, geometry=geometry, transposed=transposed)
    ctx.geometry, ctx.transposed = geometry, transposed
    return (_conv_transpose if transposed else _conv)(xp, x, w, b, geometry)


def convolution_weight_grad(ctx, xp, big, small, *, geometry, kernel_size):
    """The ``convolutionweightgrad`` op's forward: one GEMM of the output gradient and the input's columns."""
    if library(big) is None:
        return ConvolutionWeightGrad.forward(ctx, xp, big, small, geometry=geometry, kernel_size=kernel_size)
    ctx.geometry = geometry
    g = geometry.groups
    c_small = small.shape[1]
    cols = _columns(xp, big, geometry, tuple(kernel_size), tuple(small.shape[2:]))  # (G, C_big/G * K, N * L)
    grad = xp.matmul(_channels_first(xp, small, g), xp.matrix_transpose(cols))  # (G, C_small/G, C_big/G * K)
    return xp.reshape(grad, (c_small, big.shape[1] // g) + tuple(kernel_size))


KERNELS = {"convolution": convolution, "convolution_backward": convolution,
           "convolutionweightgrad": convolution_weight_grad}
