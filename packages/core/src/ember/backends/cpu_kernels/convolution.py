"""NumPy kernels for the convolution ops: strided windows copied block by block, then one matrix product.

The im2col matrix of a whole batch is large (tens of MB for a small CNN) and
copying it costs as much as the matmul that reads it. So the batch goes in
blocks of samples whose columns stay in cache: copy a block's windows
(``as_strided`` view of the zero-padded input), multiply, write the output,
next block. A block's columns are laid out ``(rows, samples, positions)``, so
that the whole block is *one* matrix product (per group) with
``samples x positions`` columns: few large BLAS calls instead of one small
call per sample, which matters most when BLAS threads must meet up on a busy
machine. A transposed convolution (also a convolution's input gradient)
multiplies first, sample by sample, and adds the products into its output one
kernel position at a time (col2im): per sample, a kernel position's slab of
the product lines up with its windows, so the adds need no transposition.

With stride 1 the windows of one channel and kernel position are a single
contiguous run of the padded input (rows of pitch ``Wp``; the ``Wp - Wo``
columns between output rows are computed and dropped), which copies much
faster than row-by-row windows. Everything stays in the input's dtype (no
float64 upcast). 1-D convolutions run as 2-D ones of height 1.

The kernels take the op forwards' arguments (see ``ember.ops.convolution``):
a geometry between a big grid (a convolution's input) and a small one (its
output), and a weight ``[small channels, big channels / groups, *kernel]``.
"""
from __future__ import annotations

import itertools

import numpy as np

#: bytes of im2col columns per block: small enough to stay in cache between the copy and the matmul (4 MB ran
#: fastest on a 2-core Xeon with 2 MB of L2 per core and a shared L3; 16 MB was 25% slower)
BLOCK_BYTES = 4 << 20


def _view(base, shape, strides, offset=0):
    """A strided view of the contiguous array ``base`` (what ``as_strided`` does, without its Python overhead);
    ``strides`` and ``offset`` count elements."""
    it = base.itemsize
    return np.ndarray(shape, base.dtype, base, offset * it, tuple(s * it for s in strides))


class _Plan:
    """The layout of one 2-D convolution between a big grid and a small grid (NCHW arrays)."""

    def __init__(self, geometry, kernel, big_shape, small_shape, itemsize):
        self.stride, self.dilation, self.kernel = geometry.stride, geometry.dilation, kernel
        self.padding, self.groups = geometry.padding, geometry.groups
        self.big, self.small = big_shape[2:], small_shape[2:]
        self.c_big, self.c_small = big_shape[1], small_shape[1]
        # the padded big grid: every window inside, and the unpadded input too (cropped padding included)
        self.grid = tuple(max((m - 1) * s + d * (k - 1) + 1, lo + n)
                          for m, s, d, k, (lo, _), n in zip(self.small, self.stride, self.dilation, kernel,
                                                           self.padding, self.big))
        (ho, wo), wp = self.small, self.grid[1]
        self.flat = self.stride == (1, 1)
        # small-grid positions as columns: rows of pitch wp (stride 1) or packed rows
        self.pitch = wp if self.flat else wo
        self.length = (ho - 1) * wp + wo if self.flat else ho * wo
        # pitched rows leave columns between them that small-grid columns must hold at zero
        self.gapped = self.flat and self.pitch != self.small[1]
        self.rows = self.c_big * kernel[0] * kernel[1]  # im2col rows
        self.block = max(1, BLOCK_BYTES // max(1, self.rows * self.length * itemsize))

    def needs_padding(self, x):
        return self.grid != tuple(x.shape[2:]) or not x.flags.c_contiguous

    def padded(self, x, buffer):
        """``x`` inside the zero-padded grid: ``x`` itself when no padding is needed, else copied into ``buffer``."""
        if buffer is None:
            return x
        (lo_h, _), (lo_w, _) = self.padding
        out = buffer[:x.shape[0]]
        out[:, :, lo_h:lo_h + x.shape[2], lo_w:lo_w + x.shape[3]] = x
        return out

    def grid_buffer(self, n, channels, dtype):
        return np.zeros((n, channels) + self.grid, dtype=dtype)

    def windows(self, padded, offsets=None):
        """The strided view of a padded block's windows: (n, C, kh, kw, L), or (n, C, L) for one kernel offset."""
        n, c, hp, wp = padded.shape
        (sh, sw), (dh, dw) = self.stride, self.dilation
        shape, strides, offset = (n, c), (c * hp * wp, hp * wp), 0
        if offsets is None:
            shape += self.kernel
            strides += (dh * wp, dw)
        else:
            offset = offsets[0] * dh * wp + offsets[1] * dw
        if self.flat:
            return _view(padded, shape + (self.length,), strides + (1,), offset)
        return _view(padded, shape + self.small, strides + (sh * wp, sw), offset)

    def columns(self, padded, buffer):
        """im2col of a padded block into ``buffer``: (groups, C/groups * kh * kw, n * L)."""
        n = padded.shape[0]
        windows = self.windows(padded)  # (n, C, kh, kw, *positions)
        order = (1, 2, 3, 0) + tuple(range(4, windows.ndim))
        cols = buffer[:self.rows * n * self.length].reshape(tuple(windows.shape[i] for i in order))
        np.copyto(cols, windows.transpose(order))
        return cols.reshape(self.groups, self.rows // self.groups, n * self.length)

    def _positions(self, cols, n):
        """The small-grid view (C, n, Ho, Wo) of contiguous (C, n * L) columns."""
        c = cols.size // (n * self.length)
        return _view(cols, (c, n) + self.small, (n * self.length, self.length, self.pitch, 1))

    def to_columns(self, y):
        """Small-grid arrays (n, C, Ho, Wo) as (groups, C/groups, n * L) (zeros between pitched rows)."""
        n, c = y.shape[:2]
        cols = (np.zeros if self.gapped else np.empty)((c, n * self.length), dtype=y.dtype)
        self._positions(cols, n)[...] = y.transpose(1, 0, 2, 3)
        return cols.reshape(self.groups, c // self.groups, n * self.length)

    def sample_columns_buffer(self, n, channels, dtype):
        """A buffer for :meth:`sample_columns` of ``n`` samples (zeros between pitched rows stay zero)."""
        return (np.zeros if self.gapped else np.empty)(n * channels * self.length, dtype=dtype)

    def sample_columns(self, y, buffer):
        """Small-grid arrays (n, C, Ho, Wo) as (n, groups, C/groups, L) columns in ``buffer``, sample by sample."""
        n, c = y.shape[:2]
        cols = buffer[:n * c * self.length]
        _view(cols, (n, c) + self.small, (c * self.length, self.length, self.pitch, 1))[...] = y
        return cols.reshape(n, self.groups, c // self.groups, self.length)

    def from_columns(self, cols, n):
        """(.., C, n * L) contiguous columns back to the small grid (n, C, Ho, Wo), as a view."""
        return self._positions(cols, n).transpose(1, 0, 2, 3)

    def crop(self, grid):
        """The big-grid input region of a padded grid block."""
        (lo_h, _), (lo_w, _) = self.padding
        return grid[:, :, lo_h:lo_h + self.big[0], lo_w:lo_w + self.big[1]]

    def block_buffers(self, n, dtype, padded):
        """Reusable buffers for ``n`` samples at a time: padded grid (or None) and columns."""
        block = min(self.block, n)
        grid = self.grid_buffer(block, self.c_big, dtype) if padded else None
        return grid, np.empty(self.rows * block * self.length, dtype=dtype)


def _blocks(n, size):
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def _conv(x, w, b, plan):
    n, dtype = x.shape[0], np.result_type(x, w)
    out = np.empty((n, w.shape[0]) + plan.small, dtype=dtype)
    w2 = w.reshape(plan.groups, w.shape[0] // plan.groups, -1)
    pad_buffer, cols_buffer = plan.block_buffers(n, x.dtype, plan.needs_padding(x))
    bias = None if b is None else b.reshape(-1, 1, 1)
    product = np.empty(w.shape[0] * min(plan.block, n) * plan.length, dtype=dtype)  # reused block to block
    for blk in _blocks(n, plan.block):
        count = blk.stop - blk.start
        cols = plan.columns(plan.padded(x[blk], pad_buffer), cols_buffer)
        y = np.matmul(w2, cols, out=product[:w.shape[0] * count * plan.length].reshape(w2.shape[:2] + (-1,)))
        target = out[blk]
        np.copyto(target, plan.from_columns(y, count))  # then the bias in place: faster than one strided add
        if bias is not None:
            target += bias
    return out


def _conv_transpose(x, w, b, plan):
    n, dtype = x.shape[0], np.result_type(x, w)
    g = plan.groups
    kh, kw = plan.kernel
    c_big = plan.c_big
    # rows ordered (group, kernel position, channel): a kernel position's rows are one slab of the product
    w_t = w.reshape(g, w.shape[0] // g, c_big // g, kh * kw).transpose(0, 3, 2, 1).reshape(g, -1, w.shape[0] // g)
    direct = plan.grid == plan.big  # no padding to crop: accumulate straight into the output
    out = (np.zeros if direct else np.empty)((n, c_big) + plan.big, dtype=dtype)
    grid = None if direct else plan.grid_buffer(min(plan.block, n), c_big, dtype)
    bias = None if b is None else b.reshape(-1, 1, 1)
    block, rows = min(plan.block, n), w_t.shape[0] * w_t.shape[1]
    inputs = plan.sample_columns_buffer(block, x.shape[1], dtype)
    product = np.empty(block * rows * plan.length, dtype=dtype)
    for blk in _blocks(n, plan.block):
        count = blk.stop - blk.start
        # per sample: (n, G, kh * kw * C_big/G, L), so each kernel position's slab lines up with its windows
        cols = np.matmul(w_t, plan.sample_columns(x[blk], inputs),
                         out=product[:count * rows * plan.length].reshape(count, g, w_t.shape[1], plan.length))
        cols = cols.reshape(count, g, kh * kw, c_big // g, plan.length)
        acc = out[blk] if direct else grid[:count]
        if not direct:
            acc.fill(0)
        for k, offsets in enumerate(itertools.product(range(kh), range(kw))):
            window = plan.windows(acc, offsets)  # (n, C_big, *positions)
            window += cols[:, :, k].reshape(window.shape)
        if not direct:
            out[blk] = plan.crop(acc)
        if bias is not None:
            out[blk] += bias
    return out


def _weight_grad(big, small, plan):
    n = big.shape[0]
    g = plan.groups
    # transposed, (G, C_big/G * kh * kw, C_small/G): columns x gradient^T runs faster in BLAS than the other way
    grad_t = np.zeros((g, plan.rows // g, plan.c_small // g), dtype=np.result_type(big, small))
    pad_buffer, cols_buffer = plan.block_buffers(n, big.dtype, plan.needs_padding(big))
    for blk in _blocks(n, plan.block):
        cols = plan.columns(plan.padded(big[blk], pad_buffer), cols_buffer)
        grad_t += np.matmul(cols, plan.to_columns(small[blk]).transpose(0, 2, 1))
    return np.ascontiguousarray(grad_t.transpose(0, 2, 1)).reshape((plan.c_small, plan.c_big // g) + plan.kernel)


# -- 1-D as 2-D -------------------------------------------------------------------------------------------
class _Geometry2d:
    """A 1-D geometry as a 2-D one of height 1 (the fields the kernels read)."""

    def __init__(self, geometry):
        lift = len(geometry.stride) == 1
        self.stride = (1,) * lift + tuple(geometry.stride)
        self.dilation = (1,) * lift + tuple(geometry.dilation)
        self.padding = ((0, 0),) * lift + tuple(geometry.padding)
        self.groups = geometry.groups


def _as_2d(a):
    return a[:, :, None, :] if a.ndim == 3 else a


def _supported(geometry):
    if len(geometry.stride) not in (1, 2):
        raise NotImplementedError(f"the CPU convolution kernel handles 1-D and 2-D convolutions, "
                                  f"not {len(geometry.stride)}-D")


# -- kernels ----------------------------------------------------------------------------------------------
def convolution(ctx, xp, x, w, b=None, *, geometry, transposed):
    """The ``convolution`` op's forward (``Convolution.forward``'s contract)."""
    _supported(geometry)
    ctx.geometry, ctx.transposed = geometry, transposed
    one_d = x.ndim == 3
    x2, w2, geo = _as_2d(x), _as_2d(w), _Geometry2d(geometry)
    kernel = w2.shape[2:]
    if transposed:
        big = geometry.big_sizes(x.shape[2:], w.shape[2:])
        plan = _Plan(geo, kernel, (x.shape[0], w.shape[1] * geometry.groups) + (1,) * one_d + big, x2.shape,
                     x.itemsize)
        out = _conv_transpose(x2, w2, b, plan)
    else:
        small = geometry.small_sizes(x.shape[2:], w.shape[2:])
        plan = _Plan(geo, kernel, x2.shape, (x.shape[0], w.shape[0]) + (1,) * one_d + small, x.itemsize)
        out = _conv(x2, w2, b, plan)
    return out[:, :, 0] if one_d else out


def convolution_weight_grad(ctx, xp, big, small, *, geometry, kernel_size):
    """The ``convolutionweightgrad`` op's forward (``ConvolutionWeightGrad.forward``'s contract)."""
    _supported(geometry)
    ctx.geometry = geometry
    one_d = big.ndim == 3
    big2, small2 = _as_2d(big), _as_2d(small)
    kernel = (1,) * one_d + tuple(kernel_size)
    grad = _weight_grad(big2, small2, _Plan(_Geometry2d(geometry), kernel, big2.shape, small2.shape, big.itemsize))
    return grad[:, :, 0] if one_d else grad


KERNELS = {"convolution": convolution, "convolution_backward": convolution,
           "convolutionweightgrad": convolution_weight_grad}
