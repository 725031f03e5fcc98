"""What the random ops share: picking the generator, drawing from it, moving draws to the device, checks."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as dt
from ..random import Generator, default_generator_for
from . import _cpu_distributions as dist
from ._common import Tensor
from .creation import zeros

_C_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int",
            "int64": "long int"}
#: bits of precision of each float dtype: integers up to 2**bits are exact
MANTISSA_BITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def pick_generator(generator, device) -> Generator:
    """``generator`` (checked against ``device``) or ``device``'s default generator."""
    if generator is None:
        return default_generator_for(device)
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an ember.Generator, got {type(generator).__name__}")
    if generator.device.type != device.type:
        raise RuntimeError(f"Expected a '{device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator


def float_dtype(fn: str, dtype):
    """``dtype`` (default: the default float dtype), which must be floating point."""
    if dtype is None:
        return dt.get_default_dtype()
    if not dtype.is_floating_point:
        raise NotImplementedError(f"{fn}(): expected a floating-point dtype, got {dtype!r} "
                                  f"(\"{fn}\" not implemented for '{dtype.scalar_type_name}')")
    return dtype


def uniform_values(gen: Generator, shape, dtype, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """PyTorch's uniforms in ``[low, high)`` for a ``dtype`` tensor of ``shape`` (a NumPy array to cast).

    float16 and bfloat16 draw float32 uniforms and round them; one that rounds up to ``high`` becomes ``low``,
    as in PyTorch.
    """
    values = dist.uniform(gen.engine, math.prod(shape), dtype.name, low, high).reshape(shape)
    if dtype.itemsize < 4:
        values = values.astype(dt.numpy_dtype(dtype))
        top = np.asarray(high).astype(values.dtype)
        values[values == top] = np.asarray(low).astype(values.dtype)
    return values


def normal_values(gen: Generator, shape, dtype, mean: float = 0.0, std: float = 1.0,
                  contiguous: bool = True) -> np.ndarray:
    """PyTorch's normals ``N(mean, std**2)`` for a ``dtype`` tensor of ``shape`` (a NumPy array to cast)."""
    return dist.normal(gen.engine, math.prod(shape), dtype.name, mean, std, contiguous).reshape(shape)


def rng_to_device(values, dtype, device):
    """Generator output as an array of ``dtype`` on ``device``."""
    backend = device.backend
    arr = backend.rng_array(values, device)
    native = backend.native_dtype(dtype)
    return arr if arr.dtype == native else backend.xp.astype(arr, native)


def check_int_range(low: int, high: int, dtype) -> None:
    """PyTorch's checks on a ``[low, high)`` range of integers to draw as ``dtype``."""
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if dtype.is_floating_point:
        bits = MANTISSA_BITS[dtype.name]
        if low < -(1 << bits) or high - 1 > 1 << bits:
            warnings.warn(f"to - 1 is out of bounds [-(2^{bits}), 2^{bits}]: {dtype!r} holds integers exactly "
                          "only within this range", UserWarning, stacklevel=3)
        return
    info = dt.iinfo(dtype)
    if low < info.min:
        raise RuntimeError(f"from is out of bounds for {_C_NAMES[dtype.name]} (from={low}, but {dtype!r} holds "
                           f"[{info.min}, {info.max}])")
    if high - 1 > info.max:
        raise RuntimeError(f"to - 1 is out of bounds for {_C_NAMES[dtype.name]} (to={high}, but {dtype!r} holds "
                           f"[{info.min}, {info.max}])")


def zero_grads(g, shapes):
    """Zero gradients of the given shapes (random draws do not depend on their parameters' values)."""
    out = tuple(zeros(s, dtype=g.dtype, device=g.device) for s in shapes)
    return out if len(out) > 1 else out[0]


def check_probabilities(p: Tensor) -> None:
    """Raise PyTorch's error unless every value of ``p`` lies in [0, 1] (NaN does not)."""
    data = p._data
    if not bool(p._device.backend.xp.all((data >= 0) & (data <= 1))):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false. "
                           "(bernoulli: every probability must lie in [0, 1])")


def check_p(name: str, p) -> None:
    if not 0 <= p <= 1:
        raise RuntimeError(f"{name} expects p to be in [0, 1], but got p={p:g}")
