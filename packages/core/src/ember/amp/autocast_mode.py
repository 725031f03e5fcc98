"""``ember.autocast``: regions where ops run in a lower floating dtype, by PyTorch's op lists per device type.

Inside ``with ember.autocast("cpu"):`` matrix products and convolutions on CPU tensors run in bfloat16 (the
CPU's default; float16 on request), losses and a few other ops run in float32, and the rest run on the dtypes
they are given (see :mod:`ember.amp.lists`). Casting happens in one place, ``Op.apply``: when a region is on in
the thread, it hands each op's inputs to :meth:`_Caster.cast` first; when none is on, the cost is one attribute
read. Casts are ordinary differentiable ``to`` ops, so gradients reach float32 parameters in float32.

>>> import ember
>>> a, b = ember.ones(2, 3), ember.ones(3, 4)
>>> with ember.autocast("cpu", dtype=ember.float16):
...     c = a @ b
...     s = c.sum()
...     loss = ember.nn.functional.mse_loss(c, ember.zeros(2, 4))
>>> c.dtype, s.dtype, loss.dtype
(ember.float16, ember.float16, ember.float32)
"""
from __future__ import annotations

import functools
import threading

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.grad_mode import STATE, detour
from .lists import BANNED, DEFAULT_DTYPE, FP32, LOWER, OP_LISTS, PROMOTE, SUPPORTED_DTYPES

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "is_autocast_available", "autocast_inputs",
           "autocast_casts"]


class _Caster:
    """One thread's autocast state: the enabled regions by device type, the cast cache, the nesting depth.

    ``STATE.autocast`` (``ember.autograd.grad_mode``) holds it while any device type has a region on, else None.
    """

    def __init__(self) -> None:
        #: device type -> (dtype, op table) of the region in force, for the device types with autocast on
        self.active: dict[str, tuple] = {}
        #: device type -> the region's dtype, enabled or not (what get_autocast_dtype reports)
        self.dtypes: dict[str, dt.dtype] = {}
        self.cache_enabled = True
        self.nesting = 0
        #: id(leaf) -> (leaf, its version, dtype, the cast copy): casts of float32 leaves that require grad
        self.cache: dict[int, tuple] = {}

    def cast(self, cls, inputs: tuple, attrs: dict) -> tuple:
        """``inputs`` of op ``cls`` cast as the region of their device type says (the same tuple if nothing is)."""
        return self.cast_named(cls.name_, inputs, attrs)

    def cast_named(self, name: str, inputs: tuple, attrs: dict) -> tuple:
        """``inputs`` of the op or function called ``name`` cast as the region of their device type says."""
        for first in inputs:
            if isinstance(first, Tensor):
                break
        else:
            return inputs
        device_type = first._device.type
        region = self.active.get(device_type)
        if region is None:
            return inputs
        dtype, table = region
        policy = table.get(name)
        if policy is None:
            return inputs
        if type(policy) is tuple:  # a policy that holds only for some values of one attribute
            policy, attr, values = policy
            if attrs.get(attr) not in values:
                return inputs
        if policy == LOWER:
            target = dtype
        elif policy == FP32:
            target = dt.float32
        elif policy == PROMOTE:
            widest = [t._dtype for t in inputs if _eligible(t, device_type)]
            if not widest:
                return inputs
            target = functools.reduce(dt.promote_types, widest)
        elif policy == BANNED:
            raise RuntimeError(f"{name!r} is unsafe to autocast on {device_type!r}: a sigmoid right before "
                               "binary_cross_entropy loses precision in low precision; use "
                               "ember.nn.functional.binary_cross_entropy_with_logits (or nn.BCEWithLogitsLoss), "
                               "which is safe to autocast")
        else:
            raise AssertionError(f"unknown autocast policy {policy!r} for {name!r}")
        cache_low = target is dtype and self.cache_enabled
        return tuple(self._cast_one(t, target, cache_low) if _eligible(t, device_type) and t._dtype is not target
                     else t for t in inputs)

    def _cast_one(self, t: Tensor, target: dt.dtype, cache_low: bool) -> Tensor:
        """``t.to(target)``; a float32 leaf that requires grad (a weight) is cast once per region (PyTorch's cache).

        Only casts made with grad mode on are kept: a copy made under ``no_grad`` has no path back to the weight,
        and handing it out later would cut the weight off from its gradient (PyTorch behaves the same).
        """
        if not (cache_low and t._dtype is dt.float32 and t._requires_grad and t.grad_fn is None and t._base is None
                and STATE.enabled):
            return t.to(target)
        hit = self.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1] == t._vc[0] and hit[2] is target:
            return hit[3]
        out = t.to(target)
        self.cache[id(t)] = (t, t._vc[0], target, out)  # holding t keeps its id from being reused
        return out

    def publish(self) -> None:
        """Point ``Op.apply`` at this state while a region is on, else at nothing; keep the thread count."""
        was, now = STATE.autocast is not None, bool(self.active)
        STATE.autocast = self if now else None
        if was != now:
            detour(1 if now else -1)

    def casts(self, op_name: str, t: Tensor) -> bool:
        """Whether an op named ``op_name`` with ``t`` among its inputs has them cast by the region in force."""
        region = self.active.get(t._device.type)
        return region is not None and region[1].get(op_name) not in (None, BANNED)


def _eligible(t, device_type: str) -> bool:
    """A floating tensor on the region's device type, float64 excepted (PyTorch's ``is_eligible``)."""
    return (isinstance(t, Tensor) and t._dtype.is_floating_point and t._dtype is not dt.float64
            and t._device.type == device_type)


_THREAD = threading.local()


def _caster() -> _Caster:
    caster = getattr(_THREAD, "caster", None)
    if caster is None:
        caster = _THREAD.caster = _Caster()
    return caster


def _check_device_type(fn: str, device_type) -> str:
    if not isinstance(device_type, str):
        raise TypeError(f"{fn}: expected device_type to be a string such as 'cpu' or 'cuda', got "
                        f"{type(device_type).__name__}")
    if device_type not in OP_LISTS:
        raise ValueError(f"{fn}: autocast has no op lists for device type {device_type!r}; expected one of "
                         f"{', '.join(repr(k) for k in OP_LISTS)} (a device type, without an index)")
    return device_type


class autocast:
    """Run the ops of a region in a lower floating dtype where that is safe, as PyTorch's ``torch.autocast``.

    ``device_type`` is ``"cpu"`` or ``"cuda"``: only ops on tensors of that device type are affected, each by
    that device type's lists (:mod:`ember.amp.lists`). ``dtype`` defaults to :func:`get_autocast_dtype` (an
    enclosing region's dtype, else bfloat16 on the CPU and float16 on CUDA). Mixed floating inputs of a
    ``promote`` op run in the widest of them (bfloat16 with float16 in float32, where PyTorch raises).
    ``enabled=False`` turns autocast off for the region (nested regions restore the outer state on exit).
    ``cache_enabled`` (default True) casts each float32 weight (a leaf that requires grad) once per outermost
    region and reuses the copy (cast again if the weight changes in place). Works as a context manager and as a
    decorator. Unlike PyTorch, which warns and turns autocast off, a dtype the device type does not support is
    an error.

    Run the backward pass outside the region: its ops then use the dtypes the forward chose, as in PyTorch.

    >>> import ember
    >>> w = ember.ones(4, 3, requires_grad=True)
    >>> @ember.autocast("cpu", dtype=ember.float16)
    ... def forward(x):
    ...     return ember.nn.functional.linear(x, w)
    >>> y = forward(ember.ones(2, 3))
    >>> y.dtype
    ember.float16
    >>> y.float().sum().backward()
    >>> w.grad.dtype
    ember.float32
    """

    def __init__(self, device_type: str, dtype: dt.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        self.device = _check_device_type("autocast", device_type)
        if dtype is None:  # as PyTorch: the thread's current autocast dtype (an enclosing region's), at construction
            dtype = get_autocast_dtype(device_type)
        if not isinstance(dtype, dt.dtype):
            raise TypeError(f"autocast: expected dtype to be an ember dtype such as ember.bfloat16, got {dtype!r}")
        if dtype.name not in SUPPORTED_DTYPES[device_type]:
            raise ValueError(f"autocast({device_type!r}) supports dtypes "
                             f"{', '.join('ember.' + n for n in SUPPORTED_DTYPES[device_type])}, got {dtype}")
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: expected enabled to be a bool, got {type(enabled).__name__}")
        self.fast_dtype = dtype
        self._enabled = enabled
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)

    def __enter__(self):
        caster = _caster()
        device = self.device
        self._prev = (caster.active.get(device), caster.dtypes.get(device), caster.cache_enabled)
        caster.dtypes[device] = self.fast_dtype
        caster.cache_enabled = self._cache_enabled
        if self._enabled:
            caster.active[device] = (self.fast_dtype, OP_LISTS[device])
        else:
            caster.active.pop(device, None)
        caster.nesting += 1
        caster.publish()
        return self

    def __exit__(self, *exc) -> bool:
        caster = _caster()
        device = self.device
        active, dtype, caster.cache_enabled = self._prev
        if active is None:
            caster.active.pop(device, None)
        else:
            caster.active[device] = active
        if dtype is None:
            caster.dtypes.pop(device, None)
        else:
            caster.dtypes[device] = dtype
        caster.nesting -= 1
        if caster.nesting == 0:  # leaving the outermost region: its cast copies must not outlive it
            caster.cache.clear()
        caster.publish()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)
        return wrapper


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether an autocast region for ``device_type`` is on in this thread (PyTorch's default type is cuda).

    >>> import ember
    >>> with ember.autocast("cpu"):
    ...     ember.is_autocast_enabled("cpu"), ember.is_autocast_enabled("cuda")
    (True, False)
    """
    return _check_device_type("is_autocast_enabled", device_type) in _caster().active


def get_autocast_dtype(device_type: str) -> dt.dtype:
    """The dtype autocast regions of ``device_type`` use in this thread (the innermost region's, else the default).

    >>> import ember
    >>> ember.get_autocast_dtype("cpu")
    ember.bfloat16
    """
    _check_device_type("get_autocast_dtype", device_type)
    dtype = _caster().dtypes.get(device_type)
    return dtype if dtype is not None else getattr(dt, DEFAULT_DTYPE[device_type])


def is_autocast_available(device_type: str) -> bool:
    """Whether ember has autocast op lists for ``device_type``.

    >>> import ember
    >>> ember.amp.is_autocast_available("cpu")
    True
    """
    return device_type in OP_LISTS


def autocast_inputs(name: str, *tensors) -> tuple:
    """``tensors`` cast as the autocast region in force casts the inputs of ``name`` (unchanged outside one).

    For functions made of several ops that PyTorch autocasts as one (``l1_loss``, ``margin_ranking_loss``, ...):
    their lists name the function, and the function passes its inputs through this first.
    """
    caster = STATE.autocast
    return tensors if caster is None else caster.cast_named(name, tensors, {})


def autocast_casts(op_name: str, t: Tensor) -> bool:
    """Whether the autocast region in force casts the inputs of op ``op_name`` on ``t``'s device type.

    For the dtype checks of public functions that run before their op (``mm``, ``linear``, ``conv2d``): under
    autocast they must let mixed dtypes through, since ``Op.apply`` casts them. Only called on a mismatch.
    """
    caster = STATE.autocast
    return caster is not None and caster.casts(op_name, t)
