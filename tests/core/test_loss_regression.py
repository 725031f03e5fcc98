"""Regression losses (mse, l1, smooth_l1, huber, poisson_nll) and what all losses share: reductions, the
deprecated size_average/reduce flags, broadcasting with PyTorch's warning, dtypes, gradients, errors."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from tests.core.helpers import check_grads, rand64

REDUCTIONS = ["none", "mean", "sum"]


def _np(t):
    return t.detach().numpy(force=True)


def np_reduce(values, reduction):
    values = np.asarray(values, dtype=np.float64)
    return {"none": values, "mean": values.mean(), "sum": values.sum()}[reduction]


def np_elementwise(fn, x, y):
    """``fn(a, b)`` at every position of the broadcast of ``x`` and ``y``, one element at a time."""
    shape = np.broadcast_shapes(x.shape, y.shape)
    xs, ys = np.broadcast_to(x, shape), np.broadcast_to(y, shape)
    return np.array([fn(a, b) for a, b in zip(xs.flat, ys.flat)]).reshape(shape)


def np_smooth_l1(beta):
    def one(a, b):
        d = abs(a - b)
        if beta == 0:
            return d
        return 0.5 * d * d / beta if d < beta else d - 0.5 * beta
    return one


def np_huber(delta):
    def one(a, b):
        d = abs(a - b)
        return 0.5 * d * d if d < delta else delta * (d - 0.5 * delta)
    return one


LOSSES = {  # name: (ember loss taking (input, target, reduction), element reference)
    "mse": (lambda x, y, r: F.mse_loss(x, y, reduction=r), lambda a, b: (a - b) ** 2),
    "l1": (lambda x, y, r: F.l1_loss(x, y, reduction=r), lambda a, b: abs(a - b)),
    "smooth_l1_beta_0.5": (lambda x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.5), np_smooth_l1(0.5)),
    "smooth_l1_beta_1": (lambda x, y, r: F.smooth_l1_loss(x, y, reduction=r), np_smooth_l1(1.0)),
    "smooth_l1_beta_0": (lambda x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.0), np_smooth_l1(0.0)),
    "huber_delta_0.5": (lambda x, y, r: F.huber_loss(x, y, reduction=r, delta=0.5), np_huber(0.5)),
    "huber_delta_2": (lambda x, y, r: F.huber_loss(x, y, reduction=r, delta=2.0), np_huber(2.0)),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_values_match_numpy(name, reduction, device):
    fn, ref = LOSSES[name]
    x = rand64(3, 4, device=device, low=-2, high=2, seed=1)
    y = rand64(3, 4, device=device, low=-2, high=2, seed=2)
    want = np_reduce(np_elementwise(ref, _np(x), _np(y)), reduction)
    out = fn(x, y, reduction)
    assert out.shape == want.shape
    np.testing.assert_allclose(_np(out), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gradients_wrt_input_and_target(name, reduction, device):
    fn = LOSSES[name][0]
    x = rand64(2, 3, device=device, low=-2, high=2, seed=3)
    y = rand64(2, 3, device=device, low=-2, high=2, seed=4)
    check_grads(lambda a, b: fn(a, b, reduction), x, y)


@pytest.mark.parametrize("name", ["mse", "smooth_l1_beta_0.5", "smooth_l1_beta_0", "huber_delta_0.5"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_double_backward(name, reduction, device):
    fn = LOSSES[name][0]
    x = rand64(2, 3, device=device, low=-2, high=2, seed=5)
    y = rand64(2, 3, device=device, low=-2, high=2, seed=6)
    check_grads(lambda a, b: fn(a, b, reduction), x, y, gradgrad=True)


def test_hand_values_checked_against_pytorch():
    # values and gradients read from PyTorch 2.13 by hand for d = input - 0 at these points
    d = ember.tensor([-2.0, -0.5, 0.0, 0.5, 1.0, 2.0], dtype=ember.float64, requires_grad=True)
    zero = ember.zeros(6, dtype=ember.float64)
    cases = [
        (lambda: F.smooth_l1_loss(d, zero, reduction="none"), [1.5, 0.125, 0.0, 0.125, 0.5, 1.5],
         [-1.0, -0.5, 0.0, 0.5, 1.0, 1.0]),
        (lambda: F.smooth_l1_loss(d, zero, reduction="none", beta=0.0), [2.0, 0.5, 0.0, 0.5, 1.0, 2.0],
         [-1.0, -1.0, 0.0, 1.0, 1.0, 1.0]),
        (lambda: F.huber_loss(d, zero, reduction="none"), [1.5, 0.125, 0.0, 0.125, 0.5, 1.5],
         [-1.0, -0.5, 0.0, 0.5, 1.0, 1.0]),
    ]
    for loss, values, grads in cases:
        out = loss()
        g, = ember.autograd.grad(out.sum(), d)
        assert out.tolist() == values and g.tolist() == grads
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.tensor([1.0, 3.0], requires_grad=True)
    gx, gy = ember.autograd.grad(F.mse_loss(x, y), (x, y))
    assert gx.tolist() == [0.0, -1.0] and gy.tolist() == [0.0, 1.0]
    gx, gy = ember.autograd.grad(F.l1_loss(x, y), (x, y))  # sign(0) = 0 where input equals target
    assert gx.tolist() == [0.0, -0.5] and gy.tolist() == [0.0, 0.5]


def test_grad_fn_names():
    x, y = rand64(2, 2, seed=1), rand64(2, 2, seed=2)
    assert F.mse_loss(x, y).grad_fn.name() == "MseLossBackward0"
    assert F.smooth_l1_loss(x, y).grad_fn.name() == "SmoothL1LossBackward0"
    assert F.huber_loss(x, y).grad_fn.name() == "HuberLossBackward0"
    assert F.l1_loss(x, y).grad_fn.name() == "MeanBackward0"  # a composition in PyTorch too


def test_gradient_penalty_through_mse_loss():
    """The norm of d(loss)/d(input) differentiated again, down to the parameters (a WGAN-GP style penalty)."""
    rng = np.random.default_rng(0)
    xn, wn, yn = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=(4, 2))

    def penalty_np(w):  # d/dx mean((x w - y)^2) = 2/n (x w - y) w^T; the penalty is its Frobenius norm
        gx = 2.0 / yn.size * (xn @ w - yn) @ w.T
        return np.sqrt(np.sum(gx * gx))

    x = ember.tensor(xn, requires_grad=True)
    w = ember.tensor(wn, requires_grad=True)
    loss = F.mse_loss(x @ w, ember.tensor(yn))
    gx, = ember.autograd.grad(loss, x, create_graph=True)
    penalty = gx.norm()
    penalty.backward()
    assert penalty.item() == pytest.approx(penalty_np(wn), rel=1e-12)
    h = 1e-6
    numeric = np.zeros_like(wn)
    for i in np.ndindex(wn.shape):
        up, down = wn.copy(), wn.copy()
        up[i] += h
        down[i] -= h
        numeric[i] = (penalty_np(up) - penalty_np(down)) / (2 * h)
    np.testing.assert_allclose(_np(w.grad), numeric, rtol=1e-6, atol=1e-9)


def test_poisson_nll_loss_values_and_gradients(device):
    # log_input: exp(x) - t x; else x - t log(x + eps); full adds t log t - t + log(2 pi t) / 2 where t > 1
    x = rand64(2, 3, device=device, low=0.2, high=2, seed=7)
    t = rand64(2, 3, device=device, low=0.0, high=4, seed=8)
    xn, tn = _np(x), _np(t)
    stirling = np.where(tn > 1, tn * np.log(np.maximum(tn, 1)) - tn + 0.5 * np.log(2 * np.pi * np.maximum(tn, 1)),
                        0.0)
    for log_input, full in [(True, False), (False, False), (True, True), (False, True)]:
        base = np.exp(xn) - tn * xn if log_input else xn - tn * np.log(xn + 1e-8)
        want = base + (stirling if full else 0.0)
        for reduction in REDUCTIONS:
            out = F.poisson_nll_loss(x, t, log_input=log_input, full=full, reduction=reduction)
            np.testing.assert_allclose(_np(out), np_reduce(want, reduction), rtol=1e-12)
        check_grads(lambda a, b: F.poisson_nll_loss(a, b, log_input=log_input, full=full), x, t)
    # by hand from PyTorch: full=True, input [0.5, 2], target [1, 3]
    full = F.poisson_nll_loss(ember.tensor([0.5, 2.0]), ember.tensor([1.0, 3.0]), full=True, reduction="none")
    np.testing.assert_allclose(full.numpy(), [1.1487, 3.1531], atol=1e-4)
    zero_target = ember.tensor([0.0, 0.5], dtype=ember.float64, requires_grad=True)
    g, = ember.autograd.grad(F.poisson_nll_loss(ember.ones(2, dtype=ember.float64), zero_target, full=True),
                             zero_target)
    assert np.isfinite(_np(g)).all()  # the Stirling term is left out where target <= 1, with its gradient


def test_broadcasting_warns_as_pytorch_and_reduces_gradients(device):
    x = rand64(3, 1, device=device, seed=1)
    y = rand64(4, device=device, seed=2)
    for fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss):
        with pytest.warns(UserWarning, match=r"Using a target size \(ember.Size\(\[4\]\)\) that is different to the "
                                             r"input size \(ember.Size\(\[3, 1\]\)\). This will likely lead to "
                                             r"incorrect results due to broadcasting. Please ensure they have the "
                                             r"same size.") as record:
            out = fn(x, y, reduction="none")
        assert record[0].filename == __file__  # attributed to the caller's line, not to ember
        assert out.shape == (3, 4)
    with pytest.warns(UserWarning):
        np.testing.assert_allclose(_np(F.mse_loss(x, y, reduction="none")), (_np(x) - _np(y)) ** 2, rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_grads(lambda a, b: F.mse_loss(a, b), x, y, gradgrad=True)
        check_grads(lambda a, b: F.huber_loss(a, b, delta=0.3), x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # equal shapes: no warning
        F.mse_loss(y, y)


shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@settings(max_examples=30, deadline=None)
@given(shapes, st.data())
def test_broadcast_shapes_match_numpy(shape, data):
    # drop some leading dims and set some sizes to 1, so the pair always broadcasts
    cut = data.draw(st.integers(0, len(shape)))
    other = tuple(1 if data.draw(st.booleans()) else s for s in shape[cut:])
    rng = np.random.default_rng(len(shape) + cut)
    a, b = rng.normal(size=shape), rng.normal(size=other)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xa = ember.tensor(a, requires_grad=True)
        xb = ember.tensor(b, requires_grad=True)
        out = F.mse_loss(xa, xb, reduction="none")
    np.testing.assert_allclose(_np(out), (a - b) ** 2, rtol=1e-12)
    ga, gb = ember.autograd.grad(out.sum(), (xa, xb))
    np.testing.assert_allclose(_np(ga), 2 * (a - b) if shape else 2 * np.sum(a - b), rtol=1e-12)
    assert ga.shape == xa.shape and gb.shape == xb.shape


def test_not_broadcastable_is_pytorchs_error():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=r"The size of tensor a \(4\) must match the size of tensor b \(3\) "
                                               r"at non-singleton dimension 1"):
            F.mse_loss(ember.ones(3, 4), ember.ones(3))


def test_dtypes(device):
    x32 = ember.ones(2, 3, device=device, requires_grad=True)
    y32 = ember.zeros(2, 3, device=device)
    for fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.poisson_nll_loss):
        out = fn(x32, y32)
        assert out.dtype == ember.float32
        g, = ember.autograd.grad(out, x32)
        assert g.dtype == ember.float32
    assert F.mse_loss(x32, y32.double()).dtype == ember.float64  # promotion, as PyTorch
    assert F.mse_loss(x32, ember.zeros(2, 3, dtype=ember.int64, device=device)).dtype == ember.float32
    for fn, name in ((F.mse_loss, "mse_loss"), (F.l1_loss, "l1_loss"), (F.smooth_l1_loss, "smooth_l1_loss"),
                     (F.huber_loss, "huber_loss")):
        with pytest.raises(NotImplementedError, match=f"\"{name}\" not implemented for 'Long'"):
            fn(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))


def test_reduction_argument_and_deprecated_flags():
    x, y = ember.tensor([1.0, 3.0]), ember.tensor([0.0, 0.0])
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.mse_loss(x, y, reduction="avg")
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.huber_loss(x, y, reduction="avg")
    # size_average/reduce: (None|True, None|True) -> mean, (False, None|True) -> sum, reduce=False -> none
    for kwargs, want, value in [({"size_average": False}, "sum", 10.0), ({"reduce": False}, "none", [1.0, 9.0]),
                                ({"size_average": True, "reduce": True}, "mean", 5.0),
                                ({"size_average": False, "reduce": False}, "none", [1.0, 9.0])]:
        with pytest.warns(UserWarning, match=f"size_average and reduce args will be deprecated, please use "
                                             f"reduction='{want}' instead."):
            out = F.mse_loss(x, y, reduction="sum" if want == "mean" else "mean", **kwargs)
        assert out.tolist() == value
    with pytest.warns(UserWarning, match="reduction='elementwise_mean' is deprecated"):
        assert F.l1_loss(x, y, reduction="elementwise_mean").item() == 2.0


def test_argument_errors():
    x = ember.ones(2)
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta."):
        F.smooth_l1_loss(x, x, beta=-1.0)
    for delta in (0.0, -1.0):
        with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta."):
            F.huber_loss(x, x, delta=delta)
    with pytest.raises(TypeError, match=r"mse_loss\(\): argument 'target' \(position 2\) must be Tensor, not float"):
        F.mse_loss(x, 1.0)
    with pytest.raises(TypeError, match=r"l1_loss\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        F.l1_loss([1.0], x)


def test_saved_input_changed_in_place_is_caught():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    loss = F.mse_loss(y, ember.zeros(2))
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_empty_input_mean_is_nan():
    assert math.isnan(F.mse_loss(ember.ones(0), ember.ones(0)).item())  # as PyTorch
    assert F.mse_loss(ember.ones(0), ember.ones(0), reduction="sum").item() == 0.0
