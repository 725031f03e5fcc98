"""Array-level scatter kernels shared by indexing ops (not public).

NumPy has unbuffered ``ufunc.at``; backends whose namespace lacks it get an
array-API fallback (a one-hot matrix product, exact but O(rows x indices)).
Where an index repeats, an overwriting scatter keeps the last value on NumPy
and the mean of the values on the fallback (so one value written twice stays
exact); PyTorch leaves which value wins undefined too.
"""
from __future__ import annotations

from .._plugins import backends
from ..errors import UnsupportedOpError


def _at(xp, ufunc_name):
    return getattr(getattr(xp, ufunc_name, None), "at", None)


def _backend_name(xp):
    """The name of the registered backend whose array namespace is ``xp`` (for error messages)."""
    return next((name for name, (backend, _) in backends().items() if backend.xp is xp), getattr(xp, "__name__", xp))


def _onehot(xp, n, idx, dtype):
    rows = xp.reshape(xp.arange(n, dtype=idx.dtype), (-1, 1))
    return xp.astype(rows == xp.reshape(idx, (1, -1)), dtype)


def _rows_matmul(xp, onehot, src):
    flat = xp.reshape(src, (src.shape[0], -1))
    dtype = flat.dtype
    if xp.isdtype(dtype, "bool"):
        return xp.matmul(xp.astype(onehot, xp.int64), xp.astype(flat, xp.int64)) > 0
    return xp.matmul(onehot, flat)


def add_rows(xp, base, idx, src):
    """A copy of ``base`` with the rows of ``src`` added at rows ``idx`` (a 1-D int array)."""
    at = _at(xp, "add")
    if at is not None:
        out = xp.asarray(base, copy=True)
        at(out, idx, src)
        return out
    if src.shape[0] == 0:
        return xp.asarray(base, copy=True)
    hot = _onehot(xp, base.shape[0], idx, base.dtype if not xp.isdtype(base.dtype, "bool") else xp.int64)
    added = xp.reshape(_rows_matmul(xp, hot, src), base.shape)
    return xp.logical_or(base, added) if xp.isdtype(base.dtype, "bool") else base + added


def put_rows(xp, base, idx, src):
    """A copy of ``base`` with rows ``idx`` replaced by the rows of ``src``."""
    if _at(xp, "add") is not None:
        out = xp.asarray(base, copy=True)
        out[idx] = src
        return out
    if src.shape[0] == 0:
        return xp.asarray(base, copy=True)
    n = base.shape[0]
    counts = xp.reshape(xp.sum(_onehot(xp, n, idx, xp.int64), axis=1), (n,) + (1,) * (base.ndim - 1))
    if xp.isdtype(base.dtype, "bool"):
        values = xp.reshape(_rows_matmul(xp, _onehot(xp, n, idx, xp.int64), src), base.shape)
    else:
        # the mean of the values written to one place: exact when they agree (as scattering one value does)
        summed = xp.reshape(_rows_matmul(xp, _onehot(xp, n, idx, src.dtype), src), base.shape)
        safe = xp.astype(xp.maximum(counts, 1), base.dtype)
        values = summed / safe if xp.isdtype(base.dtype, "real floating") else summed // safe
    return xp.where(counts > 0, values, base)


def mul_rows(xp, base, idx, src, op_name="scatter"):
    """A copy of ``base`` with rows ``idx`` multiplied by the rows of ``src`` (NumPy-like backends only)."""
    at = _at(xp, "multiply")
    unsupported = UnsupportedOpError(f"op {op_name!r} with reduce='multiply' is not supported by backend "
                                     f"{_backend_name(xp)!r} (its array namespace has no multiply.at)")
    if at is None:
        raise unsupported
    out = xp.asarray(base, copy=True)
    try:
        at(out, idx, src)
    except NotImplementedError:  # CuPy's ufunc.at serves add, subtract, maximum and minimum only
        raise unsupported from None
    return out


def along_dim_index(xp, index, dim, shape):
    """Flat positions, in a row-major array of ``shape``, of ``index`` read as indices along ``dim``."""
    nd = len(shape)
    strides = [1] * nd
    for d in range(nd - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    flat = index * strides[dim]
    for d in range(nd):
        if d != dim and index.shape[d] > 1:
            pos = xp.reshape(xp.arange(index.shape[d], dtype=index.dtype), (1,) * d + (-1,) + (1,) * (nd - d - 1))
            flat = flat + pos * strides[d]
    return xp.reshape(xp.broadcast_to(flat, index.shape), (-1,))
