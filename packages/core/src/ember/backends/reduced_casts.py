"""Fast conversions between float32 and float16/bfloat16 NumPy arrays, by bit arithmetic.

The CPU backend runs ops on float16/bfloat16 inputs in float32 and rounds their results back
(``Backend.run_reduced_float``), so these conversions are on the path of every such op; on a matmul of the
MLP's shapes NumPy's casts (ml_dtypes' for bfloat16) take as long as the matmul. Measured on 262144 elements
(one thread): bfloat16 to float32 0.03 ms (NumPy 0.09), float32 to bfloat16 0.12 ms (ml_dtypes 0.20), float16
to float32 0.12 ms (NumPy 0.33), float32 to float16 in the input's own memory 0.27 ms (NumPy 0.41). Fresh
memory is the other cost: on this VM it is about 1 ms per MB in page faults once several large arrays are
alive at once, so the functions allocate little besides their result. Results are bit for bit NumPy's and
ml_dtypes' (round to nearest even, subnormals, infinities, NaN payloads when widening); a NaN rounded to
bfloat16, or to float16 in place, becomes the quiet NaN of its sign (as PyTorch and ml_dtypes make it).
A plugin may give the float16 conversions as compiled one-pass loops (hook ``ember_cpu_kernels``: the
``ember-numba`` distribution does), with the same results.
"""
from __future__ import annotations

import numpy as np

from .._plugins import cpu_kernel

__all__ = ["widen", "narrow"]

#: below this many elements NumPy's casts are quicker (fewer passes over the data)
MIN_SIZE = 2048
#: from this many elements a plugin's compiled float16 conversion is used, when one is registered (matrix
#: products convert blocks of 64K elements: see ``cpu_reduced``)
KERNEL_MIN_SIZE = 1 << 14
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
#: float16's exponent bias 15 against float32's 127: a float16 bit pattern shifted into float32's place
#: is the value times 2**-112
_SCALE = np.float32(2.0 ** 112)
#: float16's infinities and NaNs, shifted into float32's place and scaled as above, are 2**16 and more
_F16_SPECIAL = np.float32(2.0 ** 16)
#: the sign bit and the 28 bits of a shifted float16's exponent and mantissa
_SIGN_AND_BODY = np.int32(0x8FFFFFFF - (1 << 32))
#: float32 magnitudes (as bits) from which a value is infinite in float16, and below which it is subnormal
_F16_OVERFLOW = (127 + 16) << 23
_F16_NORMAL = 113 << 23
#: rounds at float16's last mantissa bit (with the last kept bit added: ties to even) and moves the exponent bias
_F16_BIAS = np.uint32((0xFFF + ((15 - 127) << 23)) & 0xFFFFFFFF)
#: adding the float with these bits to a small magnitude rounds it onto float16's subnormal grid
_DENORM_MAGIC = np.uint32(((127 - 15) + (23 - 10) + 1) << 23)


def widen(a):
    """``a`` (float16 or bfloat16) as float32, exactly."""
    if not isinstance(a, np.ndarray) or a.size < MIN_SIZE:
        return a.astype(_F32)
    half = a.view(np.uint16)
    if a.dtype != _F16:  # bfloat16: the upper half of a float32
        bits = half.astype(np.uint32)
        bits <<= 16
        return bits.view(np.float32)
    kernel = cpu_kernel("float16_to_float32", a.size, KERNEL_MIN_SIZE)
    if kernel is not None and (a.ndim == 2 or a.flags.c_contiguous):  # a column block of a matrix, or any shape
        out = np.empty(a.shape, np.uint32)
        kernel(half if a.ndim == 2 else half.reshape(1, -1), out.reshape(half.shape[0] if a.ndim == 2 else 1, -1))
        return out.view(np.float32)
    bits = half.astype(np.int32)  # the result's only memory
    bits <<= 16  # sign at bit 31, exponent and mantissa below it
    bits >>= 3  # arithmetic: exponent and mantissa in float32's place, the sign copied into bits 28-31
    bits &= _SIGN_AND_BODY  # one sign bit
    out = bits.view(np.float32)
    out *= _SCALE  # exact: normals move their exponent, subnormals become float32 normals
    if out.max() >= _F16_SPECIAL or out.min() <= -_F16_SPECIAL:  # infinities and NaNs (float16's max is 65504)
        bits[np.abs(out) >= _F16_SPECIAL] |= 0x7F800000  # keeping the NaN payloads
    return out


def narrow(a, dtype, scratch: bool = False):
    """Float32 ``a`` rounded to the nearest ``dtype`` value (float16 or bfloat16), ties to even.

    ``scratch``: nobody else holds ``a`` (nor a view of it), so its memory may serve as working space; then
    the result is the only new memory (fresh memory is costly: see the module docstring).
    """
    if not isinstance(a, np.ndarray) or a.size < MIN_SIZE or (dtype == _F16 and not scratch):
        return a.astype(dtype)
    if dtype == _F16:
        return _to_float16(a) if a.flags.c_contiguous else a.astype(dtype)
    bits = a.view(np.uint32)
    nan_mask = np.isnan(a) if np.isnan(a.min()) else None  # NaN propagates through min: no mask unless needed
    if nan_mask is not None:  # a NaN becomes the quiet NaN of its sign
        quiet_nans = (bits[nan_mask] >> 16).astype(np.uint16) & 0x8000 | 0x7FC0
    if not scratch:
        bits = bits.copy()
    half = np.right_shift(bits, 16, out=np.empty(a.shape, np.uint16), casting="unsafe")
    half &= 1  # the last kept bit: ties round to even
    bits += half
    bits += 0x7FFF
    np.right_shift(bits, 16, out=half, casting="unsafe")
    if nan_mask is not None:
        half[nan_mask] = quiet_nans
    return half.view(dtype)


def _to_float16(a):
    """C-contiguous float32 ``a`` rounded to float16, using ``a``'s memory as scratch (it is destroyed)."""
    bits = a.reshape(-1).view(np.uint32)
    kernel = cpu_kernel("float32_to_float16", bits.size, KERNEL_MIN_SIZE)
    if kernel is not None:
        half = np.empty(bits.shape, np.uint16)
        kernel(bits, half)
        return half.view(np.float16).reshape(a.shape)
    out = np.right_shift(bits, 16, out=np.empty(bits.shape, np.uint16), casting="unsafe")
    out &= 0x8000  # the signs
    bits &= 0x7FFFFFFF
    fix_at = None
    if bits.min() < _F16_NORMAL or bits.max() >= _F16_OVERFLOW:  # subnormal, infinite or NaN in float16: few
        fix_at = np.flatnonzero((bits < _F16_NORMAL) | (bits >= _F16_OVERFLOW))
        mag = bits[fix_at]
        subnormal = (mag.view(np.float32) + _DENORM_MAGIC.view(np.float32)).view(np.uint32) - _DENORM_MAGIC
        fixed = np.where(mag < _F16_NORMAL, subnormal, np.where(mag > 0x7F800000, 0x7E00, 0x7C00))
        fixed = fixed.astype(np.uint16) | out[fix_at]
    last = np.right_shift(bits, 13, out=np.empty(bits.shape, np.uint16), casting="unsafe")
    last &= 1  # the last kept bit: ties round to even
    bits += last
    bits += _F16_BIAS  # half a unit in the last place less one, and float16's exponent bias
    bits >>= 13
    np.bitwise_or(out, bits, out=out, casting="unsafe")
    if fix_at is not None:
        out[fix_at] = fixed
    return out.view(np.float16).reshape(a.shape)
