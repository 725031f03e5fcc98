"""ember.linalg: values vs NumPy, gradients (batched too, double backward where cheap), errors."""
import math

import numpy as np
import pytest

import ember
from ember import linalg as LA
from tests.core.helpers import check_grads, rand64


def spd(x):
    """A well-conditioned symmetric positive-definite matrix built from ``x`` (differentiably)."""
    n = x.shape[-1]
    return x @ x.mT + n * ember.eye(n, dtype=x.dtype, device=x.device)


def well_conditioned(*shape, device, seed=0):
    n = shape[-1]
    base = rand64(*shape, device=device, seed=seed, requires_grad=False).numpy(force=True) + n * np.eye(n)
    return ember.tensor(base, device=device, requires_grad=True)


def np_of(t):
    return t.detach().numpy(force=True)


# -- inverse, determinants, solve --------------------------------------------------------------------------
def test_inv_det_slogdet_values_and_names(device):
    A = well_conditioned(2, 3, 3, device=device)
    np.testing.assert_allclose(np_of(LA.inv(A)), np.linalg.inv(np_of(A)))
    np.testing.assert_allclose(np_of(LA.det(A)), np.linalg.det(np_of(A)))
    sign, logabsdet = LA.slogdet(A)
    ns, nl = np.linalg.slogdet(np_of(A))
    np.testing.assert_allclose(np_of(sign), ns)
    np.testing.assert_allclose(np_of(logabsdet), nl)
    assert LA.inv(A).grad_fn.name() == "LinalgInvExBackward0"
    assert LA.det(A).grad_fn.name() == "LinalgDetBackward0"
    assert logabsdet.grad_fn.name() == "LinalgSlogdetBackward0"
    np.testing.assert_allclose(np_of(ember.inverse(A)), np_of(A.inverse()))
    np.testing.assert_allclose(np_of(ember.det(A)), np_of(A.det()))


def test_inv_det_slogdet_gradients(device):
    A = rand64(2, 3, 3, device=device)
    check_grads(LA.inv, A, gradgrad=True)
    check_grads(LA.det, A, gradgrad=True)
    check_grads(lambda a: LA.slogdet(a).logabsdet, A)


def test_solve_values_shapes_and_gradients(device):
    A = well_conditioned(2, 3, 3, device=device)
    B = rand64(3, 2, device=device, seed=1)
    X = LA.solve(A, B)
    assert X.grad_fn.name() == "LinalgSolveExBackward0"
    np.testing.assert_allclose(np_of(A @ X), np.broadcast_to(np_of(B), (2, 3, 2)), atol=1e-12)
    check_grads(LA.solve, A, B, gradgrad=True)
    v = rand64(3, device=device, seed=2)
    assert tuple(LA.solve(A, v).shape) == (2, 3)
    check_grads(LA.solve, A, v)
    batch_v = rand64(2, 3, device=device, seed=3)
    assert tuple(LA.solve(A, batch_v).shape) == (2, 3)
    Xr = LA.solve(A, rand64(4, 3, device=device, seed=4), left=False)
    np.testing.assert_allclose(np_of(Xr @ A), np.broadcast_to(np_of(rand64(4, 3, device=device, seed=4)), (2, 4, 3)),
                               atol=1e-12)
    check_grads(lambda a, b: LA.solve(a, b, left=False), A, rand64(4, 3, device=device, seed=4))


# -- factorisations ----------------------------------------------------------------------------------------
def test_cholesky(device):
    x = rand64(2, 3, 3, device=device)
    L = LA.cholesky(spd(x))
    assert L.grad_fn.name() == "LinalgCholeskyExBackward0"
    np.testing.assert_allclose(np_of(L), np.linalg.cholesky(np_of(spd(x))))
    np.testing.assert_allclose(np_of(LA.cholesky(spd(x), upper=True)), np.swapaxes(np_of(L), -1, -2))
    check_grads(lambda t: LA.cholesky(spd(t)), x, gradgrad=True)
    check_grads(lambda t: LA.cholesky(spd(t), upper=True), x)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4), (2, 4, 3)])
def test_qr(device, shape):
    A = rand64(*shape, device=device)
    Q, R = LA.qr(A)
    assert Q.grad_fn.name() == "LinalgQrBackward0"
    np.testing.assert_allclose(np_of(Q @ R), np_of(A), atol=1e-12)
    nq, nr = np.linalg.qr(np_of(A))
    np.testing.assert_allclose(np_of(R), nr, atol=1e-12)
    check_grads(lambda a: tuple(LA.qr(a)), A)


def test_qr_modes(device):
    A = rand64(4, 3, device=device)
    Q, R = LA.qr(A, mode="complete")
    assert tuple(Q.shape) == (4, 4) and tuple(R.shape) == (4, 3)
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > ncols"):
        Q.sum().backward()
    Q, R = LA.qr(A, mode="r")
    assert Q.numel() == 0
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        R.sum().backward()
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'bad'"):
        LA.qr(A, mode="bad")


def test_eigh(device):
    x = rand64(2, 3, 3, device=device)
    sym = x + x.mT
    w, V = LA.eigh(sym)
    assert w.grad_fn.name() == "LinalgEighBackward0"
    np.testing.assert_allclose(np_of(w), np.linalg.eigvalsh(np_of(sym)), atol=1e-12)
    np.testing.assert_allclose(np_of(V @ (w.reshape(2, 1, 3) * V).mT), np_of(sym), atol=1e-12)
    np.testing.assert_allclose(np_of(LA.eigvalsh(sym)), np_of(w))
    # only one triangle is read
    lower = np.tril(np_of(sym))
    np.testing.assert_allclose(np_of(LA.eigvalsh(ember.tensor(lower, device=device))), np_of(w), atol=1e-12)
    upper = ember.tensor(np.swapaxes(lower, -1, -2).copy(), device=device)
    np.testing.assert_allclose(np_of(LA.eigvalsh(upper, UPLO="U")), np_of(w), atol=1e-12)
    check_grads(lambda t: tuple(LA.eigh(t + t.mT)), x)
    check_grads(lambda t: LA.eigvalsh(t + t.mT), x, gradgrad=True)
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        LA.eigh(sym, UPLO="X")


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 3, 5)])
def test_svd(device, shape):
    A = rand64(*shape, device=device)
    U, S, Vh = LA.svd(A, full_matrices=False)
    assert S.grad_fn.name() == "LinalgSvdBackward0"
    np.testing.assert_allclose(np_of((U * S.reshape(*S.shape[:-1], 1, S.shape[-1])) @ Vh), np_of(A), atol=1e-12)
    np.testing.assert_allclose(np_of(LA.svdvals(A)), np.linalg.svd(np_of(A), compute_uv=False))
    # gauge-invariant functions of the singular vectors (their signs are arbitrary)
    check_grads(lambda a: (lambda u, s, vh: (u @ vh, s, u * u, vh * vh))(*LA.svd(a, full_matrices=False)), A)
    check_grads(LA.svdvals, A)


def test_svd_full_matrices(device):
    A = rand64(4, 3, device=device)
    U, S, Vh = LA.svd(A)
    assert tuple(U.shape) == (4, 4) and tuple(Vh.shape) == (3, 3)
    first3 = ember.eye(4, 3, dtype=ember.float64, device=device)  # the columns of U that A determines

    def invariant(a):
        u, s, vh = LA.svd(a)
        u3 = u @ first3
        return s, u3 * u3, vh * vh, u3 @ vh
    check_grads(invariant, A)


# -- norms -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, math.inf, -math.inf, 0, -1.5])
def test_vector_norm(device, ord):
    x = rand64(3, 4, device=device)
    for dim, keepdim in ((None, False), (1, False), ((0, 1), True), (0, True)):
        out = LA.vector_norm(x, ord, dim=dim, keepdim=keepdim)
        expect = np.linalg.vector_norm(np_of(x), ord=ord, axis=dim, keepdims=keepdim)
        np.testing.assert_allclose(np_of(out), expect)
        assert out.grad_fn.name() == "LinalgVectorNormBackward0"
    check_grads(lambda t: LA.vector_norm(t, ord, dim=1), x)
    check_grads(lambda t: LA.vector_norm(t, ord, dim=0, keepdim=True), x)


def test_vector_norm_gradient_special_points(device):
    x = ember.tensor([1., -3., 3., 2.], dtype=ember.float64, device=device, requires_grad=True)
    LA.vector_norm(x, math.inf).backward()
    assert x.grad.tolist() == [0.0, -0.5, 0.5, 0.0]  # split between the tied maxima
    z = ember.zeros(3, dtype=ember.float64, device=device, requires_grad=True)
    LA.vector_norm(z).backward()
    assert z.grad.tolist() == [0.0, 0.0, 0.0]
    y = ember.tensor([1., 0., 4.], dtype=ember.float64, device=device, requires_grad=True)
    LA.vector_norm(y, 0.5).backward()
    assert y.grad.tolist()[1] == 0.0 and math.isfinite(y.grad.tolist()[0])
    check_grads(lambda t: LA.vector_norm(t, 3, dim=1), rand64(2, 3, device=device), gradgrad=True)


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_matrix_norm(device, ord):
    A = rand64(2, 3, 4, device=device)
    np.testing.assert_allclose(np_of(LA.matrix_norm(A, ord)), np.linalg.matrix_norm(np_of(A), ord=ord))
    np.testing.assert_allclose(np_of(LA.matrix_norm(A, ord, dim=(0, 2), keepdim=True)),
                               np.linalg.norm(np_of(A), ord=ord, axis=(0, 2), keepdims=True))
    check_grads(lambda t: LA.matrix_norm(t, ord), A)


def test_norm_dispatch(device):
    A = rand64(3, 4, device=device)
    nA = np_of(A)
    np.testing.assert_allclose(np_of(LA.norm(A)), np.linalg.norm(nA))
    np.testing.assert_allclose(np_of(LA.norm(A, 2)), np.linalg.norm(nA, 2))
    np.testing.assert_allclose(np_of(LA.norm(A, 3, dim=1)), np.linalg.norm(nA, 3, axis=1))
    np.testing.assert_allclose(np_of(LA.norm(A, "nuc", dim=(1, 0))), np.linalg.norm(nA, "nuc", axis=(1, 0)))
    np.testing.assert_allclose(np_of(LA.norm(A.reshape(-1), 1)), np.abs(nA).sum())
    np.testing.assert_allclose(np_of(ember.norm(A)), np.linalg.norm(nA))
    np.testing.assert_allclose(np_of(A.norm(dim=1)), np.linalg.norm(nA, axis=1))
    np.testing.assert_allclose(np_of(A.norm(p=1, dim=(0, 1))), np.abs(nA).sum())
    np.testing.assert_allclose(np_of(ember.norm(A, "nuc")), np.linalg.norm(nA, "nuc"))
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."):
        LA.norm(rand64(2, 2, 2, device=device), 2)


# -- errors ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn, name", [(LA.inv, "linalg.inv"), (LA.det, "linalg.det"), (LA.cholesky, "linalg.cholesky"),
                                      (LA.eigh, "linalg.eigh"), (LA.slogdet, "linalg.slogdet")])
def test_square_and_dtype_errors(device, fn, name):
    with pytest.raises(RuntimeError, match=f"{name}: A must be batches of square matrices, but they are 3 by 2"):
        fn(ember.ones(3, 2, device=device))
    with pytest.raises(RuntimeError, match=f"{name}: The input tensor A must have at least 2 dimensions."):
        fn(ember.ones(3, device=device))
    with pytest.raises(RuntimeError, match=f"{name}: Expected a floating point or complex tensor as input. Got Long"):
        fn(ember.ones(2, 2, dtype=ember.int64, device=device))


def test_singular_and_not_positive_definite(device):
    with pytest.raises(LA.LinAlgError, match="linalg.inv: .*singular"):
        LA.inv(ember.zeros(3, 3, device=device))
    with pytest.raises(LA.LinAlgError, match="solver failed because the input matrix is singular"):
        LA.solve(ember.zeros(2, 2, device=device), ember.ones(2, device=device))
    with pytest.raises(LA.LinAlgError, match="linalg.cholesky: .*not positive-definite"):
        LA.cholesky(-ember.eye(2, device=device))
    assert issubclass(LA.LinAlgError, RuntimeError)


def test_solve_and_norm_errors(device):
    A = ember.ones(3, 3, device=device)
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 2x2\)"):
        LA.solve(A, ember.ones(2, 2, device=device))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of tensor b \(3\)"):
        LA.solve(ember.ones(2, 3, 3, device=device), ember.ones(3, 3, 2, device=device))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        LA.matrix_norm(A, 3)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: dim must be a 2-tuple. Got 0"):
        LA.matrix_norm(A, dim=0)
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or complex tensor as input. "
                                           "Got Long"):
        LA.vector_norm(ember.ones(3, dtype=ember.int64, device=device))
    with pytest.raises(TypeError, match="argument 'ord' must be Number, not str"):
        LA.vector_norm(A, "fro")
