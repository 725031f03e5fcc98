"""Random tensors: ``rand``, ``randn``, ``randint``, ``randperm``, ``normal``, ``bernoulli``, ``multinomial``
and the ``*_like`` forms. In-place fills (``uniform_``, ``normal_``, ...) are in ``random_inplace``.

Numbers come from the device's default :class:`ember.Generator` (seeded by
``ember.manual_seed``) or from ``generator=``; on the CPU they are PyTorch's
numbers for the same seed (see :mod:`ember.ops._cpu_distributions`).

>>> import ember
>>> _ = ember.manual_seed(0)
>>> x = ember.randint(0, 10, (2, 3))
>>> x.shape, x.dtype
(ember.Size([2, 3]), ember.int64)
>>> bool(((x >= 0) & (x < 10)).all())
True
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _alloc
from .. import _dtype as dt
from .._device import as_device
from ..autograd.function import Op
from . import _cpu_distributions as dist
from . import random_inplace  # noqa: F401  (attaches uniform_, normal_, ... to Tensor)
from ._common import Tensor, tensor_method
from ._random_common import (
    check_int_range,
    check_p,
    check_probabilities,
    float_dtype,
    normal_values,
    pick_generator,
    rng_to_device,
    uniform_values,
    zero_grads,
)
from .creation import _finish, size_from_args

__all__ = ["rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "rand_like", "randn_like",
           "randint_like"]


def _shape_arg(dims, size, fn):
    """The shape from ``fn(2, 3)``, ``fn((2, 3))`` or ``fn(size=(2, 3))``."""
    if size is not None:
        if dims:
            raise TypeError(f"{fn}(): give the size either positionally or as size=, not both")
        dims = (size,)
    return size_from_args(dims, fn)


def rand(*dims, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform samples from ``[0, 1)``: ``rand(2, 3)``, ``rand((2, 3))`` or ``rand(size=(2, 3))``.

    >>> import ember
    >>> x = ember.rand(2, 3)
    >>> x.shape, bool(((x >= 0) & (x < 1)).all())
    (ember.Size([2, 3]), True)
    """
    shape = _shape_arg(dims, size, "rand")
    device = as_device(device)
    dtype = float_dtype("rand", dtype)
    generator = pick_generator(generator, device)
    _alloc.check_request(device, shape, dtype)  # past a memory limit, fail before drawing
    try:
        data = rng_to_device(uniform_values(generator, shape, dtype), dtype, device)
    except MemoryError as exc:
        raise _alloc.from_memory_error(exc, device, shape, dtype) from exc
    return _finish(data, device, dtype, requires_grad)


def randn(*dims, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Samples from the standard normal distribution (mean 0, variance 1).

    >>> import ember
    >>> ember.randn(4, dtype=ember.float64).dtype
    ember.float64
    """
    shape = _shape_arg(dims, size, "randn")
    device = as_device(device)
    dtype = float_dtype("randn", dtype)
    generator = pick_generator(generator, device)
    _alloc.check_request(device, shape, dtype)  # past a memory limit, fail before drawing
    try:
        data = rng_to_device(normal_values(generator, shape, dtype), dtype, device)
    except MemoryError as exc:
        raise _alloc.from_memory_error(exc, device, shape, dtype) from exc
    return _finish(data, device, dtype, requires_grad)


def _randint_args(args, size):
    if size is None:
        if len(args) == 2:
            (high, size), low = args, 0
        elif len(args) == 3:
            low, high, size = args
        else:
            raise TypeError(f"randint() expects (high, size) or (low, high, size), got {len(args)} positional "
                            "argument(s)")
    elif len(args) == 1:
        low, high = 0, args[0]
    elif len(args) == 2:
        low, high = args
    else:
        raise TypeError(f"randint() with size= expects (high) or (low, high), got {len(args)} positional argument(s)")
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, Tensor):
            v = v.item()
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise TypeError(f"randint(): argument '{name}' must be int, not {type(v).__name__}")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    return int(low), int(high), size_from_args((size,), "randint")


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Integers drawn uniformly from ``[low, high)``: ``randint(high, size)`` or ``randint(low, high, size)``.

    The dtype is int64 unless given (a float dtype holds the integers as floats).

    >>> import ember
    >>> sorted(set(ember.randint(3, 5, (100,)).tolist()))
    [3, 4]
    """
    low, high, shape = _randint_args(args, size)
    dtype = dtype or dt.int64
    check_int_range(low, high, dtype)
    device = as_device(device)
    engine = pick_generator(generator, device).engine
    _alloc.check_request(device, shape, dtype)
    try:
        values = rng_to_device(dist.integers(engine, math.prod(shape), low, high).reshape(shape), dtype, device)
    except MemoryError as exc:
        raise _alloc.from_memory_error(exc, device, shape, dtype) from exc
    return _finish(values, device, dtype, requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of ``0 .. n-1``.

    >>> import ember
    >>> sorted(ember.randperm(4).tolist())
    [0, 1, 2, 3]
    """
    if isinstance(n, Tensor):
        n = n.item()
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dtype = dtype or dt.int64
    if dtype is not dt.bool_ and dtype.category == dt.INTEGER and n - 1 > dt.iinfo(dtype).max:
        raise RuntimeError(f"value cannot be converted to type {dtype.name}_t without overflow: randperm({n}) "
                           f"needs values up to {n - 1}, more than {dtype!r} holds")
    device = as_device(device)
    values = dist.permutation(pick_generator(generator, device).engine, int(n))
    return _finish(rng_to_device(values, dtype, device), device, dtype, requires_grad)


# -- normal ------------------------------------------------------------------------------------------------------
class _ZeroGradOp(Op, abstract=True):
    """Random draws whose gradient w.r.t. the distribution's parameters is zero, as in PyTorch."""

    @staticmethod
    def backward(ctx, g):
        return zero_grads(g, ctx.shapes)


class NormalTensorFloat(_ZeroGradOp):
    name_ = "normaltensorfloat"
    backward_name = "NormalBackward1"

    @staticmethod
    def forward(ctx, xp, mean, noise=None):
        ctx.shapes = (mean.shape,)
        return mean + noise


class NormalFloatTensor(_ZeroGradOp):
    name_ = "normalfloattensor"
    backward_name = "NormalBackward2"

    @staticmethod
    def forward(ctx, xp, std, noise=None, mean=0.0):
        ctx.shapes = (std.shape,)
        return noise * std + mean


class NormalTensorTensor(_ZeroGradOp):
    name_ = "normaltensortensor"
    backward_name = "NormalBackward3"

    @staticmethod
    def forward(ctx, xp, mean, std, noise=None):
        ctx.shapes = (mean.shape, std.shape)
        return mean + noise * std


def _broadcast_shape(a, b):
    out = []
    for i in range(max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        if x != y and 1 not in (x, y):
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                               f"dimension {max(len(a), len(b)) - 1 - i}")
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def _check_std(std):
    if isinstance(std, Tensor):
        xp = std._device.backend.xp
        if bool(xp.any(std._data < 0)):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Samples from normal distributions with the given ``mean`` and ``std``.

    Either may be a tensor (broadcast together; the result has their shape) or
    a float; with two floats, ``size`` gives the shape. The gradient w.r.t. a
    tensor ``mean`` or ``std`` is zero, as in PyTorch.

    >>> import ember
    >>> ember.normal(2.0, 0.5, size=(3,)).shape
    ember.Size([3])
    >>> ember.normal(ember.zeros(2, 2), 1.0).shape
    ember.Size([2, 2])
    """
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    _check_std(std)
    if not (mean_t or std_t):
        if size is None:
            raise TypeError("normal(): with a float mean and a float std, give size= (e.g. "
                            "normal(0.0, 1.0, size=(2, 3))); or pass mean or std as a tensor")
        shape = size_from_args((size,) if isinstance(size, (tuple, list)) else (size,), "normal")
        device = as_device(device)
        dtype = float_dtype("normal", dtype)
        noise = normal_values(pick_generator(generator, device), shape, dtype, float(mean), float(std))
        return _finish(rng_to_device(noise, dtype, device), device, dtype, requires_grad)
    if size is not None or dtype is not None or device is not None or requires_grad:
        raise TypeError("normal(): size=, dtype=, device= and requires_grad= are only taken when mean and std are "
                        "both floats; with a tensor mean or std the result follows the tensor(s)")
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    for t in tensors:
        if not t._dtype.is_floating_point:
            raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for '{t._dtype.scalar_type_name}': "
                                      "normal() expects floating-point mean and std")
    out_dtype = dt.result_type(*tensors) if len(tensors) == 2 else tensors[0]._dtype
    tensors = [t if t._dtype is out_dtype else t.to(out_dtype) for t in tensors]
    shape = _broadcast_shape(tuple(mean.shape), tuple(std.shape)) if len(tensors) == 2 else tuple(tensors[0].shape)
    device = tensors[0]._device
    gen = pick_generator(generator, device)
    if mean_t and not std_t:  # PyTorch: normal_(0, std), then + mean
        noise = rng_to_device(normal_values(gen, shape, out_dtype, 0.0, float(std)), out_dtype, device)
        return NormalTensorFloat.apply(tensors[0], noise=noise)
    noise = rng_to_device(normal_values(gen, shape, out_dtype), out_dtype, device)
    if mean_t and std_t:
        return NormalTensorTensor.apply(tensors[0], tensors[1], noise=noise)
    return NormalFloatTensor.apply(tensors[0], noise=noise, mean=float(mean))


# -- bernoulli ---------------------------------------------------------------------------------------------------
class Bernoulli(_ZeroGradOp):
    name_ = "bernoulli"

    @staticmethod
    def forward(ctx, xp, p, u=None):
        ctx.shapes = (p.shape,)
        return xp.astype(u < xp.astype(p, u.dtype), p.dtype)


class BernoulliScalar(_ZeroGradOp):
    name_ = "bernoulliscalar"
    backward_name = "BernoulliBackward1"

    @staticmethod
    def forward(ctx, xp, a, hits=None):
        ctx.shapes = (a.shape,)
        return xp.astype(hits, a.dtype)


def bernoulli(input, p=None, *, generator=None):
    """0/1 samples: each element is 1 with the probability given by ``input`` (or by the float ``p``).

    The result has ``input``'s shape and dtype.

    >>> import ember
    >>> ember.bernoulli(ember.tensor([0.0, 1.0]))
    tensor([0., 1.])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                  f"'{input._dtype.scalar_type_name}': bernoulli() expects floating-point "
                                  "probabilities")
    device = input._device
    gen = pick_generator(generator, device)
    shape = tuple(input.shape)
    if p is None:  # PyTorch: a uniform of p's dtype (float64, else float32) below each probability
        check_probabilities(input)
        draw = dt.float64 if input._dtype is dt.float64 else dt.float32
        u = rng_to_device(uniform_values(gen, shape, draw), draw, device)
        return Bernoulli.apply(input, u=u)
    p = float(p)
    check_p("bernoulli_", p)
    hits = dist.bernoulli_scalar(gen.engine, math.prod(shape), p).reshape(shape)
    return BernoulliScalar.apply(input, hits=rng_to_device(hits, dt.bool_, device))


# -- multinomial -------------------------------------------------------------------------------------------------
def _check_multinomial(input, num_samples, replacement):
    if not isinstance(num_samples, numbers.Integral) or isinstance(num_samples, bool):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not "
                        f"{type(num_samples).__name__}")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input._dtype.scalar_type_name}")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim (got a {input.ndim}-dim tensor of shape "
                           f"{list(input.shape)})")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_cat = input.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError(f"cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                           f"({num_samples} > {n_cat})")
    if n_cat > 1 << 24:
        raise RuntimeError(f"number of categories cannot exceed 2^24 (got {n_cat})")


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices sampled from the categories of each row of ``input`` (non-negative weights, not necessarily
    summing to one). Without replacement an index appears at most once per row.

    As in PyTorch, one sample or samples without replacement are the largest ``p / q`` for exponential ``q``
    (the exponentials may differ from PyTorch's in the last bit, which can reorder near-ties); several samples
    with replacement are found by bisection of the normalised cumulative sums.

    >>> import ember
    >>> ember.multinomial(ember.tensor([0.0, 1.0, 0.0]), 2, replacement=True)
    tensor([1, 1])
    """
    _check_multinomial(input, num_samples, replacement)
    device = input._device
    backend = device.backend
    xp = backend.xp
    n_cat = input.shape[-1]
    rows = 1 if input.ndim == 1 else input.shape[0]
    p = xp.reshape(xp.astype(input._data, backend.native_dtype(dt.float64)), (rows, n_cat))
    if rows and n_cat:
        if not bool(xp.all(xp.isfinite(p) & (p >= 0))):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if bool(xp.any(xp.sum(p, axis=-1) <= 0)):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    elif rows:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    engine = pick_generator(generator, device).engine
    probs = np.asarray(backend.to_numpy(input._data)).reshape(rows, n_cat)
    idx = dist.multinomial(engine, probs, num_samples, replacement)
    idx = backend.from_numpy(idx, device)
    idx = xp.astype(idx, backend.native_dtype(dt.int64))
    if input.ndim == 1:
        idx = xp.reshape(idx, (num_samples,))
    return Tensor._make(idx, device, dt.int64)


tensor_method("bernoulli")(bernoulli)
tensor_method("multinomial")(multinomial)


# -- *_like --------------------------------------------------------------------------------------------------------
def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False, memory_format=None):
    """``rand`` with ``input``'s shape, dtype and device (unless given)."""
    return rand(tuple(input.shape), generator=generator, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False, memory_format=None):
    """``randn`` with ``input``'s shape, dtype and device (unless given)."""
    return randn(tuple(input.shape), generator=generator, dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None, requires_grad=False,
                 memory_format=None):
    """``randint`` with ``input``'s shape, dtype and device: ``randint_like(x, high)`` or ``(x, low, high)``."""
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), generator=generator, dtype=dtype or input.dtype,
                   device=device or input.device, requires_grad=requires_grad)
