"""What the linalg modules share: input checks with PyTorch's messages, ``LinAlgError``, and constant
matrices (identity, triangular masks) used by the backward formulas."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..amp.autocast_mode import autocast_casts
from ..ops.creation import tensor


class LinAlgError(RuntimeError):
    """A matrix had no factorisation or inverse (singular, or not positive-definite)."""


#: what the NumPy-based backends raise for a singular / non-positive-definite matrix
BACKEND_ERRORS = (np.linalg.LinAlgError,)


def check_matrix(fn, A, square=True, reduced_ok=False, op=None):
    """``A`` must be a floating tensor of (batches of) matrices, square unless ``square`` is False, and not
    float16/bfloat16 unless ``reduced_ok`` (PyTorch's CPU has no decompositions in those dtypes) or an autocast
    region casts the inputs of ``op`` (the op's name) to float32."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{fn}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    check_float(fn, A)
    if not reduced_ok and not (op is not None and autocast_casts(op, A)):
        check_not_reduced(fn, A)
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def check_float(fn, A):
    if not A._dtype.is_floating_point:
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. "
                           f"Got {A._dtype.scalar_type_name}")


def check_not_reduced(fn, A):
    if A._dtype.is_reduced_float:
        raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got {A._dtype.scalar_type_name}; "
                           "convert to float32 first (A.float())")


def const(like, array):
    """A constant tensor (no gradient) on ``like``'s device from a NumPy array, in ``like``'s dtype."""
    return tensor(array, dtype=like.dtype, device=like.device)


def eye_like(like, n):
    return const(like, np.eye(n))


def tril_mask(like, n, diagonal_value=1.0):
    """Lower-triangular ones (diagonal set to ``diagonal_value``) as a constant ``n x n`` tensor."""
    mask = np.tril(np.ones((n, n)))
    np.fill_diagonal(mask, diagonal_value)
    return const(like, mask)


def diag_embed(v):
    """Batches of diagonal matrices with ``v`` (``(..., n)``) on the diagonal; differentiable in ``v``."""
    n = v.shape[-1]
    return v.reshape(*v.shape[:-1], 1, n) * eye_like(v, n)


def column_selector(like, n, start, stop):
    """The ``n x (stop - start)`` constant ``E`` with ``A @ E == A[..., start:stop]`` (a differentiable slice)."""
    return const(like, np.eye(n)[:, start:stop])
