"""Cross entropy's compiled passes (ember-numba's ``cross_entropy`` and ``cross_entropy_backward``) give what the
op's NumPy code gives, to the last bits of float rounding: losses, reductions, gradients, NaN and infinite rows; the
cases they do not take (weights, ignored targets, label smoothing, more dimensions) run the NumPy code."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from ember.backends.cpu_kernels import loss

pytest.importorskip("ember_numba")


@pytest.fixture(autouse=True, scope="module")
def every_size_compiled():
    """The kernels serve from MIN_VALUES values up; here, every size."""
    before = loss.MIN_VALUES
    loss.MIN_VALUES = 0
    yield
    loss.MIN_VALUES = before


def _numpy_reference(x, target, reduction):
    """Loss and d(loss)/dx by hand in float64."""
    x = x.astype(np.float64)
    z = x - x.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    rows = np.arange(len(x))
    losses = -logp[rows, target]
    grad = np.exp(logp)
    grad[rows, target] -= 1
    if reduction == "mean":
        return losses.mean(), grad / len(x)
    return (losses.sum(), grad) if reduction == "sum" else (losses, grad)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 70), c=st.integers(1, 40), dtype=st.sampled_from([np.float32, np.float64]),
       reduction=st.sampled_from(["mean", "sum", "none"]), scale=st.sampled_from([1.0, 30.0]),
       seed=st.integers(0, 2**16))
def test_losses_and_gradients_match_the_reference(n, c, dtype, reduction, scale, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c)) * scale).astype(dtype)
    target = rng.integers(0, c, n)
    logits = ember.tensor(x, requires_grad=True)
    out = F.cross_entropy(logits, ember.tensor(target), reduction=reduction)
    out.sum().backward() if reduction == "none" else out.backward()
    ref, ref_grad = _numpy_reference(x, target, reduction)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    assert out.dtype == ember.float32 if dtype == np.float32 else out.dtype == ember.float64
    np.testing.assert_allclose(out.detach().numpy(), ref, **tol)
    np.testing.assert_allclose(logits.grad.numpy(), ref_grad, **tol)


def test_small_inputs_stay_on_numpy(every_size_compiled):
    x, t = np.zeros((4, 3), np.float32), np.array([0, 1, 2, 0])
    loss.MIN_VALUES = 13
    try:
        assert loss.cross_entropy_rows(x, t) is None and loss.cross_entropy_grad(x, t, 1.0) is None
        assert loss.cross_entropy_rows(np.zeros((5, 3), np.float32), np.zeros(5, np.int64)) is not None
    finally:
        loss.MIN_VALUES = 0


def test_the_kernels_serve_the_plain_case_only():
    x, t = np.zeros((4, 3), np.float32), np.array([0, 1, 2, 0])
    assert loss.cross_entropy_rows(x, t) is not None
    assert loss.cross_entropy_rows(x[:, :2], t) is None  # a strided input
    assert loss.cross_entropy_rows(x.astype(np.float16), t) is None
    assert loss.cross_entropy_rows(x, t.astype(np.int32)) is None
    assert loss.cross_entropy_rows(np.zeros((4, 3, 2), np.float32), np.zeros((4, 2), np.int64)) is None


def test_nan_and_infinite_rows_give_what_numpy_gives():
    x = np.array([[np.nan, 0.0, 1.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 0.0], [0.0, -np.inf, 2.0]],
                 np.float32)
    t = np.array([1, 0, 1, 2])
    logp, losses = loss.cross_entropy_rows(x, t)
    with np.errstate(invalid="ignore"):
        z = x - x.max(axis=1, keepdims=True)
        ref = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(logp, ref)  # NaN where NumPy has NaN, -inf where it has -inf
    np.testing.assert_allclose(losses, -ref[np.arange(4), t])


@pytest.mark.parametrize("kwargs", [dict(weight=ember.tensor([1.0, 2.0, 0.5])), dict(ignore_index=1),
                                    dict(label_smoothing=0.1)])
def test_weights_ignored_targets_and_smoothing_take_the_numpy_code(kwargs, monkeypatch):
    calls = []
    rows = loss.cross_entropy_rows
    monkeypatch.setattr("ember.ops.loss_classification.cross_entropy_rows",
                        lambda *a: calls.append(1) or rows(*a))
    x = ember.randn(5, 3, requires_grad=True)
    F.cross_entropy(x, ember.tensor([0, 1, 2, 1, 0]), **kwargs).backward()
    assert calls == [] and x.grad is not None


def test_second_derivatives_still_build_a_graph():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    target = ember.tensor([0, 3, 1])
    assert ember.autograd.gradcheck(lambda a: F.cross_entropy(a, target), (x,))
    assert ember.autograd.gradgradcheck(lambda a: F.cross_entropy(a, target), (x,))
