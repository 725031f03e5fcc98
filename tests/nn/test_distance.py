"""normalize, cosine_similarity, pairwise_distance (and the CosineSimilarity / PairwiseDistance modules): values
against NumPy loops, PyTorch's eps handling and broadcasting, gradients, errors."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.nn.modules.distance import CosineSimilarity, PairwiseDistance
from tests.core.helpers import check_grads, rand64


def _np(t):
    return t.detach().numpy(force=True)


def np_norm(v, p):
    v = np.abs(np.asarray(v, dtype=np.float64))
    if p == math.inf:
        return v.max()
    if p == 0:
        return float(np.count_nonzero(v))
    return np.sum(v ** p) ** (1.0 / p)


def np_along(x, dim, fn):
    """``fn`` of each 1-D slice of ``x`` along ``dim``, the slice's dimension dropped."""
    moved = np.moveaxis(x, dim, -1)
    return np.array([fn(row) for row in moved.reshape(-1, moved.shape[-1])]).reshape(moved.shape[:-1])


# -- normalize -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_normalize_matches_numpy(p, dim, device):
    x = rand64(3, 4, device=device, seed=1)
    xn = _np(x)
    norms = np.expand_dims(np_along(xn, dim, lambda row: max(np_norm(row, p), 1e-12)), dim)
    np.testing.assert_allclose(_np(F.normalize(x, p=p, dim=dim)), xn / norms, rtol=1e-12)
    check_grads(lambda t: F.normalize(t, p=p, dim=dim), x, gradgrad=p != math.inf)


def test_normalize_zero_vectors_and_eps():
    x = ember.tensor([[3.0, 4.0], [0.0, 0.0]], requires_grad=True)
    out = F.normalize(x)
    np.testing.assert_allclose(out.detach().numpy(), [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)
    g, = ember.autograd.grad(out.sum(), x)
    np.testing.assert_allclose(g.numpy()[1], [1e12, 1e12], rtol=1e-6)  # 1 / eps, as PyTorch gives
    assert F.normalize(ember.tensor([1e-3, 0.0]), dim=0, eps=0.1).tolist() == pytest.approx([1e-2, 0.0])
    assert F.normalize(ember.tensor([3.0, -4.0]), p=math.inf, dim=0).tolist() == [0.75, -1.0]
    assert F.normalize(x.detach()).dtype == ember.float32


def test_normalize_out_argument_and_errors():
    out = ember.empty(2)
    result = F.normalize(ember.tensor([3.0, 4.0]), dim=0, out=out)
    assert result is out and out.tolist() == pytest.approx([0.6, 0.8])
    with pytest.raises(RuntimeError, match=r"functions with out=\.\.\. arguments don't support automatic "
                                           "differentiation"):
        F.normalize(ember.ones(2, requires_grad=True), dim=0, out=ember.empty(2))
    with pytest.raises(RuntimeError, match=r"out has shape \[3\], but the result has shape \[2\]"):
        F.normalize(ember.ones(2), dim=0, out=ember.empty(3))
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.normalize(ember.ones(2))  # dim=1 on a 1-D tensor, as PyTorch
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        F.normalize(ember.tensor([3, 4]), dim=0)
    with pytest.raises(TypeError, match="must be Tensor"):
        F.normalize([3.0, 4.0])


# -- cosine_similarity -------------------------------------------------------------------------------------------
def np_cosine(a, b, eps):
    return np.dot(a, b) / (max(np_norm(a, 2), eps) * max(np_norm(b, 2), eps))


@pytest.mark.parametrize("shapes,dim", [(((3, 4), (3, 4)), 1), (((3, 4), (3, 4)), 0), (((3, 1, 4), (2, 4)), -1),
                                        (((4,), (4,)), 0), (((2, 3, 2), (1, 3, 1)), 1)])
def test_cosine_similarity_matches_numpy(shapes, dim, device):
    a = rand64(*shapes[0], device=device, seed=1)
    b = rand64(*shapes[1], device=device, seed=2)
    shape = np.broadcast_shapes(*shapes)
    an, bn = np.broadcast_to(_np(a), shape), np.broadcast_to(_np(b), shape)
    d = dim % len(shape)
    moved_a, moved_b = np.moveaxis(an, d, -1), np.moveaxis(bn, d, -1)
    want = np.array([np_cosine(u, v, 1e-8) for u, v in zip(moved_a.reshape(-1, shape[d]),
                                                           moved_b.reshape(-1, shape[d]))]).reshape(moved_a.shape[:-1])
    out = F.cosine_similarity(a, b, dim=dim)
    assert tuple(out.shape) == want.shape
    np.testing.assert_allclose(_np(out), want, rtol=1e-12)
    check_grads(lambda u, v: F.cosine_similarity(u, v, dim=dim), a, b, gradgrad=True)


def test_cosine_similarity_floors_each_norm_as_pytorch():
    # each norm is floored at eps on its own: cos(0, x) = 0, and a tiny vector against x is dot / (eps |x|)
    assert F.cosine_similarity(ember.zeros(1, 2), ember.tensor([[2.0, 1.0]])).tolist() == [0.0]
    x1 = ember.tensor([[1e-9, 2e-9], [1.0, 2.0]], dtype=ember.float64, requires_grad=True)
    x2 = ember.tensor([[3.0, 1.0], [1.0, 0.0]], dtype=ember.float64, requires_grad=True)
    out = F.cosine_similarity(x1, x2, dim=1, eps=1e-8)
    np.testing.assert_allclose(_np(out), [0.1581, 0.4472], atol=1e-4)
    # read from PyTorch 2.13 by hand: its floor is applied outside autograd, so below eps the gradient is that
    # of the unfloored norm (not a finite difference of the floored function)
    g1, g2 = ember.autograd.grad(out.sum(), (x1, x2))
    np.testing.assert_allclose(_np(g1), [[8.7797e7, 1.7481e7], [0.35777, -0.17889]], rtol=1e-4)
    np.testing.assert_allclose(_np(g2), [[-0.0158, 0.0474], [0.0, 0.8944]], atol=1e-4)


def test_cosine_similarity_dtypes_and_errors():
    assert F.cosine_similarity(ember.ones(1, 2), ember.ones(1, 2)).dtype == ember.float32
    assert F.cosine_similarity(ember.ones(1, 2), ember.ones(1, 2).double()).dtype == ember.float64
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point, yet common dtype is Long"):
        F.cosine_similarity(ember.tensor([[1, 2]]), ember.tensor([[2, 1]]))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\) at "
                                           r"non-singleton dimension 0"):
        F.cosine_similarity(ember.ones(3, 4), ember.ones(2, 4))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got "
                                         r"1\)"):
        F.cosine_similarity(ember.ones(4), ember.ones(4))
    with pytest.raises(TypeError, match=r"argument 'x2' \(position 2\) must be Tensor"):
        F.cosine_similarity(ember.ones(4), 1.0, dim=0)


# -- pairwise_distance -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance_matches_numpy(p, keepdim, device):
    a = rand64(3, 4, device=device, seed=1)
    b = rand64(3, 4, device=device, seed=2)
    want = np.array([np_norm(u - v + 1e-6, p) for u, v in zip(_np(a), _np(b))])
    out = F.pairwise_distance(a, b, p=p, keepdim=keepdim)
    np.testing.assert_allclose(_np(out), want[:, None] if keepdim else want, rtol=1e-12)
    check_grads(lambda u, v: F.pairwise_distance(u, v, p=p, keepdim=keepdim), a, b, gradgrad=p != math.inf)


def test_pairwise_distance_shapes_and_hand_values():
    # read from PyTorch 2.13 by hand
    assert F.pairwise_distance(ember.tensor([[1.0, 2.0]]), ember.tensor([[0.0, 0.0]])).item() == pytest.approx(
        math.sqrt((1 + 1e-6) ** 2 + (2 + 1e-6) ** 2))
    assert F.pairwise_distance(ember.tensor([1.0, 2.0]), ember.zeros(2)).shape == ()
    out = F.pairwise_distance(ember.tensor([1.0, 2.0]), ember.tensor([[0.0, 0.0], [1.0, 1.0]]))
    np.testing.assert_allclose(out.numpy(), [2.2361, 1.0], atol=1e-4)
    assert F.pairwise_distance(ember.tensor(1.0), ember.tensor(0.0)).item() == pytest.approx(1.000001)
    assert F.pairwise_distance(ember.ones(2, 3, 4), ember.zeros(2, 3, 4)).shape == (2, 3)
    assert F.pairwise_distance(ember.tensor([[1.0, -2.0]]), ember.tensor([[1.0, 0.0]]), p=0).tolist() == [2.0]
    assert F.pairwise_distance(ember.tensor([[1, 2]]), ember.tensor([[0, 0]])).dtype == ember.float32
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of tensor b \(3\)"):
        F.pairwise_distance(ember.ones(2, 3), ember.zeros(3, 3))


# -- modules ------------------------------------------------------------------------------------------------------
def test_distance_modules():
    a, b = rand64(3, 4, seed=1), rand64(3, 4, seed=2)
    pd = PairwiseDistance(p=1.0, eps=0.0, keepdim=True)
    assert repr(pd) == "PairwiseDistance()" and (pd.norm, pd.eps, pd.keepdim) == (1.0, 0.0, True)
    np.testing.assert_allclose(_np(pd(a, b)), np.abs(_np(a) - _np(b)).sum(1, keepdims=True), rtol=1e-12)
    cs = CosineSimilarity(dim=0)
    assert repr(cs) == "CosineSimilarity()" and (cs.dim, cs.eps) == (0, 1e-8)
    np.testing.assert_allclose(_np(cs(a, b)), _np(F.cosine_similarity(a, b, dim=0)), rtol=1e-15)
    assert list(cs.state_dict()) == [] and list(pd.parameters()) == []
    default = PairwiseDistance()
    assert (default.norm, default.eps, default.keepdim) == (2.0, 1e-6, False)
