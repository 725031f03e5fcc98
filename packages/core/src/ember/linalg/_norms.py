"""Norms: ``vector_norm``, ``matrix_norm``, ``norm`` (and the top-level ``ember.norm`` / ``Tensor.norm``)."""
from __future__ import annotations

import math

from ..autograd.function import Op
from ..ops._common import Tensor, tensor_method, wrap_dim
from ..ops.reduction import norm_dims
from ._checks import check_float, check_matrix, const
from ._decompositions import svdvals

__all__ = ["vector_norm", "matrix_norm", "norm"]

_INF = math.inf


class LinalgVectorNorm(Op):
    name_ = "linalgvectornorm"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, ord=2, dims=None, keepdim=False):  # noqa: A002 - PyTorch's name
        ctx.ord, ctx.dims, ctx.keepdim = ord, dims, keepdim
        return xp.asarray(xp.linalg.vector_norm(a, axis=dims, keepdims=keepdim, ord=ord))

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        p = ctx.ord
        if p == 0:
            return x * 0.0
        norm = _keep(ctx.saved_output, x, ctx)
        g = _keep(g, x, ctx)
        sign = const(x, x._device.backend.xp.sign(x._data))
        if p == 1:
            return g * sign
        if p == _INF or p == -_INF:  # split evenly between the entries that reach the max (min)
            hits = _data(x, lambda xp, a, n: xp.abs(a) == n, norm)
            return g * sign * hits / hits.sum(dim=ctx.dims, keepdim=True)
        at_zero = _data(x, lambda xp, a, n: n == 0, norm)
        norm = norm + at_zero  # a zero norm means x == 0 there, where the gradient is 0
        if p == 2:
            return g * x / norm
        x_zero = _data(x, lambda xp, a, n: a == 0, norm)
        return g * sign * (x * sign + x_zero) ** (p - 1) / norm ** (p - 1)


def _keep(t, x, ctx):
    """``t`` (reduced over ``ctx.dims``) reshaped so it broadcasts against ``x``."""
    if ctx.keepdim:
        return t
    shape = [1 if ctx.dims is None or i in ctx.dims else s for i, s in enumerate(x.shape)]
    return t.reshape(shape)


def _data(x, fn, norm):
    """A constant tensor in ``x``'s dtype from ``fn(xp, x_array, norm_array)`` (a boolean mask)."""
    xp = x._device.backend.xp
    return Tensor._make(xp.astype(fn(xp, x._data, norm._data), x._data.dtype), x._device)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002 - PyTorch's name
    """The vector ``ord``-norm over ``dim`` (all elements by default): ``sum(|x|**ord)**(1/ord)``.

    ``ord`` may be any real number or ``inf``/``-inf`` (max/min of ``|x|``); 0 counts the non-zeros.

    >>> import ember
    >>> ember.linalg.vector_norm(ember.tensor([3., -4.]))
    tensor(5.)
    >>> ember.linalg.vector_norm(ember.tensor([3., -4.]), ord=float("inf"))
    tensor(4.)
    """
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    if dtype is not None:
        x = x.to(dtype)
    check_float("linalg.vector_norm", x)
    dims = norm_dims(dim, x.ndim) if x.ndim else None
    return LinalgVectorNorm.apply(x, ord=ord, dims=dims, keepdim=keepdim)


_MATRIX_ORDS = ("fro", "nuc", _INF, -_INF, 1, -1, 2, -2)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002 - PyTorch's name
    """A matrix norm over the two dimensions ``dim``: 'fro', 'nuc', ``inf``/``-inf`` (max/min row sum of
    ``|A|``), 1/-1 (max/min column sum), 2/-2 (largest/smallest singular value).

    >>> import ember
    >>> A = ember.tensor([[1., -2.], [3., 4.]])
    >>> ember.linalg.matrix_norm(A, ord=1)
    tensor(6.)
    >>> ember.linalg.matrix_norm(A, ord=float("inf"))
    tensor(7.)
    """
    if dtype is not None:
        A = A.to(dtype)
    check_matrix("linalg.matrix_norm", A, square=False, reduced_ok=ord not in ("nuc", 2, -2))
    if not (isinstance(dim, (tuple, list)) and len(dim) == 2):
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    if ord not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    d0, d1 = wrap_dim(dim[0], A.ndim), wrap_dim(dim[1], A.ndim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        return vector_norm(A, 2, dim=(d0, d1), keepdim=keepdim)
    rest = [i for i in range(A.ndim) if i not in (d0, d1)]
    B = A.permute(*rest, d0, d1)
    if ord == "nuc":
        out = vector_norm(svdvals(B), 1, dim=-1)
    elif ord in (2, -2):
        out = vector_norm(svdvals(B), _INF if ord == 2 else -_INF, dim=-1)
    else:  # max/min over columns (1) or rows (inf) of the absolute sums along the other dimension
        sums = vector_norm(B, 1, dim=-2 if abs(ord) == 1 else -1)
        out = vector_norm(sums, _INF if ord > 0 else -_INF, dim=-1)
    if keepdim:
        shape = list(A.shape)
        shape[d0] = shape[d1] = 1
        out = out.reshape(shape)
    return out


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002 - PyTorch's name
    """A vector norm (``dim`` an int or 1-tuple, or a 1-D input) or a matrix norm (``dim`` a 2-tuple, or a
    2-D input with ``ord`` given). Without ``ord`` and ``dim`` it is the 2-norm of all elements.

    >>> import ember
    >>> ember.linalg.norm(ember.tensor([[1., 2.], [2., 4.]]))
    tensor(5.)
    >>> ember.linalg.norm(ember.tensor([[1., 2.], [2., 4.]]), ord="nuc")
    tensor(5.)
    """
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                       f"Got {A.ndim}D.")


@tensor_method("norm")
def tensor_norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """PyTorch's ``torch.norm``: a vector norm over ``dim`` (all elements by default) for a number or
    'fro' (the 2-norm), the nuclear norm for 'nuc'. Prefer :mod:`ember.linalg`'s norms in new code.

    >>> import ember
    >>> ember.tensor([[3., 4.], [0., 0.]]).norm(dim=1)
    tensor([5., 0.])
    """
    if p == "nuc":
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if p == "fro":
        p = 2
    return vector_norm(input, p, dim, keepdim, dtype=dtype)
