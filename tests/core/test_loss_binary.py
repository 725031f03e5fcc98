"""binary_cross_entropy, binary_cross_entropy_with_logits (pos_weight) and soft_margin_loss: values against
NumPy references, PyTorch's clamping and stability, gradients wrt input and target (first and second), errors."""
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
    return {"none": values, "mean": values.mean(), "sum": values.sum()}[reduction]


def np_bce(x, t, w=None):
    out = np.empty(x.shape)
    for i in np.ndindex(x.shape):
        log_x = max(math.log(x[i]), -100.0) if x[i] > 0 else -100.0
        log_1mx = max(math.log(1 - x[i]), -100.0) if x[i] < 1 else -100.0
        out[i] = -(t[i] * log_x + (1 - t[i]) * log_1mx)
    return out if w is None else out * w


def np_bce_with_logits(z, t, w=None, pos_weight=None):
    """``-(pw t log(sigmoid z) + (1 - t) log(1 - sigmoid z))`` with log(sigmoid z) = -logaddexp(0, -z)."""
    pw = 1.0 if pos_weight is None else pos_weight
    out = pw * t * np.logaddexp(0, -z) + (1 - t) * np.logaddexp(0, z)
    return out if w is None else out * w


def _shrink(w, shape=(2, 3)):
    """``w`` narrowed so that it still broadcasts against ``shape`` (None stays None)."""
    if w is None:
        return None
    return w[tuple(slice(0, min(n, m)) for n, m in zip(w.shape, shape[len(shape) - w.ndim:]))]


WEIGHT_SHAPES = {"none": None, "per_class": (4,), "per_row": (3, 1), "full": (3, 4)}


@pytest.mark.parametrize("weight_shape", sorted(WEIGHT_SHAPES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_matches_numpy(weight_shape, reduction, device):
    x = rand64(3, 4, device=device, low=0.02, high=0.98, seed=1)
    t = rand64(3, 4, device=device, low=0.0, high=1.0, seed=2)
    shape = WEIGHT_SHAPES[weight_shape]
    w = None if shape is None else rand64(*shape, device=device, low=0.1, high=2, seed=3, requires_grad=False)
    out = F.binary_cross_entropy(x, t, weight=w, reduction=reduction)
    want = np_reduce(np_bce(_np(x), _np(t), None if w is None else _np(w)), reduction)
    np.testing.assert_allclose(_np(out), want, rtol=1e-12)
    x, t, w = x[:2, :3], t[:2, :3], _shrink(w)  # smaller for the gradient checks
    check_grads(lambda a, b: F.binary_cross_entropy(a, b, weight=w, reduction=reduction), x, t,
                gradgrad=reduction != "sum")


def test_binary_cross_entropy_clamps_logs_as_pytorch():
    # read from PyTorch 2.13 by hand: each log floored at -100, and x (1 - x) at 1e-12 in the input's gradient;
    # the target's gradient log(1 - x) - log(x) is not clamped
    x = ember.tensor([0.0, 1e-50, 0.3, 1.0], dtype=ember.float64, requires_grad=True)
    t = ember.tensor([0.2, 0.5, 0.7, 0.0], dtype=ember.float64, requires_grad=True)
    out = F.binary_cross_entropy(x, t, reduction="none")
    np.testing.assert_allclose(_np(out), [20.0, 50.0, 0.9498, 100.0], atol=1e-4)
    gx, gt = ember.autograd.grad(out.sum(), (x, t))
    np.testing.assert_allclose(_np(gx), [-2e11, -5e11, -1.9048, 1e12], rtol=1e-4)
    np.testing.assert_allclose(_np(gt), [math.inf, 115.1293, 0.8473, -math.inf], rtol=1e-4)
    x = ember.tensor([0.1, 0.3, 0.9], requires_grad=True)
    t = ember.tensor([0.2, 0.5, 0.7], requires_grad=True)
    out = F.binary_cross_entropy(x, t, weight=ember.tensor([1.0, 2.0, 3.0]), reduction="none")
    np.testing.assert_allclose(out.detach().numpy(), [0.5448, 1.5606, 2.2936], atol=1e-4)
    gx, gt = ember.autograd.grad(out.sum(), (x, t))
    np.testing.assert_allclose(gx.numpy(), [-1.1111, -1.9048, 6.6667], atol=1e-4)
    np.testing.assert_allclose(gt.numpy(), [2.1972, 1.6946, -6.5917], atol=1e-4)
    assert F.binary_cross_entropy(ember.tensor([0.0, 1.0]), ember.tensor([1.0, 0.0])).item() == 100.0


def test_binary_cross_entropy_errors():
    x = ember.full((3, 4), 0.5)
    with pytest.raises(ValueError, match=r"Using a target size \(ember.Size\(\[4\]\)\) that is different to the "
                                         r"input size \(ember.Size\(\[3, 4\]\)\) is deprecated. Please ensure they "
                                         r"have the same size."):
        F.binary_cross_entropy(x, ember.full((4,), 0.5))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(x * 3, x)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([math.nan]), ember.tensor([0.5]))
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(x, x - 1)
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        F.binary_cross_entropy(x, x.double())
    with pytest.raises(NotImplementedError, match="\"binary_cross_entropy\" not implemented for 'Long'"):
        F.binary_cross_entropy(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match=r"output with shape \[3, 4\] doesn't match the broadcast shape "
                                           r"\[2, 3, 4\]"):
        F.binary_cross_entropy(x, x, weight=ember.ones(2, 3, 4))
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        F.binary_cross_entropy(x, x, weight=ember.ones(3))
    with pytest.raises(RuntimeError, match="The function 'binary_cross_entropy' is not differentiable with respect "
                                           "to argument 'weight'"):
        F.binary_cross_entropy(x, x, weight=ember.ones(4, requires_grad=True))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.binary_cross_entropy(x, x, reduction="avg")
    assert math.isnan(F.binary_cross_entropy(ember.ones(0), ember.ones(0)).item())


POS_WEIGHTS = {"none": None, "per_class": (4,), "broadcast_one": (1,)}


@pytest.mark.parametrize("pos_weight_shape", sorted(POS_WEIGHTS))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits_matches_numpy(pos_weight_shape, weighted, reduction, device):
    z = rand64(3, 4, device=device, low=-6, high=6, seed=1)
    t = rand64(3, 4, device=device, low=0, high=1, seed=2)
    shape = POS_WEIGHTS[pos_weight_shape]
    pw = None if shape is None else rand64(*shape, device=device, low=0.5, high=3, seed=3, requires_grad=False)
    w = rand64(3, 1, device=device, low=0.1, high=2, seed=4, requires_grad=False) if weighted else None
    out = F.binary_cross_entropy_with_logits(z, t, weight=w, reduction=reduction, pos_weight=pw)
    want = np_bce_with_logits(_np(z), _np(t), None if w is None else _np(w), None if pw is None else _np(pw))
    np.testing.assert_allclose(_np(out), np_reduce(want, reduction), rtol=1e-12)
    z, t, w, pw = z[:2, :3], t[:2, :3], _shrink(w), _shrink(pw)  # smaller for the gradient checks
    check_grads(lambda a, b: F.binary_cross_entropy_with_logits(a, b, weight=w, reduction=reduction, pos_weight=pw),
                z, t, gradgrad=reduction == "mean")


def test_binary_cross_entropy_with_logits_hand_values_and_stability():
    # read from PyTorch 2.13 by hand, with pos_weight=3 and without
    z = ember.tensor([-30.0, -1.0, 0.0, 2.0, 40.0], dtype=ember.float64, requires_grad=True)
    t = ember.tensor([0.2, 0.5, 0.7, 0.0, 1.0], dtype=ember.float64, requires_grad=True)
    for pw, loss, grad_z, grad_t in [
        (ember.tensor(3.0, dtype=ember.float64), [18.0, 2.1265, 1.6636, 2.1269, 1.2745e-17],
         [-0.6, -0.9621, -0.9, 0.8808, 0.0], [90.0, 3.6265, 1.3863, -1.7461, -40.0]),
        (None, [6.0, 0.81326, 0.69315, 2.1269, 4.2484e-18], [-0.2, -0.2311, -0.2, 0.8808, 0.0],
         [30.0, 1.0, 0.0, -2.0, -40.0]),
    ]:
        out = F.binary_cross_entropy_with_logits(z, t, reduction="none", pos_weight=pw)
        np.testing.assert_allclose(_np(out), loss, rtol=1e-4, atol=1e-20)
        gz, gt = ember.autograd.grad(out.sum(), (z, t))
        np.testing.assert_allclose(_np(gz), grad_z, atol=1e-4)
        np.testing.assert_allclose(_np(gt), grad_t, atol=1e-4)
    big = ember.tensor([1e4, -1e4, 100.0, -100.0], requires_grad=True)  # float32: no overflow anywhere
    out = F.binary_cross_entropy_with_logits(big, ember.tensor([0.0, 1.0, 1.0, 0.0]), reduction="none")
    g, = ember.autograd.grad(out.sum(), big)
    np.testing.assert_allclose(out.detach().numpy(), [1e4, 1e4, 0.0, 0.0], atol=1e-30)
    np.testing.assert_allclose(g.numpy(), [1.0, -1.0, 0.0, 0.0], atol=1e-30)
    assert out.dtype == ember.float32 and g.dtype == ember.float32


def test_binary_cross_entropy_with_logits_errors_and_dtypes():
    z = ember.zeros(3, 4)
    with pytest.raises(ValueError, match=r"Target size \(ember.Size\(\[4\]\)\) must be the same as input size "
                                         r"\(ember.Size\(\[3, 4\]\)\)"):
        F.binary_cross_entropy_with_logits(z, ember.zeros(4))
    with pytest.raises(RuntimeError, match="expected a floating point target, got Long"):
        F.binary_cross_entropy_with_logits(z, ember.zeros(3, 4, dtype=ember.int64))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.binary_cross_entropy_with_logits(ember.zeros(2, dtype=ember.int64), ember.zeros(2))
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        F.binary_cross_entropy_with_logits(z, z, pos_weight=ember.ones(3))
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'pos_weight'"):
        F.binary_cross_entropy_with_logits(z, z, pos_weight=ember.ones(4, requires_grad=True))
    # weights follow the input's dtype (as PyTorch); input and target promote
    assert F.binary_cross_entropy_with_logits(z, z, weight=ember.ones(4).double(),
                                              pos_weight=ember.ones(4).double()).dtype == ember.float32
    assert F.binary_cross_entropy_with_logits(z, z.double()).dtype == ember.float64
    assert F.binary_cross_entropy_with_logits(z, z).grad_fn is None
    zg = z.requires_grad_()
    assert F.binary_cross_entropy_with_logits(zg, z.detach()).grad_fn.name() == "BinaryCrossEntropyWithLogitsBackward0"
    assert F.binary_cross_entropy(zg.sigmoid(), z.detach()).grad_fn.name() == "BinaryCrossEntropyBackward0"


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_loss(reduction, device):
    x = rand64(3, 4, device=device, low=-3, high=3, seed=1)
    y = ember.tensor(np.where(np.random.default_rng(2).random((3, 4)) > 0.5, 1.0, -1.0), device=device)
    want = np.log1p(np.exp(-_np(y) * _np(x)))
    np.testing.assert_allclose(_np(F.soft_margin_loss(x, y, reduction=reduction)), np_reduce(want, reduction),
                               rtol=1e-12)
    check_grads(lambda a: F.soft_margin_loss(a, y, reduction=reduction), x, gradgrad=True)
    # by hand from PyTorch; a large margin does not overflow
    hand = F.soft_margin_loss(ember.tensor([0.5, 2.0]), ember.tensor([1.0, -1.0]), reduction="none")
    np.testing.assert_allclose(hand.numpy(), [0.4741, 2.1269], atol=1e-4)
    assert F.soft_margin_loss(ember.tensor([-200.0]), ember.tensor([1.0])).item() == 200.0
