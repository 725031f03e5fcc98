"""What the CuPy-only kernels share: finding the real CuPy and compiling its kernels once, on first use.

Nothing here imports CuPy at import time (``import ember`` never does). A
compiled kernel runs only on real CuPy arrays of the dtypes it was written
for; any other call (the NumPy stand-in of CI, bfloat16 arrays, ...) goes to
the op's own forward, and so does every call of a kernel that failed to
compile (recorded in :data:`FAILED`, with a warning), so wiring these kernels
in is always safe.
"""
from __future__ import annotations

import functools
import sys
import warnings

#: float32 arithmetic for float16 and float32 arrays, double for float64 (used by the kernels' C++ code)
ACC_PREAMBLE = """
template <typename T> struct ember_acc { typedef float type; };
template <> struct ember_acc<double> { typedef double type; };
"""


def floating(a) -> bool:
    """Whether ``a`` holds float16, float32 or float64 (the dtypes the C++ code is written for)."""
    return a.dtype.kind == "f" and a.dtype.itemsize in (2, 4, 8)


#: ``{kernel name: compiler message}`` of the kernels that did not compile here (their ops run their own forwards)
FAILED: dict = {}


@functools.cache
def elementwise(in_params: str, out_params: str, operation: str, name: str, preamble: str = ""):
    """A ``cupy.ElementwiseKernel``, built once (CuPy compiles it per dtype on first call and caches it)."""
    cupy = sys.modules["cupy"]
    return cupy.ElementwiseKernel(in_params, out_params, operation, name, preamble=preamble)


def launch(kernel, name, *args):
    """``kernel(*args)``, or None when CuPy cannot compile it (the caller then runs the op's own forward)."""
    if name in FAILED:
        return None
    compile_error = sys.modules["cupy"].cuda.compiler.CompileException
    try:
        return kernel(*args)
    except compile_error as exc:
        FAILED[name] = str(exc)
        warnings.warn(f"ember's CUDA kernel {name} did not compile ({str(exc)[:200]}); its op runs its own "
                      "forward", RuntimeWarning, stacklevel=3)
        return None
