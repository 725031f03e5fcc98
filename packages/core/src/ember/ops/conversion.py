"""Moving and casting: ``Tensor.to``, ``cpu``, ``pin_memory``, ``type``, ``float``/``double``/... ; all differentiable.

>>> import ember
>>> ember.tensor([1, 2]).to(ember.float64)
tensor([1., 2.], dtype=ember.float64)
"""
from __future__ import annotations

from .. import _dtype as dt
from .._device import as_device
from .._device import device as Device
from ..autograd.function import Op
from ..backends.backend import on_device
from ..memory import pinning_backend
from ._common import Tensor, tensor_method

__all__ = ["move_array"]


def move_array(data, src, dst, non_blocking: bool = False):
    """``data`` (an array on device ``src``) as an array on ``dst``; never shares memory across devices.

    ``non_blocking``: a copy from the host may be queued on the device's current stream (the CUDA backend's
    ``copy_from_host``), truly asynchronous when ``data`` is in pinned memory."""
    if src.key == dst.key:
        return data
    sb, db = src.backend, dst.backend
    db.check_device(dst)
    if sb is db:
        return sb.copy_to(data, src, dst)
    to_device = getattr(db, "copy_from_host", None)  # a backend that always copies: no host copy first
    if to_device is not None and src.type == "cpu":
        return to_device(data, dst, non_blocking)
    to_host = getattr(sb, "copy_to_host", None)
    host = to_host(data) if to_host is not None else sb.to_numpy(data).copy()
    return db.from_numpy(host, dst)


class ToCopy(Op):
    name_ = "to"
    moves_device = True

    @staticmethod
    def forward(ctx, xp, a, dtype=None, device=None, src=None, non_blocking=False):
        ctx.src, ctx.src_dtype = src, src.backend.from_native[a.dtype]
        out = a
        if device is not None and device.key != src.key:
            out = move_array(out, src, device, non_blocking)
            xp = device.backend.xp
        if dtype is not None:
            with on_device(device or src):
                out = xp.astype(out, device.backend.native_dtype(dtype) if device is not None
                                else src.backend.native_dtype(dtype))
        ctx.out_device = device or src
        return out

    @staticmethod
    def backward(ctx, g):
        return g.to(device=ctx.src, dtype=ctx.src_dtype)


def _parse_to(args, kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    for a in args:
        if isinstance(a, dt.dtype):
            dtype = a
        elif isinstance(a, (str, Device)):
            device = a
        elif isinstance(a, Tensor):
            dtype, device = a._dtype, a._device
        else:
            raise TypeError(f"to() received an invalid argument {a!r}: expected a dtype, a device or a tensor")
    non_blocking = bool(kwargs.pop("non_blocking", False))
    copy = kwargs.pop("copy", False)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    return dtype, (None if device is None else as_device(device)), copy, non_blocking


@tensor_method()
def to(self, *args, **kwargs):
    """Cast and/or move: ``x.to(ember.float64)``, ``x.to('cpu:1')``, ``x.to(other)``, ``x.to(device, dtype)``.

    Returns ``self`` when nothing changes (unless ``copy=True``). The move is
    differentiable: the gradient flows back to the source device. ``non_blocking=True`` on a pinned tensor
    (:meth:`pin_memory`) queues its copy to a CUDA device on the current stream and returns at once; other
    copies (from pageable memory, to the CPU) wait, as PyTorch's do.
    """
    dtype, device, copy, non_blocking = _parse_to(args, dict(kwargs))
    if dtype is self._dtype:
        dtype = None
    if device is not None and device.key == self._device.key:
        device = None  # 'cpu' and 'cpu:0' are the same memory
    if dtype is None and device is None:
        return self.clone() if copy else self
    if non_blocking and device is not None and self.is_pinned():  # from pageable memory a copy always waits
        return ToCopy.apply(self, dtype=dtype, device=device, src=self._device, non_blocking=True)
    return ToCopy.apply(self, dtype=dtype, device=device, src=self._device)


@tensor_method()
def cpu(self):
    """This tensor on the CPU (``self`` if it already is)."""
    return self if self._device.type == "cpu" else self.to("cpu")


@tensor_method()
def cuda(self, device=None, non_blocking=False):
    """This tensor on a CUDA device (needs the ``cuda`` backend: ``pip install ember-core[cuda12]``)."""
    dev = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device)
    return self.to(dev, non_blocking=non_blocking)


class PinMemory(Op):
    """A copy of a CPU array into the page-locked host memory of ``backend``; the gradient passes through."""

    name_ = "pinmemory"

    @staticmethod
    def forward(ctx, xp, a, backend=None):
        return backend.pin_memory(a)

    @staticmethod
    def backward(ctx, g):
        return g


@tensor_method()
def pin_memory(self):
    """A copy of this CPU tensor in pinned (page-locked) host memory, or ``self`` if it is pinned already.

    Pinned memory belongs to an accelerator backend (CUDA's, through CuPy). On a
    machine without one (``ember.memory.can_pin_memory()`` is False) there is
    nothing to pin into, and ember returns ``self`` unpinned where PyTorch would
    raise: code written for a GPU machine (``DataLoader(pin_memory=True)``) then
    runs unchanged on a CPU-only one. Only CPU tensors can be pinned.

    >>> import ember
    >>> x = ember.ones(3)
    >>> y = x.pin_memory()
    >>> ember.equal(x, y) and y.is_pinned() == ember.memory.can_pin_memory()
    True
    """
    if self._device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' on device '{self._device}': only CPU tensors can be "
                           "pinned (pinned memory is host memory that an accelerator copies from)")
    if self.is_pinned():
        return self
    backend = pinning_backend()
    if backend is None:
        return self
    out = PinMemory.apply(self, backend=backend)
    out._pinned = True
    return out


def _caster(d):
    def cast(self, memory_format=None):
        return self.to(d)
    cast.__doc__ = f"``self.to({d!r})``"
    return cast


for _name, _d in (("float", dt.float32), ("double", dt.float64), ("half", dt.float16),
                  ("bfloat16", dt.bfloat16), ("int", dt.int32), ("long", dt.int64), ("short", dt.int16),
                  ("char", dt.int8), ("byte", dt.uint8), ("bool", dt.bool_)):
    setattr(Tensor, _name, _caster(_d))


@tensor_method("type")
def type_(self, dtype=None):
    """Without arguments, the type name (``'ember.FloatTensor'``); with a dtype, a cast."""
    if dtype is None:
        return f"ember.{self._dtype.scalar_type_name}Tensor"
    return self.to(dtype)


@tensor_method()
def type_as(self, other):
    return self.to(other._dtype)
