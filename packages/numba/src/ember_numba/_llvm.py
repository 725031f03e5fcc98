"""The few LLVM operations numba does not spell: a fused multiply-add and the bit casts between float32 and uint32.

PyTorch's CPU kernels are built with FMA contraction, so matching its numbers needs ``a * b + c`` rounded once.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` with one rounding (LLVM's ``llvm.fma``), for three values of the same float type."""
    if not (a == b == c and isinstance(a, types.Float)):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return a(a, b, c), codegen


@intrinsic
def f32_bits(typingctx, x):
    """The IEEE bits of a float32 as uint32."""
    if x != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.uint32(types.float32), codegen


@intrinsic
def bits_f32(typingctx, x):
    """The float32 whose IEEE bits are the low 32 bits of the integer ``x`` (numba widens uint32 arithmetic to 64
    bits)."""
    if not isinstance(x, types.Integer) or x.bitwidth < 32:
        return None

    def codegen(context, builder, signature, args):
        low = args[0] if x.bitwidth == 32 else builder.trunc(args[0], ir.IntType(32))
        return builder.bitcast(low, ir.FloatType())

    return types.float32(x), codegen
