"""float32 ``log`` and ``sincos`` computed the way PyTorch's AVX2 ``randn`` kernel computes them.

PyTorch's CPU ``normal_`` on 16 or more contiguous float32 values runs
Box-Muller on blocks of 16 with the Cephes-style polynomial ``log`` and
``sincos`` of ``avx_mathfun.h`` (built with FMA contraction). These functions
repeat that arithmetic step for step in NumPy float32, fusing the same
multiply-adds, so that the results are bit for bit PyTorch's.

>>> import numpy as np
>>> float(log_ps(np.array([0.5], np.float32))[0])
-0.6931471824645996
"""
from __future__ import annotations

import numpy as np

__all__ = ["fma32", "log_ps", "sincos_ps"]

_F = np.float32
_MIN_NORM = np.array(0x00800000, np.int32).view(np.float32)
_HALF_BITS = np.array(0.5, np.float32).view(np.int32)
_LOG_P = tuple(_F(v) for v in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                                1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                                3.3333331174E-1))
_DP = tuple(_F(v) for v in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8))


def fma32(a, b, c) -> np.ndarray:
    """``a * b + c`` for float32 values with one rounding, as a fused multiply-add does.

    The product is exact in float64 and the float64 sum is rounded once more to
    float32; that second rounding is wrong only when the float64 sum lies exactly
    half-way between two float32 values while the exact sum does not (it is then
    nudged towards the exact sum first, which a TwoSum gives).
    """
    s = np.multiply(a, b, dtype=np.float64)
    s += c
    halfway = (s.view(np.uint64) & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)
    if halfway.any():
        idx = np.flatnonzero(halfway)
        p = np.multiply(np.broadcast_to(a, s.shape).reshape(-1)[idx], np.broadcast_to(b, s.shape).reshape(-1)[idx],
                        dtype=np.float64)
        c64 = np.broadcast_to(np.asarray(c, dtype=np.float64), s.shape).reshape(-1)[idx]
        flat = s.reshape(-1)
        sum_ = flat[idx]
        bv = sum_ - p
        err = (p - (sum_ - bv)) + (c64 - bv)
        flat[idx] = np.where(err == 0, sum_, np.nextafter(sum_, np.where(err > 0, np.inf, -np.inf)))
    return s.astype(np.float32)


def log_ps(x: np.ndarray) -> np.ndarray:
    """Natural log of positive float32 values (Cephes ``logf`` as in ``avx_mathfun.h``'s ``log256_ps``)."""
    bits = np.maximum(x, _MIN_NORM).view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(np.float32) + _F(1)
    m = ((bits & ~0x7F800000) | _HALF_BITS).view(np.float32)  # the mantissa in [0.5, 1)
    small = m < _F(0.707106781186547524)
    e -= small.astype(np.float32)
    m = (m - _F(1)) + np.where(small, m, _F(0))
    z = m * m
    y = np.full_like(m, _LOG_P[0])
    for coef in _LOG_P[1:]:
        y = fma32(y, m, coef)
    y = fma32(y * m, z, e * _F(-2.12194440e-4))
    y -= z * _F(0.5)  # fused in PyTorch's build, the same here: z * 0.5 is exact
    return (m + y) + e * _F(0.693359375)  # fused too; e (an exponent) times 0.693359375 (9 bits) is exact


def sincos_ps(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sin(x), cos(x))`` of float32 values (Cephes ``sinf``/``cosf`` as in ``sincos256_ps``)."""
    sign_sin = x.view(np.int32) & np.int32(-0x80000000)
    x = np.abs(x)
    j = ((x * _F(1.27323954473516)).astype(np.int32) + 1) & ~1  # 4/pi
    y = j.astype(np.float32)
    # x - y * pi/4 in extended precision; y is 0, 2, 4, 6 or 8 and the first two parts of pi/4 have 8 and 11
    # bits, so those products are exact and a plain add is the fused multiply-add
    x = x + y * _DP[0]
    x = x + y * _DP[1]
    x = fma32(y, _DP[2], x)
    sign_sin = sign_sin ^ ((j & 4) << 29)
    sign_cos = (~(j - 2) & 4) << 29
    use_sin_poly = (j & 2) == 0
    z = x * x
    yc = fma32(np.full_like(z, _F(2.443315711809948E-005)), z, _F(-1.388731625493765E-003))
    yc = fma32(yc, z, _F(4.166664568298827E-002))
    yc = fma32(yc * z, z, -(z * _F(0.5))) + _F(1)
    ys = fma32(np.full_like(z, _F(-1.9515295891E-4)), z, _F(8.3321608736E-3))
    ys = fma32(ys, z, _F(-1.6666654611E-1))
    ys = fma32(ys * z, x, x)
    s = np.where(use_sin_poly, ys, yc)
    c = np.where(use_sin_poly, yc, ys)
    return (s.view(np.int32) ^ sign_sin).view(np.float32), (c.view(np.int32) ^ sign_cos).view(np.float32)
