"""The CPU generator's bulk transforms, compiled: the ``random_*`` kernels of the hook ``ember_cpu_kernels``.

Each takes MT19937's state (``key``, 624 uint32 words, changed in place, and ``pos``), fills ``out`` and returns
the new ``pos``, consuming words in the order of ``ember.ops._cpu_distributions`` (which documents PyTorch's
transforms) and giving the same bits. Words are drawn a chunk at a time into a small buffer that stays in the
cache.

>>> import numpy as np
>>> key = np.random.RandomState(0).get_state(legacy=False)["state"]["key"]  # torch.manual_seed(0)
>>> out = np.empty(2, np.float32)
>>> uniform(key, 624, out, 0.0, 1.0), out.tolist()  # torch.rand(2)
(2, [0.49625658988952637, 0.7682217955589294])
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._avx_math import log_ps, sincos_ps
from ._llvm import fma
from ._mt19937 import fill_words, word64

__all__ = ["uniform", "normal", "integers", "bernoulli", "permutation"]

_CHUNK = 4096  # values per buffer fill (a multiple of the Box-Muller block)
_LOW24 = np.uint32((1 << 24) - 1)
_MASK53 = np.uint64((1 << 53) - 1)
_SCALE24 = np.float32(1.0 / (1 << 24))
_SCALE53 = 1.0 / (1 << 53)
_TWO_PI32 = np.float32(2.0 * math.pi)
_TWO_PI = 2.0 * math.pi
_BLOCK = 16


@njit(cache=True)
def _uniform32(key, pos, out, low, high):
    lo, hi = np.float32(low), np.float32(high)
    span = hi - lo
    plain = low == 0.0 and high == 1.0
    words = np.empty(_CHUNK, np.uint32)
    n = out.shape[0]
    for start in range(0, n, _CHUNK):
        m = min(_CHUNK, n - start)
        pos = fill_words(key, pos, words[:m])
        for i in range(m):
            x = np.float32(np.int32(words[i] & _LOW24)) * _SCALE24
            out[start + i] = x if plain else fma(x, span, lo)
    return pos


@njit(cache=True)
def _uniform64(key, pos, out, low, high):
    plain = low == 0.0 and high == 1.0
    span = high - low
    words = np.empty(2 * _CHUNK, np.uint32)
    n = out.shape[0]
    for start in range(0, n, _CHUNK):
        m = min(_CHUNK, n - start)
        pos = fill_words(key, pos, words[:2 * m])
        for i in range(m):
            u = np.float64(np.int64(word64(words, i) & _MASK53)) * _SCALE53
            out[start + i] = u if plain else u * span + low
    return pos


def uniform(key, pos, out, low, high):
    """Uniforms in ``[low, high)`` into ``out`` (float32: a word each; float64: a 64-bit draw each)."""
    if out.dtype == np.float64:
        return _uniform64(key, pos, out, low, high)
    return _uniform32(key, pos, out, low, high)


@njit(cache=True)
def _box_muller32(out, k, u, mean, std, plain):
    """Values ``k .. k+15`` of ``out`` from the 16 uniforms ``u``."""
    for j in range(8):
        radius = np.sqrt(np.float32(-2) * log_ps(np.float32(1) - u[j]))
        s, c = sincos_ps(_TWO_PI32 * u[8 + j])
        a, b = radius * c, radius * s
        if not plain:
            a, b = fma(a, std, mean), fma(b, std, mean)
        out[k + j] = a
        out[k + 8 + j] = b


@njit(cache=True)
def _normal32(key, pos, out, mean, std):
    plain = mean == 0.0 and std == 1.0
    mean32, std32 = np.float32(mean), np.float32(std)
    n = out.shape[0]
    full = n - n % _BLOCK
    words = np.empty(_CHUNK, np.uint32)
    u = np.empty(_BLOCK, np.float32)
    for start in range(0, full, _CHUNK):  # each block's uniforms straight from the words
        m = min(_CHUNK, full - start)
        pos = fill_words(key, pos, words[:m])
        for b in range(0, m, _BLOCK):
            for j in range(_BLOCK):
                u[j] = np.float32(np.int32(words[b + j] & _LOW24)) * _SCALE24
            _box_muller32(out, start + b, u, mean32, std32, plain)
    if n % _BLOCK:  # the last values' uniforms are drawn, then PyTorch draws 16 more and redoes the last 16 values
        pos = fill_words(key, pos, words[:n % _BLOCK])
        pos = _uniform32(key, pos, u, 0.0, 1.0)
        _box_muller32(out, n - _BLOCK, u, mean32, std32, plain)
    return pos


@njit(cache=True)
def _box_muller64(out, k, u, mean, std):
    for j in range(8):
        radius = math.sqrt(-2.0 * math.log(1.0 - u[j]))
        theta = _TWO_PI * u[8 + j]
        c, s = math.cos(theta), math.sin(theta)  # side by side, LLVM makes them one call of sincos
        out[k + j] = radius * c * std + mean
        out[k + 8 + j] = radius * s * std + mean


@njit(cache=True)
def _normal64(key, pos, out, mean, std):
    n = out.shape[0]
    full = n - n % _BLOCK
    words = np.empty(2 * _CHUNK, np.uint32)
    u = np.empty(_BLOCK, np.float64)
    for start in range(0, full, _CHUNK):
        m = min(_CHUNK, full - start)
        pos = fill_words(key, pos, words[:2 * m])
        for b in range(0, m, _BLOCK):
            for j in range(_BLOCK):
                u[j] = np.float64(np.int64(word64(words, b + j) & _MASK53)) * _SCALE53
            _box_muller64(out, start + b, u, mean, std)
    if n % _BLOCK:
        pos = fill_words(key, pos, words[:2 * (n % _BLOCK)])
        pos = _uniform64(key, pos, u, 0.0, 1.0)
        _box_muller64(out, n - _BLOCK, u, mean, std)
    return pos


def normal(key, pos, out, mean, std):
    """Normals ``N(mean, std**2)`` into ``out`` (16 or more values): PyTorch's blocked Box-Muller."""
    if out.dtype == np.float64:
        return _normal64(key, pos, out, mean, std)
    return _normal32(key, pos, out, mean, std)


@njit(cache=True)
def _integers32(key, pos, out, low, span):
    words = np.empty(_CHUNK, np.uint32)
    modulus = np.uint32(span)
    n = out.shape[0]
    for start in range(0, n, _CHUNK):
        m = min(_CHUNK, n - start)
        pos = fill_words(key, pos, words[:m])
        for i in range(m):
            out[start + i] = np.int64(words[i] % modulus) + low
    return pos


@njit(cache=True)
def _integers64(key, pos, out, low, span):
    words = np.empty(2 * _CHUNK, np.uint32)
    modulus = np.uint64(span)
    n = out.shape[0]
    for start in range(0, n, _CHUNK):
        m = min(_CHUNK, n - start)
        pos = fill_words(key, pos, words[:2 * m])
        for i in range(m):
            out[start + i] = np.int64(word64(words, i) % modulus) + low
    return pos


def integers(key, pos, out, low, span):
    """``low + word % span`` into the int64 ``out`` (64-bit draws when ``span >= 2**32``)."""
    if span >= 1 << 32:
        return _integers64(key, pos, out, low, span)
    return _integers32(key, pos, out, low, span)


@njit(cache=True)
def bernoulli(key, pos, out, threshold):
    """True into the bool ``out`` where a 64-bit draw's 53 low bits are below ``threshold``."""
    words = np.empty(2 * _CHUNK, np.uint32)
    limit = np.uint64(threshold)
    n = out.shape[0]
    for start in range(0, n, _CHUNK):
        m = min(_CHUNK, n - start)
        pos = fill_words(key, pos, words[:2 * m])
        for i in range(m):
            out[start + i] = (word64(words, i) & _MASK53) < limit
    return pos


@njit(cache=True)
def permutation(key, pos, out):
    """The forward Fisher-Yates shuffle of ``0 .. n-1`` into the int64 ``out``: step ``k`` swaps ``k`` and
    ``k + word % (n - k)``."""
    n = out.shape[0]
    for i in range(n):
        out[i] = i
    words = np.empty(_CHUNK, np.uint32)
    for start in range(0, n - 1, _CHUNK):
        m = min(_CHUNK, n - 1 - start)
        pos = fill_words(key, pos, words[:m])
        for i in range(m):
            k = start + i
            j = k + np.int64(words[i] % np.uint32(n - k))
            out[k], out[j] = out[j], out[k]
    return pos
