"""PyTorch's CPU transforms from generator words to samples, vectorised with NumPy.

Each function takes an :class:`ember._mt19937.MT19937Engine` and returns a
NumPy array; they consume the engine's words in PyTorch's order, so that after
the same seed they give PyTorch's CPU numbers:

- uniform float32 (and float16/bfloat16, which round a float32 uniform): one
  32-bit word per value, its low 24 bits scaled to [0, 1); float64: one 64-bit
  draw, its low 53 bits; ``x * (high - low) + low`` with one rounding (FMA);
- normal on 16 or more values: uniforms for all values, Box-Muller on blocks of
  16 (the first 8 give the radii, the last 8 the angles), and for a size that is
  not a multiple of 16, 16 fresh uniforms redo the last 16 values; float32 uses
  the AVX2 polynomials (:mod:`._avx_math`), float64 the C library's functions;
- normal on fewer than 16 values (or on a non-contiguous tensor): the scalar
  double Box-Muller, which keeps its second value for the next call;
- integers in ``[low, high)``: ``word % range + low`` (64-bit draws when the
  range needs them);
- Bernoulli: ``uniform < p``, the uniform of p's dtype for a tensor of
  probabilities, a float64 uniform for a float ``p``.

A plugin may give compiled kernels for the bulk transforms (hook
``ember_cpu_kernels``, e.g. the ``ember-numba`` distribution); they are used
for large draws and give the same numbers.

>>> from ember._mt19937 import MT19937Engine
>>> uniform(MT19937Engine(0), 2, "float32").tolist()  # torch.manual_seed(0); torch.rand(2)
[0.49625658988952637, 0.7682217955589294]
"""
from __future__ import annotations

import math

import numpy as np

from .._mt19937 import MT19937Engine
from .._plugins import cpu_kernel
from ._avx_math import fma32, log_ps, sincos_ps

__all__ = ["uniform", "normal", "integers", "bernoulli_scalar", "permutation", "exponential", "multinomial"]

_TWO_PI = 2.0 * math.pi
_MASK53 = np.uint64((1 << 53) - 1)
#: PyTorch switches from the scalar to the blocked Box-Muller at this many values
BLOCK = 16
#: values per chunk of the blocked Box-Muller (a multiple of BLOCK; its temporaries fit in a core's cache)
_CHUNK = 1 << 16


def _native(name: str, n: int):
    """The plugin kernel ``random_<name>`` for a draw of ``n`` values, or None (NumPy's transform then)."""
    return cpu_kernel(f"random_{name}", n)


def _unit64(engine: MT19937Engine, n: int) -> np.ndarray:
    w = engine.words64(n)
    np.bitwise_and(w, _MASK53, out=w)
    # converted in place (an elementwise ufunc may write over its own input): one buffer instead of two
    return np.multiply(w.view(np.int64), 1.0 / (1 << 53), out=w.view(np.float64), casting="unsafe")


def uniform(engine: MT19937Engine, n: int, dtype: str, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """``n`` uniforms in ``[low, high)``: float64 for ``"float64"``, else float32 (to be rounded to ``dtype``)."""
    kernel = _native("uniform", n)
    if kernel is not None:
        out = np.empty(n, dtype=np.float64 if dtype == "float64" else np.float32)
        return engine.run_kernel(kernel, out, float(low), float(high))
    if dtype == "float64":
        u = _unit64(engine, n)
        return u if (low, high) == (0.0, 1.0) else u * (high - low) + low
    w = engine.words(n)
    np.bitwise_and(w, np.uint32((1 << 24) - 1), out=w)
    if (low, high) == (0.0, 1.0):  # converted in place, as int32 (faster than uint32; the values are below 2**24)
        return np.multiply(w.view(np.int32), np.float32(1.0 / (1 << 24)), out=w.view(np.float32), casting="unsafe")
    lo, hi = np.float32(low), np.float32(high)
    span = hi - lo
    if _exact_in_float64(span, lo):  # then rounding the float64 value once is the fused multiply-add's rounding
        x = np.multiply(w.view(np.int32), float(span) / (1 << 24), dtype=np.float64)
        return np.add(x, float(lo), out=w.view(np.float32), casting="unsafe")  # rounded once, into w's buffer
    x = w.view(np.int32).astype(np.float32)
    x *= np.float32(1.0 / (1 << 24))
    return fma32(x, span, lo)  # PyTorch's kernel is built with FMA contraction


def _exact_in_float64(span: np.float32, lo: np.float32) -> bool:
    """Whether ``k / 2**24 * span + lo`` is exact in float64 for every 24-bit integer ``k``.

    The product has its lowest bit at or above ``ulp(span) / 2**24`` and ``lo`` at
    or above ``ulp(lo)``; the sum stays below ``2 * max(|span|, |lo|)``. When
    those bits fit in float64's 53, the float64 sum is the exact value.
    """
    if span == 0 or not (np.isfinite(span) and np.isfinite(lo)):
        return False
    top = math.frexp(max(abs(float(span)), abs(float(lo))))[1] + 1
    low_bits = [math.frexp(float(span))[1] - 24 - 24]
    if lo != 0:
        low_bits.append(math.frexp(float(lo))[1] - 24)
    return top - min(low_bits) <= 53


def _scalar_normal(engine: MT19937Engine) -> float:
    """One standard normal from the scalar Box-Muller in double, which caches the pair's second value."""
    cached = engine.normal_cache
    if cached is not None:
        engine.normal_cache = None
        return cached
    u1, u2 = _unit64(engine, 2).tolist()
    r = math.sqrt(-2.0 * math.log1p(-u2))
    theta = _TWO_PI * u1
    engine.normal_cache = r * math.sin(theta)
    return r * math.cos(theta)


def _log64(x: np.ndarray) -> np.ndarray:
    """``log`` of float64 values, equal to the C library's.

    NumPy's vectorised ``log`` can differ from the C library's by one unit in
    the last place; it is recomputed by ``math.log`` wherever it lies 0.47 ulp
    or more from the extended-precision value (the C library is within 0.52
    ulp, so elsewhere both are the same double).
    """
    y = np.log(x)
    exact = np.log(x.astype(np.longdouble))
    doubt = np.abs(exact - y) >= 0.47 * np.spacing(np.abs(y))
    if doubt.any():
        y[doubt] = [math.log(v) for v in x[doubt].tolist()]
    return y


def _box_muller_16(u: np.ndarray, dtype: str, mean: float, std: float) -> np.ndarray:
    """Blocks of 16 uniforms (shape ``(k, 16)``) to normals, as PyTorch's ``normal_fill``."""
    if dtype == "float32":
        u1, u2 = np.float32(1) - u[:, :8], u[:, 8:]
        radius = np.sqrt(np.float32(-2) * log_ps(u1))
        s, c = sincos_ps(np.float32(_TWO_PI) * u2)
        out = np.concatenate([radius * c, radius * s], axis=1)
        return out if (mean, std) == (0.0, 1.0) else fma32(out, np.float32(std), np.float32(mean))
    u1, u2 = 1.0 - u[:, :8], u[:, 8:]
    radius = np.sqrt(-2.0 * _log64(u1))
    theta = _TWO_PI * u2
    return np.concatenate([radius * np.cos(theta) * std + mean, radius * np.sin(theta) * std + mean], axis=1)


def normal(engine: MT19937Engine, n: int, dtype: str, mean: float = 0.0, std: float = 1.0,
           contiguous: bool = True) -> np.ndarray:
    """``n`` normals ``N(mean, std**2)``: float64 for ``"float64"``, else float32 (to be cast to ``dtype``)."""
    if n < BLOCK or not contiguous:
        values = np.array([_scalar_normal(engine) * std + mean for _ in range(n)], dtype=np.float64)
        return values if dtype == "float64" else values.astype(np.float32)
    draw = "float64" if dtype == "float64" else "float32"
    kernel = _native("normal", n)
    if kernel is not None:
        return engine.run_kernel(kernel, np.empty(n, dtype=draw), float(mean), float(std))
    u = uniform(engine, n, draw)
    full = n - n % BLOCK
    out = np.empty(n, dtype=u.dtype)
    for start in range(0, full, _CHUNK):  # chunks that stay in the cache
        stop = min(start + _CHUNK, full)
        out[start:stop] = _box_muller_16(u[start:stop].reshape(-1, BLOCK), draw, mean, std).reshape(-1)
    if full != n:  # PyTorch draws 16 more uniforms and redoes the last 16 values
        tail = uniform(engine, BLOCK, draw).reshape(1, BLOCK)
        out[n - BLOCK:] = _box_muller_16(tail, draw, mean, std).reshape(-1)
    return out


def integers(engine: MT19937Engine, n: int, low: int, high: int) -> np.ndarray:
    """``n`` integers in ``[low, high)`` as int64 (64-bit draws when the range is 2**32 or more)."""
    span = high - low
    kernel = _native("integers", n) if span < 1 << 63 else None
    if kernel is not None:
        return engine.run_kernel(kernel, np.empty(n, dtype=np.int64), low, span)
    w = engine.words64(n) if span >= 1 << 32 else engine.words(n)
    np.remainder(w, w.dtype.type(span), out=w)
    out = w.astype(np.int64)
    out += low
    return out


def bernoulli_scalar(engine: MT19937Engine, n: int, p: float) -> np.ndarray:
    """``n`` booleans, each True with probability ``p`` (a float64 uniform below ``p``)."""
    # u = m / 2**53 < p  <=>  m < ceil(p * 2**53), for the 53-bit integer m (p * 2**53 is exact)
    threshold = math.ceil(p * (1 << 53))
    kernel = _native("bernoulli", n)
    if kernel is not None:
        return engine.run_kernel(kernel, np.empty(n, dtype=np.bool_), threshold)
    w = engine.words64(n)
    np.bitwise_and(w, _MASK53, out=w)
    return w < np.uint64(threshold)


def permutation(engine: MT19937Engine, n: int) -> np.ndarray:
    """A random permutation of ``0 .. n-1`` as int64: PyTorch's forward Fisher-Yates shuffle.

    Step ``k`` swaps positions ``k`` and ``j_k = k + word % (n - k)``. The swaps
    run in NumPy rather than one by one: the value at a position when its own step
    comes (its *carry*) is the carry of the last earlier step that wrote there (a
    chain followed by pointer jumping), and step ``k`` takes the value at ``j_k``:
    the carry of the previous step that wrote ``j_k``, else ``j_k`` itself.

    >>> from ember._mt19937 import MT19937Engine
    >>> permutation(MT19937Engine(0), 5).tolist()  # torch.manual_seed(0); torch.randperm(5)
    [4, 0, 1, 3, 2]
    """
    if n < 2:
        return np.arange(n, dtype=np.int64)
    kernel = _native("permutation", n)
    if kernel is not None:
        return engine.run_kernel(kernel, np.empty(n, dtype=np.int64))
    index = np.int32 if n < 1 << 31 else np.int64  # narrower indices keep the gathers in the cache
    steps = np.arange(n - 1, dtype=index)
    targets = (engine.words(n - 1) % np.arange(n, 1, -1, dtype=np.uint32)).astype(index)
    targets += steps
    rest = np.flatnonzero(targets != steps).astype(index)  # the steps that write a later position
    rest_targets = targets[rest]
    # newest[p]: the newest writer of p among `rest`; prev[k]: the previous step that wrote k's target
    newest = np.full(n, -1, dtype=index)
    np.maximum.at(newest, rest_targets, rest)
    carry = np.where(newest >= 0, newest, np.arange(n, dtype=index))  # the last writer of each position
    prev = np.full(n - 1, -1, dtype=index)
    while rest.size:
        top = newest[rest_targets] == rest
        tops, tops_targets = rest[top], rest_targets[top]
        rest, rest_targets = rest[~top], rest_targets[~top]
        newest[tops_targets] = -1
        np.maximum.at(newest, rest_targets, rest)
        prev[tops] = newest[tops_targets]
    while True:  # follow the writers back to the position whose original value they carried
        deeper = carry[carry]
        if np.array_equal(deeper, carry):
            break
        carry = deeper
    out = np.empty(n, dtype=np.int64)
    out[:-1] = np.where(prev >= 0, carry[prev], targets)
    stay = np.flatnonzero(targets == steps)
    out[stay] = carry[stay]
    out[-1] = carry[-1]
    return out


def exponential(engine: MT19937Engine, n: int, lambd: float = 1.0) -> np.ndarray:
    """``n`` exponential samples of rate ``lambd`` as float64: ``-1/lambd * log1p(-u)`` of float64 uniforms.

    NumPy's ``log1p`` may differ from the C library's in the last bit, so a
    value can be one unit in the last place off PyTorch's.
    """
    return (-1.0 / lambd) * np.log1p(-_unit64(engine, n))


def multinomial(engine: MT19937Engine, probs: np.ndarray, k: int, replacement: bool) -> np.ndarray:
    """``k`` category indices per row of the ``(rows, n)`` weights ``probs``, as an int64 ``(rows, k)`` array."""
    rows, n = probs.shape
    if not replacement or k == 1:  # the largest p / q for exponential q (a Gumbel-max trick)
        keys = probs / exponential(engine, rows * n).astype(probs.dtype).reshape(rows, n)
        if k == 1:
            return np.argmax(keys, axis=-1).reshape(rows, 1).astype(np.int64)
        return np.argsort(-keys, axis=-1, kind="stable")[:, :k].astype(np.int64)
    if probs.dtype.itemsize < 4:  # PyTorch sums float16/bfloat16 weights in float32
        probs = probs.astype(np.float32)
    out = np.empty((rows, k), dtype=np.int64)
    for r in range(rows):
        cum = np.cumsum(probs[r])
        cum /= cum[-1]
        cum[-1] = 1
        out[r] = np.searchsorted(cum.astype(np.float64), _unit64(engine, k), side="left")
    return out
