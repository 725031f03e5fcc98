"""margin_ranking_loss, cosine_embedding_loss and triplet_margin_loss: values against NumPy loops, hand values
from PyTorch, gradients and errors."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from tests.core.helpers import check_grads, rand64

REDUCTIONS = ["none", "mean", "sum"]


def _np(t):
    return t.detach().numpy(force=True)


def np_reduce(values, reduction):
    values = np.asarray(values, dtype=np.float64)
    return {"none": values, "mean": values.mean(), "sum": values.sum()}[reduction]


def _signs(n, seed):
    return ember.tensor(np.where(np.random.default_rng(seed).random(n) > 0.5, 1.0, -1.0), dtype=ember.float64)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_loss(reduction, device):
    a = rand64(6, device=device, seed=1)
    b = rand64(6, device=device, seed=2)
    y = _signs(6, 3).to(device)
    want = [max(0.0, -yi * (ai - bi) + 0.3) for ai, bi, yi in zip(_np(a), _np(b), _np(y))]
    out = F.margin_ranking_loss(a, b, y, margin=0.3, reduction=reduction)
    np.testing.assert_allclose(_np(out), np_reduce(want, reduction), rtol=1e-12)
    check_grads(lambda p, q: F.margin_ranking_loss(p, q, y, margin=0.3, reduction=reduction), a, b)


def test_margin_ranking_loss_hand_values_and_errors():
    # read from PyTorch 2.13 by hand
    x1, x2 = ember.tensor([0.5, 2.0]), ember.tensor([1.0, 3.0])
    out = F.margin_ranking_loss(x1, x2, ember.tensor([1.0, -1.0]), margin=0.2, reduction="none")
    np.testing.assert_allclose(out.numpy(), [0.7, 0.0], atol=1e-6)
    out = F.margin_ranking_loss(x1, ember.tensor([1.0]), ember.tensor([1, -1]), reduction="none")  # broadcasts
    assert out.tolist() == [0.5, 1.0]
    with pytest.raises(RuntimeError, match=r"margin_ranking_loss : All input tensors should have same dimension but "
                                           r"got sizes: input1: ember.Size\(\[2\]\), input2: ember.Size\(\[1, 2\]\), "
                                           r"target: ember.Size\(\[2\]\)"):
        F.margin_ranking_loss(x1, x2.unsqueeze(0), ember.tensor([1.0, -1.0]))


def np_cosine_embedding(x1, x2, y, margin):
    out = []
    for a, b, t in zip(x1, x2, y):
        cos = np.dot(a, b) / math.sqrt((np.dot(a, a) + 1e-12) * (np.dot(b, b) + 1e-12))
        out.append(1 - cos if t == 1 else max(0.0, cos - margin) if t == -1 else 0.0)
    return np.array(out)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding_loss(reduction, device):
    a = rand64(5, 3, device=device, seed=1)
    b = rand64(5, 3, device=device, seed=2)
    y = ember.tensor([1.0, -1.0, 1.0, -1.0, 0.0], dtype=ember.float64, device=device)  # 0: no loss, as PyTorch
    want = np_cosine_embedding(_np(a), _np(b), _np(y), -0.2)
    out = F.cosine_embedding_loss(a, b, y, margin=-0.2, reduction=reduction)
    np.testing.assert_allclose(_np(out), np_reduce(want, reduction), rtol=1e-12)
    check_grads(lambda p, q: F.cosine_embedding_loss(p, q, y, margin=-0.2, reduction=reduction), a, b,
                gradgrad=reduction == "mean")


def test_cosine_embedding_loss_hand_values_and_errors():
    # read from PyTorch 2.13 by hand
    x1 = ember.tensor([[0.5, 2.0], [1.0, 1.0]])
    x2 = ember.tensor([[1.0, 3.0], [1.0, -1.0]])
    out = F.cosine_embedding_loss(x1, x2, ember.tensor([1.0, -1.0]), margin=-0.5, reduction="none")
    np.testing.assert_allclose(out.numpy(), [0.0029, 0.5], atol=1e-4)
    one = F.cosine_embedding_loss(x1[0], x2[0], ember.tensor(1.0), reduction="none")
    assert one.shape == () and one.item() == pytest.approx(0.0029, abs=1e-4)
    assert F.cosine_embedding_loss(ember.zeros(1, 2), x2[:1], ember.tensor([1.0])).item() == 1.0  # cos of 0 is 0
    with pytest.raises(RuntimeError, match=r"1D target tensor expects 2D input tensors, but found inputs with sizes "
                                           r"\[1, 2\] and \[2\]."):
        F.cosine_embedding_loss(x1[:1], x2[0], ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match=r"0D target tensor expects 1D input tensors"):
        F.cosine_embedding_loss(x1, x2, ember.tensor(1.0))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not supported"):
        F.cosine_embedding_loss(x1, x2, ember.ones(2, 2))


def np_triplet(a, p, n, margin, norm, eps, swap):
    def dist(u, v):
        return np.sum(np.abs(u - v + eps) ** norm) ** (1 / norm)
    out = []
    for ai, pi, ni in zip(a, p, n):
        d_neg = dist(ai, ni)
        if swap:
            d_neg = min(d_neg, dist(pi, ni))
        out.append(max(0.0, margin + dist(ai, pi) - d_neg))
    return np.array(out)


@pytest.mark.parametrize("norm,swap", [(2, False), (1.5, True), (1, True)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_triplet_margin_loss(norm, swap, reduction, device):
    a, p, n = (rand64(4, 3, device=device, seed=s) for s in (1, 2, 3))
    want = np_triplet(_np(a), _np(p), _np(n), 0.8, norm, 1e-6, swap)
    out = F.triplet_margin_loss(a, p, n, margin=0.8, p=norm, swap=swap, reduction=reduction)
    np.testing.assert_allclose(_np(out), np_reduce(want, reduction), rtol=1e-12)
    check_grads(lambda x, y, z: F.triplet_margin_loss(x, y, z, margin=0.8, p=norm, swap=swap, reduction=reduction),
                a, p, n)


def test_triplet_margin_loss_hand_values_and_errors():
    # read from PyTorch 2.13 by hand (swap picks d(positive, negative) here)
    out = F.triplet_margin_loss(ember.tensor([[0.5, 2.0]]), ember.tensor([[1.0, 3.0]]), ember.tensor([[0.0, 2.0]]),
                                swap=True, reduction="none")
    np.testing.assert_allclose(out.numpy(), [1.6180], atol=1e-4)
    assert F.triplet_margin_loss(ember.ones(2, 2, 2), ember.ones(2, 2, 2), ember.ones(2, 2, 2),
                                 reduction="none").tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0.0"):
        F.triplet_margin_loss(ember.ones(2, 2), ember.ones(2, 2), ember.ones(2, 2), margin=0.0)
    with pytest.raises(RuntimeError, match="The anchor, positive, and negative tensors are expected to have the same "
                                           "number of dimensions, but got: anchor 1D, positive 2D, and negative 1D "
                                           "inputs"):
        F.triplet_margin_loss(ember.ones(2), ember.ones(1, 2), ember.ones(2))
