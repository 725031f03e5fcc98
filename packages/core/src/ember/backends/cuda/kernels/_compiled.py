"""What the CuPy-only kernels share: finding the real CuPy and compiling its kernels once, on first use.

Nothing here imports CuPy at import time (``import ember`` never does). A
compiled kernel runs only on real CuPy arrays of the dtypes it was written
for; any other call (the NumPy stand-in of CI, bfloat16 arrays, ...) goes to
the op's own forward, so wiring these kernels in is always safe.
"""
from __future__ import annotations

import functools
import sys

#: float32 arithmetic for float16 and float32 arrays, double for float64 (used by the kernels' C++ code)
ACC_PREAMBLE = """
template <typename T> struct ember_acc { typedef float type; };
template <> struct ember_acc<double> { typedef double type; };
"""


def real_cupy(a):
    """The CuPy module when ``a`` is an array of the real CuPy (one that compiles kernels), else None."""
    if not type(a).__module__.startswith("cupy"):
        return None
    cupy = sys.modules.get("cupy")
    return cupy if hasattr(cupy, "ElementwiseKernel") and hasattr(cupy, "RawKernel") else None


def floating(a) -> bool:
    """Whether ``a`` holds float16, float32 or float64 (the dtypes the C++ code is written for)."""
    return a.dtype.kind == "f" and a.dtype.itemsize in (2, 4, 8)


@functools.cache
def elementwise(in_params: str, out_params: str, operation: str, name: str, preamble: str = ""):
    """A ``cupy.ElementwiseKernel``, built once (CuPy compiles it per dtype on first call and caches it)."""
    cupy = sys.modules["cupy"]
    return cupy.ElementwiseKernel(in_params, out_params, operation, name, preamble=preamble)
