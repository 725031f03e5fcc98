"""Factorisations: ``cholesky``, ``qr``, ``eigh``/``eigvalsh``, ``svd``/``svdvals``, with gradients.

The backward formulas are those of the matrix-calculus literature (Murray
2016 for Cholesky; Walter & Lehmann for QR; Giles 2008 and Townsend 2016 for
the eigen- and singular-value decompositions), written with ember ops so that
they are themselves differentiable. Like PyTorch, the gradients of ``eigh``
and ``svd`` are only finite for distinct eigen/singular values, and are only
meaningful for functions that do not depend on the sign of the vectors.
"""
from __future__ import annotations

from ..autograd.function import Op
from ..return_types import linalg_eigh as EighResult
from ..return_types import linalg_qr as QRResult
from ..return_types import linalg_svd as SVDResult
from ._checks import BACKEND_ERRORS, LinAlgError, check_matrix, column_selector, diag_embed, eye_like, tril_mask
from ._inverse import solve

__all__ = ["cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals"]



def _sym(x):
    return (x + x.mT) * 0.5


# -- Cholesky -----------------------------------------------------------------------------------------------
class LinalgCholeskyEx(Op):
    name_ = "linalgcholeskyex"
    saves_output = True

    @staticmethod
    def forward(ctx, xp, a):
        try:
            return xp.linalg.cholesky(a)
        except BACKEND_ERRORS:
            raise LinAlgError("linalg.cholesky: The factorization could not be completed because the input is not "
                              "positive-definite.") from None

    @staticmethod
    def backward(ctx, g):
        L = ctx.saved_output
        n = L.shape[-1]
        phi = (L.mT @ (g * tril_mask(g, n))) * tril_mask(g, n, 0.5)
        Lt = L.mT
        return _sym(solve(Lt, solve(Lt, phi).mT).mT)


def cholesky(A, *, upper=False):
    """The Cholesky factor ``L`` (lower triangular, ``A = L @ L.mT``) of a symmetric positive-definite ``A``.

    Only the lower triangle of ``A`` is read. ``upper=True`` returns ``L.mT``.
    Raises :class:`ember.linalg.LinAlgError` when ``A`` is not positive-definite.

    >>> import ember
    >>> ember.linalg.cholesky(ember.tensor([[4., 2.], [2., 2.]]))
    tensor([[2., 0.],
            [1., 1.]])
    """
    check_matrix("linalg.cholesky", A, op="linalgcholeskyex")
    L = LinalgCholeskyEx.apply(A)
    return L.mT if upper else L


# -- QR -----------------------------------------------------------------------------------------------------
class LinalgQr(Op):
    name_ = "linalgqr"
    saves_inputs = True
    saves_output = True
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a, mode="reduced"):
        ctx.mode = mode
        q, r = xp.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
        if mode == "r":
            q = xp.zeros((0,), dtype=a.dtype)
        return q, r

    @staticmethod
    def backward(ctx, gQ, gR):
        a, = ctx.saved_tensors
        Q, R = ctx.saved_output
        m, n = a.shape[-2], a.shape[-1]
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                               "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if m >= n:
            return _qr_backward_tall(Q, R, gQ, gR)
        # A = [X | Y] with X square: X = Q U, Y = Q V (Walter & Lehmann)
        first, rest = column_selector(a, n, 0, m), column_selector(a, n, m, n)
        U, gU, gV, Y = R @ first, gR @ first, gR @ rest, a @ rest
        gX = _qr_backward_tall(Q, U, gQ + Y @ gV.mT, gU)
        return gX @ first.mT + (Q @ gV) @ rest.mT


def _qr_backward_tall(Q, R, gQ, gR):
    """gA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q, for m >= n."""
    M = R @ gR.mT - gQ.mT @ Q
    k = M.shape[-1]
    low = M * tril_mask(M, k, 0.5)
    b = gQ + Q @ (low + low.mT)
    return solve(R, b.mT).mT


def qr(A, mode="reduced"):
    """``(Q, R)`` with ``A = Q @ R``, ``Q`` orthonormal columns and ``R`` upper triangular.

    ``mode``: 'reduced' (``Q`` is m x k), 'complete' (``Q`` is m x m) or 'r'
    (``R`` only; ``Q`` is empty and the result is not differentiable).

    >>> import ember
    >>> Q, R = ember.linalg.qr(ember.tensor([[3., 1.], [4., 2.]]))
    >>> (Q @ R).round(decimals=4)
    tensor([[3., 1.],
            [4., 2.]])
    """
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    check_matrix("linalg.qr", A, square=False, op="linalgqr")
    return QRResult(*LinalgQr.apply(A, mode=mode))


# -- symmetric eigendecomposition ---------------------------------------------------------------------------
class LinalgEigh(Op):
    name_ = "linalgeigh"
    saves_output = True
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a, upper=False):
        return xp.linalg.eigh(xp.matrix_transpose(a) if upper else a)

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_output
        n = L.shape[-1]
        eye = eye_like(L, n)
        # F[i, j] = 1 / (L[j] - L[i]) off the diagonal, 0 on it
        gaps = L.reshape(*L.shape[:-1], 1, n) - L.reshape(*L.shape, 1) + eye
        inner = diag_embed(gL) + (V.mT @ gV) * (1 - eye) / gaps
        return _sym(V @ inner @ V.mT)


def eigh(A, UPLO="L"):
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of a symmetric matrix.

    Only the lower (``UPLO='L'``) or upper (``'U'``) triangle of ``A`` is read.

    >>> import ember
    >>> ember.linalg.eigh(ember.tensor([[2., 0.], [0., 1.]])).eigenvalues
    tensor([1., 2.])
    """
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    check_matrix("linalg.eigh", A, op="linalgeigh")
    return EighResult(*LinalgEigh.apply(A, upper=UPLO == "U"))


def eigvalsh(A, UPLO="L"):
    """The eigenvalues (ascending) of a symmetric matrix.

    >>> import ember
    >>> ember.linalg.eigvalsh(ember.tensor([[2., 1.], [1., 2.]]))
    tensor([1., 3.])
    """
    return eigh(A, UPLO).eigenvalues


# -- singular value decomposition ---------------------------------------------------------------------------
class LinalgSvd(Op):
    name_ = "linalgsvd"
    saves_output = True
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a, full_matrices=True):
        ctx.full = full_matrices
        return xp.linalg.svd(a, full_matrices=full_matrices)

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_output
        m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
        if ctx.full and m != n:  # only the first k singular vectors matter
            cols, rows = column_selector(U, m, 0, k), column_selector(U, n, 0, k)
            U, gU, Vh, gVh = U @ cols, gU @ cols, rows.mT @ Vh, rows.mT @ gVh
        V, gV = Vh.mT, gVh.mT
        eye = eye_like(S, k)
        s_row, s_col = S.reshape(*S.shape[:-1], 1, k), S.reshape(*S.shape, 1)
        E = s_row * s_row - s_col * s_col + eye  # E[i, j] = S[j]^2 - S[i]^2 off the diagonal
        UtgU, VtgV = U.mT @ gU, V.mT @ gV
        inner = ((UtgU - UtgU.mT) / E) * s_row + s_col * ((VtgV - VtgV.mT) / E) + diag_embed(gS)
        gA = U @ inner @ Vh
        if m > k:
            gA = gA + ((gU - U @ UtgU) / s_row) @ Vh
        if n > k:
            gA = gA + U @ ((gV - V @ VtgV) / s_row).mT
        return gA


def svd(A, full_matrices=True):
    """``(U, S, Vh)`` with ``A = U @ diag(S) @ Vh``, singular values ``S`` in descending order.

    With ``full_matrices=False`` (the one to differentiate through) ``U`` is
    m x k and ``Vh`` is k x n for ``k = min(m, n)``.

    >>> import ember
    >>> ember.linalg.svd(ember.tensor([[3., 0.], [0., -4.]])).S
    tensor([4., 3.])
    """
    check_matrix("linalg.svd", A, square=False, op="linalgsvd")
    return SVDResult(*LinalgSvd.apply(A, full_matrices=full_matrices))


def svdvals(A):
    """The singular values of ``A``, in descending order.

    >>> import ember
    >>> ember.linalg.svdvals(ember.tensor([[0., 2.], [1., 0.]]))
    tensor([2., 1.])
    """
    check_matrix("linalg.svdvals", A, square=False, op="linalgsvd")
    return LinalgSvd.apply(A, full_matrices=False)[1]


