"""``inv``, ``det``, ``slogdet`` and ``solve`` (with the top-level ``inverse``, ``det``, ``slogdet``)."""
from __future__ import annotations

from ..autograd.function import Op
from ..ops._common import Tensor, sum_to, tensor_method
from ..ops.matmul import broadcast_batch
from ..return_types import linalg_slogdet as SlogdetResult
from ._checks import BACKEND_ERRORS, LinAlgError, check_matrix

__all__ = ["inv", "det", "slogdet", "solve"]



class LinalgInvEx(Op):
    name_ = "linalginvex"
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a):
        try:
            return xp.linalg.inv(a)
        except BACKEND_ERRORS:
            raise LinAlgError("linalg.inv: The inversion could not be completed because the input matrix is "
                              "singular.") from None

    @staticmethod
    def backward(ctx, g):
        yt = ctx.saved_output.mT
        return -(yt @ g @ yt)


class LinalgDet(Op):
    name_ = "linalgdet"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a):
        return xp.asarray(xp.linalg.det(a))

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        d = ctx.saved_output
        return (g * d).reshape(*d.shape, 1, 1) * inv(a).mT


class LinalgSlogdet(Op):
    name_ = "linalgslogdet"
    saves_inputs = True
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a):
        sign, logabsdet = xp.linalg.slogdet(a)
        return xp.asarray(sign), xp.asarray(logabsdet)

    @staticmethod
    def backward(ctx, g_sign, g_logabsdet):
        a, = ctx.saved_tensors
        return g_logabsdet.reshape(*g_logabsdet.shape, 1, 1) * inv(a).mT


class LinalgSolveEx(Op):
    name_ = "linalgsolveex"
    saves_inputs = True
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a, b):
        try:
            return xp.linalg.solve(a, b)
        except BACKEND_ERRORS:
            raise LinAlgError("ember.linalg.solve: The solver failed because the input matrix is singular."
                              ) from None

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        gb = LinalgSolveEx.apply(a.mT, g)
        ga = sum_to(-(gb @ ctx.saved_output.mT), a.shape) if ctx.needs_input_grad[0] else None
        return ga, (sum_to(gb, b.shape) if ctx.needs_input_grad[1] else None)


@tensor_method("inverse")
def inv(A):
    """The inverse of a square matrix (or of each matrix in a batch).

    Raises :class:`ember.linalg.LinAlgError` for a singular matrix.

    >>> import ember
    >>> ember.linalg.inv(ember.tensor([[2., 0.], [0., 4.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    check_matrix("linalg.inv", A, op="linalginvex")
    return LinalgInvEx.apply(A)


@tensor_method()
def det(A):
    """The determinant of a square matrix (or of each matrix in a batch).

    The gradient uses ``inv(A)``, so it needs an invertible ``A``.

    >>> import ember
    >>> ember.linalg.det(ember.tensor([[1., 2.], [3., 4.]]))
    tensor(-2.)
    """
    check_matrix("linalg.det", A)
    return LinalgDet.apply(A)


@tensor_method()
def slogdet(A):
    """``(sign, logabsdet)`` of the determinant, accurate where ``det`` would under- or overflow.

    >>> import ember
    >>> ember.linalg.slogdet(ember.tensor([[-2., 0.], [0., 1.]])).sign
    tensor(-1.)
    """
    check_matrix("linalg.slogdet", A)
    return SlogdetResult(*LinalgSlogdet.apply(A))


def solve(A, B, *, left=True):
    """The solution ``X`` of ``A @ X = B`` (or ``X @ A = B`` with ``left=False``); batch dims broadcast.

    ``B`` is a vector (or a batch of vectors) when it is 1-D or has the shape ``A.shape[:-1]``.
    Raises :class:`ember.linalg.LinAlgError` for a singular ``A``.

    >>> import ember
    >>> ember.linalg.solve(ember.tensor([[2., 0.], [0., 4.]]), ember.tensor([2., 2.]))
    tensor([1.0000, 0.5000])
    """
    check_matrix("linalg.solve", A, op="linalgsolveex")
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.solve(): argument 'B' must be Tensor, not {type(B).__name__}")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype} and B of type {B.dtype} instead")
    vector = B.ndim == 1 or (left and B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        B2 = B.reshape(*B.shape, 1) if left else B.reshape(*B.shape[:-1], 1, B.shape[-1])
    else:
        B2 = B
    n = A.shape[-1]
    if B2.shape[-2 if left else -1] != n:
        shown = "x".join(str(s) for s in (B.shape if B.ndim > 1 else (B.shape[0], 1))[-2:])
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {shown})")
    broadcast_batch(A.shape[:-2], B2.shape[:-2])
    X = LinalgSolveEx.apply(A, B2) if left else LinalgSolveEx.apply(A.mT, B2.mT).mT
    return X.reshape(X.shape[:-1] if left else X.shape[:-2] + X.shape[-1:]) if vector else X
