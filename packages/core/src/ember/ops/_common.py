"""What op modules share: attaching methods to Tensor, dtype promotion, ``sum_to``, ``cast_scalar``."""
from __future__ import annotations

from .. import _dtype as dt
from .._overflow import check_scalar, wrap_unsigned
from .._tensor import Tensor, _wrap_dim
from ..autograd.function import Op

__all__ = ["tensor_method", "promote", "sum_to", "cast_scalar", "wrap_dim", "Tensor"]

wrap_dim = _wrap_dim


def tensor_method(*names):
    """Also make the decorated function a ``Tensor`` method (under its own name, or ``names``)."""
    def deco(fn):
        for name in names or (fn.__name__,):
            setattr(Tensor, name, fn)
        return fn
    return deco


_INT_RANGES = {d: (-(1 << (8 * d.itemsize - 1)) if d.is_signed else 0, 1 << (8 * d.itemsize))
               for d in (dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64)}


def array_op(name: str, op_name: str, xp_function: str):
    """A non-differentiable op class ``name`` (op name ``op_name``) whose forward is ``xp.<xp_function>(*arrays)``.

    For the tables of comparisons and bit operations, where each op is just a
    call into the array namespace.
    """
    def forward(ctx, xp, *arrays):
        return getattr(xp, xp_function)(*arrays)
    return type(name, (Op,), {"name_": op_name, "forward": staticmethod(forward), "__doc__": f"``xp.{xp_function}``"})


def promote(a, b):
    """``a`` and ``b`` (tensors or Python scalars) brought to their PyTorch result dtype.

    Tensors are cast (a differentiable op); Python scalars are left for the
    backend, which keeps the array's dtype for them.
    """
    ta, tb = type(a) is Tensor or isinstance(a, Tensor), type(b) is Tensor or isinstance(b, Tensor)
    if ta and tb:
        if a._dtype is b._dtype:
            return a, b
        want = dt.result_type(a, b)
        return (a if a._dtype is want else a.to(want)), (b if b._dtype is want else b.to(want))
    t, s = (a, b) if ta else (b, a)
    if not (ta or tb):
        raise TypeError(f"expected at least one Tensor, got {type(a).__name__} and {type(b).__name__}")
    if not isinstance(s, (int, float, bool)):
        raise TypeError(f"expected a Tensor or a Python number, got {type(s).__name__}")
    cat = t._dtype.category
    if (isinstance(s, float) and cat != dt.FLOATING) or \
            (isinstance(s, int) and not isinstance(s, bool) and cat == dt.BOOL):
        t = t.to(dt.result_type(t, s))
    if t._dtype.is_floating_point:
        s = float(s)
    elif t._dtype is not dt.bool_:
        s = int(s)
        low, span = _INT_RANGES[t._dtype]
        if not low <= s < low + span:
            s = (s - low) % span + low  # wraps around, as the C integer arithmetic PyTorch does
    return (t, s) if ta else (s, t)


def sum_to(g, shape, xp=None):
    """Sum ``g`` down to ``shape`` (undo broadcasting): a tensor with tensor ops, so it is differentiable, or
    with ``xp`` given, an array of that namespace (for ``Op.backward_arrays``)."""
    gshape = g.shape
    if tuple(gshape) == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1)
    if xp is not None:
        if dims:
            g = xp.sum(g, axis=dims, keepdims=True)
        return xp.reshape(g, shape) if lead else g
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    if lead:
        g = g.reshape(shape)
    return g


def cast_scalar(value, like):
    """The Python number ``value`` as the element type of tensor ``like``, as PyTorch's ``fill_`` casts it:
    floats are truncated toward zero for integer dtypes, and a value out of the dtype's range raises."""
    check_scalar(value, like._dtype)
    cat = like._dtype.category
    if cat == dt.FLOATING:
        return float(value)
    if cat == dt.BOOL:
        return bool(value)
    return wrap_unsigned(int(value), like._dtype)
