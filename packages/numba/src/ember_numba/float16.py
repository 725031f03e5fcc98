"""float16 to float32 and back, one pass over the bit patterns (the kernels ``float16_to_float32`` and
``float32_to_float16`` of the hook ``ember_cpu_kernels``).

The same results as ``ember.backends.reduced_casts`` (NumPy, several passes), which documents the arithmetic:
widening is exact and keeps NaN payloads; narrowing rounds to nearest even, and a NaN becomes the quiet NaN of its
sign. Written without branches on the values, so that LLVM vectorises the loops.

>>> import numpy as np
>>> half = np.array([1.5, -0.0, 6e-8, np.inf], np.float16)
>>> out = np.empty((1, 4), np.uint32)
>>> float16_to_float32(half.view(np.uint16).reshape(1, 4), out)
>>> out.view(np.float32).tolist()
[[1.5, -0.0, 5.960464477539063e-08, inf]]
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._llvm import bits_f32, f32_bits

_U = np.uint32
_SIGN16 = _U(0x8000)
_BODY16 = _U(0x7FFF)
_F16_INF = _U(0x7C00)
_F16_MIN_NORMAL = _U(0x0400)
_REBIAS = _U((127 - 15) << 23)  # float16's exponent bias against float32's, in float32's exponent field
_TINY = np.float32(2.0 ** -24)  # float16's smallest subnormal
_ABS32 = _U(0x7FFFFFFF)
_F32_INF = _U(0x7F800000)
_F16_OVERFLOW = _U((127 + 16) << 23)  # float32 magnitudes from which a value is infinite in float16
_F16_NORMAL = _U(113 << 23)  # and below which it is subnormal
_F16_BIAS = _U((0xFFF + ((15 - 127) << 23)) & 0xFFFFFFFF)  # half a unit in the last place less one, and the bias
_DENORM_MAGIC = _U(((127 - 15) + (23 - 10) + 1) << 23)  # adding this float rounds onto float16's subnormal grid


@njit(cache=True)
def float16_to_float32(half, out):
    """The 2-D uint16 float16 patterns ``half`` (any strides) widened to float32 patterns in the uint32 ``out``."""
    for i in range(half.shape[0]):
        for j in range(half.shape[1]):
            h = _U(half[i, j])
            body = h & _BODY16
            normal = (body << _U(13)) + _REBIAS
            value = f32_bits(np.float32(np.int32(body)) * _TINY)  # zero and subnormals: exact in float32
            if body >= _F16_MIN_NORMAL:
                value = normal
            if body >= _F16_INF:  # infinities and NaNs: the exponent all ones, the payload kept
                value = normal + _REBIAS
            out[i, j] = ((h & _SIGN16) << _U(16)) | value


@njit(cache=True)
def float32_to_float16(bits, out):
    """The uint32 float32 patterns ``bits`` rounded to float16 patterns in the uint16 ``out``."""
    for i in range(bits.shape[0]):
        b = _U(bits[i])
        mag = b & _ABS32
        rounded = (mag + ((mag >> _U(13)) & _U(1)) + _F16_BIAS) >> _U(13)  # ties to even
        subnormal = f32_bits(bits_f32(mag) + bits_f32(_DENORM_MAGIC)) - _DENORM_MAGIC
        value = rounded
        if mag < _F16_NORMAL:
            value = subnormal
        if mag >= _F16_OVERFLOW:
            value = _U(0x7E00) if mag > _F32_INF else _F16_INF
        out[i] = ((b >> _U(16)) & _SIGN16) | value
