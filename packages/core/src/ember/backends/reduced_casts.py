"""Fast conversions between float32 and float16/bfloat16 NumPy arrays, by bit arithmetic.

The CPU backend runs ops on float16/bfloat16 inputs in float32 and rounds their results back
(``Backend.run_reduced_float``), so these two conversions are on the path of every such op. NumPy's own
casts take 1.3-3.5 ns an element here (ml_dtypes' bfloat16 rounding 2.2 ns, NumPy's float16 casts 1.3-1.8 ns),
as much as a float32 matmul of the MLP's shapes; the whole-array integer operations below take 0.1-1.2 ns.
Results are bit for bit NumPy's and ml_dtypes' (round to nearest even, subnormals, infinities), except
that a NaN becomes the quiet NaN of its sign, as in PyTorch.

>>> import numpy as np
>>> from ember.backends.reduced_casts import narrow, widen
>>> x = widen(np.array([1.5, -2.0], dtype=np.float16))
>>> x.dtype, narrow(x * 3, np.dtype(np.float16)).tolist()
(dtype('float32'), [4.5, -6.0])
"""
from __future__ import annotations

import numpy as np

__all__ = ["widen", "narrow"]

#: below this many elements NumPy's casts are quicker (fewer passes over the data)
MIN_SIZE = 2048
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
#: float16's exponent bias 15 against float32's 127: a float16 bit pattern shifted into float32's place
#: is the value times 2**-112
_SCALE = np.float32(2.0 ** 112)
#: float32 exponents at and above which a value is infinite in float16, and below which it is subnormal there
_F16_OVERFLOW = (127 + 16) << 23
_F16_NORMAL = 113 << 23
#: adds float16's rounding increment (half a unit in the last place, less one) and moves the exponent bias
_F16_BIAS = np.uint32((0xFFF + ((15 - 127) << 23)) & 0xFFFFFFFF)
#: 0.5 * 2**-13 with the exponent placed so that adding it rounds a small float32 to float16's subnormal grid
_DENORM_MAGIC = np.uint32(((127 - 15) + (23 - 10) + 1) << 23)


def widen(a):
    """``a`` (float16 or bfloat16) as float32, exactly."""
    if not isinstance(a, np.ndarray) or a.size < MIN_SIZE:
        return a.astype(_F32)
    bits = a.view(np.uint16).astype(np.uint32)
    if a.dtype != _F16:  # bfloat16: the upper half of a float32
        bits <<= 16
        return bits.view(np.float32)
    sign = bits & 0x8000
    bits &= 0x7FFF
    special = bits >= 0x7C00
    bits <<= 13
    out = bits.view(np.float32)
    out *= _SCALE  # exact: normals move their exponent, subnormals become float32 normals
    if special.any():
        bits[special] |= 0x7F800000  # infinities and NaNs (with their payload)
    sign <<= 16
    bits |= sign
    return out


def narrow(a, dtype):
    """Float32 ``a`` rounded to the nearest ``dtype`` value (float16 or bfloat16), ties to even."""
    if not isinstance(a, np.ndarray) or a.size < MIN_SIZE:
        return a.astype(dtype)
    bits = a.view(np.uint32)
    if dtype == _F16:
        return _to_float16(bits).view(dtype)
    out = bits >> 16
    out &= 1
    out += 0x7FFF
    out += bits
    out >>= 16
    half = out.astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        half[nan] = (bits[nan] >> 16).astype(np.uint16) & 0x8000 | 0x7FC0
    return half.view(dtype)


def _to_float16(bits):
    sign = bits >> 16
    sign &= 0x8000
    mag = bits & 0x7FFFFFFF
    out = mag >> 13
    out &= 1
    out += mag
    out += _F16_BIAS
    out >>= 13
    small = mag < _F16_NORMAL
    if small.any():  # subnormal in float16: float32 addition does the rounding
        rounded = mag.view(np.float32) + _DENORM_MAGIC.view(np.float32)
        np.copyto(out, rounded.view(np.uint32) - _DENORM_MAGIC, where=small)
    big = mag >= _F16_OVERFLOW
    if big.any():  # overflow to infinity; NaN to the quiet NaN
        np.copyto(out, np.where(mag > 0x7F800000, np.uint32(0x7E00), np.uint32(0x7C00)), where=big)
    out |= sign
    return out.astype(np.uint16)
