"""In-place random fills: ``Tensor.uniform_``, ``normal_``, ``bernoulli_``, ``random_``, ``exponential_``.

They are meant for initialisation under ``ember.no_grad()``. With gradients
on, a leaf that requires grad may not be filled in place (PyTorch's error);
a non-leaf gets a grad_fn whose gradient is zero, as in PyTorch.

>>> import ember
>>> w = ember.empty(2, 3)
>>> _ = w.uniform_(-1, 1)
>>> bool(((w >= -1) & (w < 1)).all()), w._version
(True, 1)
"""
from __future__ import annotations

from .. import _dtype as dt
from ..autograd.function import Op
from ..autograd.grad_mode import STATE
from . import _cpu_distributions as dist
from ._common import Tensor, tensor_method
from ._random_common import (
    MANTISSA_BITS,
    check_int_range,
    check_p,
    check_probabilities,
    normal_values,
    pick_generator,
    rng_to_device,
    uniform_values,
    zero_grads,
)

__all__: list = []


class _Refill(Op, abstract=True):
    """The grad_fn of a non-leaf after a random fill: its old values no longer matter (zero gradient)."""

    @staticmethod
    def forward(ctx, xp, a, values=None):
        ctx.shapes = (a.shape,)
        return values

    @staticmethod
    def backward(ctx, g):
        return zero_grads(g, ctx.shapes)


def _refill_op(name):
    return type(name, (_Refill,), {"name_": name.lower(), "backward_name": name.replace("Refill", "Backward")})


_NODES = {name: _refill_op(name) for name in ("UniformRefill0", "NormalRefill0", "BernoulliRefill1",
                                               "BernoulliRefill2", "RandomRefill0", "RandomRefill1",
                                               "RandomRefill2", "ExponentialRefill0")}


def _write(self, values, node: str):
    """Store ``values`` (an array of ``self``'s shape and dtype) into ``self``; bump its version."""
    if STATE.enabled and self._requires_grad:
        base = self._base
        if self.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        if base is not None and base.grad_fn is None and base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        fn = _NODES[node].apply(self, values=values).grad_fn
        self._data[...] = values
        self.grad_fn, self._output_nr = fn, 0
    else:
        self._data[...] = values
    self._vc[0] += 1
    return self


def _need_float(self, kernel):
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{self._dtype.scalar_type_name}': "
                                  f"this fill needs a floating-point tensor, got {self._dtype!r}")


def _shape(self):
    return tuple(self._data.shape)


@tensor_method()
def uniform_(self, from_=0.0, to=1.0, *, generator=None):
    """Fill with uniform samples from ``[from_, to)``."""
    _need_float(self, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_:g} > to={to:g}")
    values = uniform_values(pick_generator(generator, self._device), _shape(self), self._dtype, from_, to)
    return _write(self, rng_to_device(values, self._dtype, self._device), "UniformRefill0")


@tensor_method()
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples from the normal distribution ``N(mean, std**2)``."""
    _need_float(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    gen = pick_generator(generator, self._device)
    # PyTorch fills a non-contiguous tensor element by element with the scalar Box-Muller
    values = normal_values(gen, _shape(self), self._dtype, float(mean), float(std), self.is_contiguous())
    return _write(self, rng_to_device(values, self._dtype, self._device), "NormalRefill0")


@tensor_method()
def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with samples from the exponential distribution of rate ``lambd``."""
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {self._dtype.scalar_type_name}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    engine = pick_generator(generator, self._device).engine
    values = dist.exponential(engine, self._data.size, float(lambd)).reshape(_shape(self))
    return _write(self, rng_to_device(values, self._dtype, self._device), "ExponentialRefill0")


@tensor_method()
def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples that are 1 with probability ``p`` (a float, or a tensor broadcast to ``self``)."""
    device = self._device
    xp = device.backend.xp
    gen = pick_generator(generator, device)
    if isinstance(p, Tensor):
        if not p._dtype.is_floating_point:
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                      f"'{p._dtype.scalar_type_name}': p must hold floating-point probabilities")
        if not _broadcasts_to(tuple(p.shape), _shape(self)):
            raise RuntimeError(f"bernoulli_: p of shape {list(p.shape)} cannot be broadcast to the shape "
                               f"{list(self.shape)} of the tensor being filled")
        check_probabilities(p)
        draw = dt.float64 if p._dtype is dt.float64 else dt.float32  # PyTorch's uniform for p's dtype
        u = rng_to_device(uniform_values(gen, _shape(self), draw), draw, device)
        hits, node = u < xp.astype(p.to(device)._data, u.dtype), "BernoulliRefill1"
    else:
        check_p("bernoulli_", p)
        hits = dist.bernoulli_scalar(gen.engine, self._data.size, float(p)).reshape(_shape(self))
        hits, node = rng_to_device(hits, dt.bool_, device), "BernoulliRefill2"
    return _write(self, xp.astype(hits, device.backend.native_dtype(self._dtype)), node)


def _broadcasts_to(shape, target) -> bool:
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(shape), reversed(target)))


_UNSET = object()


def _full_range(dtype):
    """``[low, high)`` of ``random_()`` without bounds: every integer the dtype holds exactly, from 0."""
    if dtype.is_floating_point:
        return 0, (1 << MANTISSA_BITS[dtype.name]) + 1
    return 0, dt.iinfo(dtype).max + 1


@tensor_method()
def random_(self, from_=_UNSET, to=_UNSET, *, generator=None):
    """Fill with integers: ``random_()`` from ``[0, top]`` (the largest integer the dtype holds exactly),
    ``random_(to)`` from ``[0, to)``, ``random_(from_, to)`` from ``[from_, to)`` (``to=None``: up to the top).
    """
    if from_ is _UNSET and to is _UNSET:
        low, high = _full_range(self._dtype)
        node = "RandomRefill2"
    else:
        if to is _UNSET:
            low, high, node = 0, from_, "RandomRefill1"
        elif from_ is _UNSET:
            low, high, node = 0, to, "RandomRefill1"
        else:
            low, node = from_, "RandomRefill0"
            high = _full_range(self._dtype)[1] if to is None else to
        check_int_range(int(low), int(high), self._dtype)
    engine = pick_generator(generator, self._device).engine
    values = dist.integers(engine, self._data.size, int(low), int(high)).reshape(_shape(self))
    return _write(self, rng_to_device(values, self._dtype, self._device), node)
