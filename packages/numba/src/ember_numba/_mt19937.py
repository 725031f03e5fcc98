"""MT19937's words from a state held as NumPy's ``MT19937`` bit generator holds it: 624 words and a position.

The same algorithm as NumPy's (and PyTorch's CPU generator): when all 624 words are used, the state is
regenerated in place; each word handed out is tempered.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_N = 624
_M = 397
_UPPER = np.uint32(0x80000000)
_LOWER = np.uint32(0x7FFFFFFF)
_MATRIX = np.uint32(0x9908B0DF)
_ONE = np.uint32(1)
_MASK_B = np.uint32(0x9D2C5680)
_MASK_C = np.uint32(0xEFC60000)


@njit(cache=True)
def _twist(key, i, j, k):
    y = (key[i] & _UPPER) | (key[j] & _LOWER)
    v = key[k] ^ (y >> _ONE)
    if y & _ONE:
        v ^= _MATRIX
    key[i] = v


@njit(cache=True)
def _regenerate(key):
    for i in range(_N - _M):
        _twist(key, i, i + 1, i + _M)
    for i in range(_N - _M, _N - 1):
        _twist(key, i, i + 1, i + _M - _N)
    _twist(key, _N - 1, 0, _M - 1)


@njit(cache=True)
def fill_words(key, pos, out):
    """Fill the uint32 array ``out`` with the next words; return the new position."""
    n = out.shape[0]
    i = 0
    while i < n:
        if pos == _N:
            _regenerate(key)
            pos = 0
        m = min(n - i, _N - pos)
        for j in range(m):
            y = key[pos + j]
            y ^= y >> np.uint32(11)
            y ^= (y << np.uint32(7)) & _MASK_B
            y ^= (y << np.uint32(15)) & _MASK_C
            y ^= y >> np.uint32(18)
            out[i + j] = y
        i += m
        pos += m
    return pos


@njit(cache=True)
def word64(words, i):
    """The 64-bit draw made of ``words[2i]`` (high half) and ``words[2i + 1]``."""
    return (np.uint64(words[2 * i]) << np.uint64(32)) | np.uint64(words[2 * i + 1])
