"""batch_norm, layer_norm, group_norm, instance_norm: values against NumPy loops, running statistics,
first and second derivatives, errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.ops.normalization import batch_norm, group_norm, instance_norm, layer_norm
from tests.core.helpers import check_grads, rand64


def _np(t):
    return t.detach().numpy(force=True)


# -- NumPy references, one channel / group / sample at a time ------------------------------------------------------
def _ref_batch_norm_train(x, w, b, eps):
    out = np.empty_like(x)
    means, vars_ = [], []
    for c in range(x.shape[1]):
        vals = x[:, c]
        m = vals.sum() / vals.size
        v = ((vals - m) ** 2).sum() / vals.size
        out[:, c] = (vals - m) / np.sqrt(v + eps) * (1 if w is None else w[c]) + (0 if b is None else b[c])
        means.append(m)
        vars_.append(v * vals.size / (vals.size - 1))
    return out, np.array(means), np.array(vars_)


def _ref_batch_norm_eval(x, rm, rv, w, b, eps):
    out = np.empty_like(x)
    for c in range(x.shape[1]):
        out[:, c] = (x[:, c] - rm[c]) / np.sqrt(rv[c] + eps) * w[c] + b[c]
    return out


def _ref_group_norm(x, groups, w, b, eps):
    n, c = x.shape[:2]
    out = np.empty_like(x)
    per = c // groups
    for i in range(n):
        for g in range(groups):
            block = x[i, g * per:(g + 1) * per]
            out[i, g * per:(g + 1) * per] = (block - block.mean()) / np.sqrt(block.var() + eps)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return out * w.reshape(shape) + b.reshape(shape)


# -- batch norm -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 5), (2, 3, 3, 2)])
def test_batch_norm_training_values_and_running_stats(shape, device):
    x, w, b = rand64(*shape, device=device), rand64(3, device=device, seed=1), rand64(3, device=device, seed=2)
    rm = ember.tensor([0.5, -0.5, 0.0], dtype=ember.float64, device=device)
    rv = ember.tensor([1.0, 2.0, 0.5], dtype=ember.float64, device=device)
    rm0, rv0 = _np(rm).copy(), _np(rv).copy()
    out = batch_norm(x, rm, rv, w, b, training=True, momentum=0.3, eps=1e-3)
    ref, mean, var = _ref_batch_norm_train(_np(x), _np(w), _np(b), 1e-3)
    np.testing.assert_allclose(_np(out), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(rm), 0.7 * rm0 + 0.3 * mean, rtol=1e-12)
    np.testing.assert_allclose(_np(rv), 0.7 * rv0 + 0.3 * var, rtol=1e-12)  # unbiased variance, as PyTorch
    assert rm._version == 2 and out.grad_fn.name() == "NativeBatchNormBackward0"


def test_batch_norm_running_stats_over_several_steps(device):
    rm, rv = ember.zeros(2, device=device), ember.ones(2, device=device)
    ref_m, ref_v = np.zeros(2), np.ones(2)
    for step in range(3):
        x = rand64(6, 2, device=device, seed=step, requires_grad=False).float() * (step + 1)
        batch_norm(x, rm, rv, training=True)
        _, mean, var = _ref_batch_norm_train(_np(x).astype(np.float64), None, None, 1e-5)
        ref_m, ref_v = 0.9 * ref_m + 0.1 * mean, 0.9 * ref_v + 0.1 * var
    assert rm.dtype == ember.float32
    np.testing.assert_allclose(_np(rm), ref_m, rtol=1e-5)
    np.testing.assert_allclose(_np(rv), ref_v, rtol=1e-5)


def test_batch_norm_eval_uses_running_stats(device):
    x, w, b = rand64(4, 3, 2, device=device), rand64(3, device=device, seed=1), rand64(3, device=device, seed=2)
    rm = rand64(3, device=device, seed=3, requires_grad=False)
    rv = rand64(3, device=device, seed=4, low=0.5, high=2.0, requires_grad=False)
    out = batch_norm(x, rm, rv, w, b, training=False, eps=1e-2)
    np.testing.assert_allclose(_np(out), _ref_batch_norm_eval(_np(x), _np(rm), _np(rv), _np(w), _np(b), 1e-2),
                               rtol=1e-10)
    assert rm._version == 0 and out.grad_fn.name() == "NativeBatchNormBackward0"


def test_batch_norm_without_running_stats_or_affine(device):
    x = rand64(6, 2, 3, device=device)
    ref, _, _ = _ref_batch_norm_train(_np(x), None, None, 1e-5)
    np.testing.assert_allclose(_np(batch_norm(x, None, None, training=True)), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradients_first_and_second(training, device):
    x, w, b = rand64(4, 3, 2, device=device), rand64(3, device=device, seed=1), rand64(3, device=device, seed=2)
    rm = rand64(3, device=device, seed=3, requires_grad=False)
    rv = rand64(3, device=device, seed=4, low=0.5, high=2.0, requires_grad=False)
    check_grads(lambda x, w, b: batch_norm(x, rm, rv, w, b, training=training), x, w, b, gradgrad=True)
    check_grads(lambda x: batch_norm(x, rm, rv, training=training), x, gradgrad=True)


def test_batch_norm_float32_stays_float32(device):
    x = ember.randn(4, 3, device=device)
    assert batch_norm(x, ember.zeros(3, device=device), ember.ones(3, device=device), training=True).dtype \
        == ember.float32


def test_batch_norm_errors():
    x = ember.randn(1, 3)
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"ember.Size\(\[1, 3\]\)"):
        batch_norm(x, ember.zeros(3), ember.ones(3), training=True)
    batch_norm(x, ember.zeros(3), ember.ones(3), training=False)  # a single sample is fine in evaluation
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        batch_norm(ember.randn(2, 3), None, None)
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
        batch_norm(ember.randn(2, 4), ember.zeros(3), ember.ones(3), training=True)
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        batch_norm(ember.randn(2, 3), ember.zeros(3), ember.ones(3), ember.ones(4))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        batch_norm(ember.randn(3), ember.zeros(3), ember.ones(3))


# -- layer norm -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("normalized_shape", [(4,), (3, 4), [2, 3, 4]])
def test_layer_norm_values_and_gradients(normalized_shape, device):
    x = rand64(2, 3, 4, device=device, low=-2, high=3)
    w = rand64(*normalized_shape, device=device, seed=1)
    b = rand64(*normalized_shape, device=device, seed=2)
    out = layer_norm(x, normalized_shape, w, b, eps=1e-4)
    a = _np(x)
    flat = a.reshape(-1, int(np.prod(normalized_shape)))
    ref = np.stack([(row - row.mean()) / np.sqrt(row.var() + 1e-4) for row in flat]).reshape(a.shape)
    np.testing.assert_allclose(_np(out), ref * _np(w) + _np(b), rtol=1e-10, atol=1e-12)
    assert out.grad_fn.name() == "NativeLayerNormBackward0"
    check_grads(lambda x, w, b: layer_norm(x, normalized_shape, w, b), x, w, b, gradgrad=True)
    check_grads(lambda x: layer_norm(x, normalized_shape), x, gradgrad=True)


@settings(max_examples=15, deadline=None)
@given(lead=st.lists(st.integers(1, 3), min_size=0, max_size=2), last=st.lists(st.integers(2, 4), min_size=1,
                                                                                max_size=2))
def test_layer_norm_normalises_the_trailing_dims(lead, last):
    x = ember.tensor(np.random.default_rng(0).normal(3.0, 2.0, size=lead + last))
    out = _np(layer_norm(x, last, eps=0.0))
    axes = tuple(range(len(lead), len(lead) + len(last)))
    np.testing.assert_allclose(out.mean(axis=axes), 0.0, atol=1e-12)
    np.testing.assert_allclose(out.var(axis=axes), 1.0, rtol=1e-10)


def test_layer_norm_errors():
    x = ember.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3\], expected input with shape \[\*, 3\], "
                                           r"but got input of size\[2, 3, 4\]"):
        layer_norm(x, (3,))
    with pytest.raises(TypeError, match="'normalized_shape' .* must be tuple of ints, not int"):
        layer_norm(x, 4)
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape, but got weight "
                                           r"of shape \[3\] and normalized_shape = \[4\]"):
        layer_norm(x, (4,), ember.ones(3))


# -- group norm -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,groups", [((2, 6), 3), ((2, 4, 3), 2), ((1, 6, 2, 2), 6), ((2, 4, 2, 1), 1)])
def test_group_norm_values_and_gradients(shape, groups, device):
    c = shape[1]
    x, w, b = rand64(*shape, device=device), rand64(c, device=device, seed=1), rand64(c, device=device, seed=2)
    out = group_norm(x, groups, w, b, eps=1e-3)
    np.testing.assert_allclose(_np(out), _ref_group_norm(_np(x), groups, _np(w), _np(b), 1e-3), rtol=1e-10,
                               atol=1e-12)
    assert out.grad_fn.name() == "NativeGroupNormBackward0"
    check_grads(lambda x, w, b: group_norm(x, groups, w, b), x, w, b, gradgrad=True)


def test_group_norm_errors():
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, but "
                                           r"got input of shape \[2, 3, 4\] and num_groups=2"):
        group_norm(ember.randn(2, 3, 4), 2)
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        group_norm(ember.randn(3), 1)
    with pytest.raises(RuntimeError, match=r"Expected weight to be a vector of size equal to the number of channels in "
                                           r"input, but got weight of shape \[4\] and input of shape \[2, 3, 4\]"):
        group_norm(ember.randn(2, 3, 4), 3, ember.ones(4))


# -- instance norm ----------------------------------------------------------------------------------------------------
def test_instance_norm_values_running_stats_and_gradients(device):
    x, w, b = rand64(2, 3, 4, device=device), rand64(3, device=device, seed=1), rand64(3, device=device, seed=2)
    rm = ember.zeros(3, dtype=ember.float64, device=device)
    rv = ember.ones(3, dtype=ember.float64, device=device)
    out = instance_norm(x, rm, rv, w, b, momentum=0.5)
    a = _np(x)
    ref = (a - a.mean(2, keepdims=True)) / np.sqrt(a.var(2, keepdims=True) + 1e-5)
    np.testing.assert_allclose(_np(out), ref * _np(w)[:, None] + _np(b)[:, None], rtol=1e-10, atol=1e-12)
    # running statistics: the average over the batch of each sample's (unbiased) statistics
    np.testing.assert_allclose(_np(rm), 0.5 * a.mean(2).mean(0), rtol=1e-12)
    np.testing.assert_allclose(_np(rv), 0.5 + 0.5 * a.var(2, ddof=1).mean(0), rtol=1e-12)
    evaluated = instance_norm(x, rm, rv, use_input_stats=False)
    np.testing.assert_allclose(_np(evaluated), (a - _np(rm)[:, None]) / np.sqrt(_np(rv)[:, None] + 1e-5), rtol=1e-10)
    check_grads(lambda x, w, b: instance_norm(x, None, None, w, b), x, w, b, gradgrad=True)
