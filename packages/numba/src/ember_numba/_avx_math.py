"""float32 ``log`` and ``sincos`` as PyTorch's AVX2 ``randn`` kernel computes them, one value at a time.

The same Cephes-style polynomials and fused multiply-adds as ``ember.ops._avx_math`` (NumPy, vectorised),
which documents them; both must give the same bits.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._llvm import bits_f32, f32_bits, fma

_F = np.float32
_MIN_NORM = np.array(0x00800000, np.int32).view(np.float32).item()
_MIN_NORM32 = _F(_MIN_NORM)
_HALF_BITS = np.uint32(np.array(0.5, np.float32).view(np.uint32))
_MANTISSA = np.uint32(~0x7F800000 & 0xFFFFFFFF)
_SQRT_HALF = _F(0.707106781186547524)
_P0, _P1, _P2, _P3, _P4, _P5, _P6, _P7, _P8 = (
    _F(v) for v in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
                    -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1))
_Q1, _Q2 = _F(-2.12194440e-4), _F(0.693359375)
_ONE, _HALF, _ZERO = _F(1), _F(0.5), _F(0)
_FOUR_OVER_PI = _F(1.27323954473516)
_DP1, _DP2, _DP3 = _F(-0.78515625), _F(-2.4187564849853515625e-4), _F(-3.77489497744594108e-8)
_C0, _C1, _C2 = _F(2.443315711809948E-005), _F(-1.388731625493765E-003), _F(4.166664568298827E-002)
_S0, _S1, _S2 = _F(-1.9515295891E-4), _F(8.3321608736E-3), _F(-1.6666654611E-1)
_SIGN = np.uint32(0x80000000)


@njit(cache=True)
def log_ps(x):
    """Natural log of a positive float32 (Cephes ``logf`` as in ``avx_mathfun.h``)."""
    bits = f32_bits(max(x, _MIN_NORM32))
    e = _F(np.int32(bits >> np.uint32(23)) - np.int32(0x7F)) + _ONE
    m = bits_f32((bits & _MANTISSA) | _HALF_BITS)
    if m < _SQRT_HALF:
        e -= _ONE
        m = (m - _ONE) + m
    else:
        m = (m - _ONE) + _ZERO
    z = m * m
    y = fma(fma(fma(fma(fma(fma(fma(fma(_P0, m, _P1), m, _P2), m, _P3), m, _P4), m, _P5), m, _P6), m, _P7), m, _P8)
    y = fma(y * m, z, e * _Q1)
    y -= z * _HALF
    return (m + y) + e * _Q2


@njit(cache=True)
def sincos_ps(x):
    """``(sin(x), cos(x))`` of a float32 (Cephes ``sinf``/``cosf`` as in ``sincos256_ps``)."""
    sign_sin = f32_bits(x) & _SIGN
    x = abs(x)
    j = np.uint32((np.int32(x * _FOUR_OVER_PI) + np.int32(1)) & np.int32(-2))
    y = _F(np.int32(j))
    x = x + y * _DP1
    x = x + y * _DP2
    x = fma(y, _DP3, x)
    sign_sin ^= (j & np.uint32(4)) << np.uint32(29)
    sign_cos = (~(j - np.uint32(2)) & np.uint32(4)) << np.uint32(29)
    z = x * x
    yc = fma(fma(_C0, z, _C1), z, _C2)
    yc = fma(yc * z, z, -(z * _HALF)) + _ONE
    ys = fma(fma(_S0, z, _S1), z, _S2)
    ys = fma(ys * z, x, x)
    if (j & np.uint32(2)) == np.uint32(0):
        s, c = ys, yc
    else:
        s, c = yc, ys
    return bits_f32(f32_bits(s) ^ sign_sin), bits_f32(f32_bits(c) ^ sign_cos)
