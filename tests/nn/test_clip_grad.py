"""clip_grad_norm_ / clip_grad_value_ (and get_total_norm, clip_grads_with_norm_) against NumPy."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from ember.nn.utils import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm


def with_grads(*grads, dtype=ember.float32, device="cpu"):
    params = []
    for g in grads:
        p = ember.zeros(np.shape(g), dtype=dtype, device=device, requires_grad=True)
        p.grad = ember.tensor(np.asarray(g), dtype=dtype, device=device)
        params.append(p)
    return params


def grad_arrays(params):
    return [p.grad.numpy(force=True).astype(np.float64) for p in params if p.grad is not None]


def numpy_total_norm(arrays, norm_type):
    flat = np.concatenate([a.ravel() for a in arrays])
    if norm_type == math.inf:
        return np.abs(flat).max()
    return (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)


GRADS = ([[3.0, -4.0], [1.0, 2.0]], [0.5, -6.0, 2.0], [[[1.5]]])


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm(norm_type, max_norm):
    params = with_grads(*GRADS, dtype=ember.float64)
    before = grad_arrays(params)
    grad_objects = [p.grad for p in params]
    total = clip_grad_norm_(params, max_norm, norm_type=norm_type)
    expected = numpy_total_norm(before, float(norm_type))
    assert total.shape == () and total.dtype is ember.float64
    assert total.item() == pytest.approx(expected, rel=1e-12)
    scale = min(1.0, max_norm / (expected + 1e-6))
    for p, g, b in zip(params, grad_objects, before):
        assert p.grad is g  # scaled in place
        np.testing.assert_allclose(g.numpy(), b * scale, rtol=1e-12)
    if scale < 1:
        assert numpy_total_norm(grad_arrays(params), float(norm_type)) == pytest.approx(max_norm, rel=1e-5)


@settings(max_examples=25, deadline=None)
@given(arrays=st.lists(hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
                                  elements=st.floats(-100, 100)), min_size=1, max_size=4),
       norm_type=st.sampled_from([1.0, 2.0, 3.0, math.inf]))
def test_total_norm_is_the_norm_of_the_concatenation(arrays, norm_type):
    total = get_total_norm([ember.tensor(a) for a in arrays], norm_type)
    assert total.item() == pytest.approx(numpy_total_norm(arrays, norm_type), rel=1e-12, abs=1e-300)


def test_float32_and_mixed_dtypes():
    params = with_grads(*GRADS)
    total = clip_grad_norm_(params, 1.0)
    assert total.dtype is ember.float32 and all(p.grad.dtype is ember.float32 for p in params)
    mixed = with_grads([3.0], dtype=ember.float32) + with_grads([4.0], dtype=ember.float64)
    total = clip_grad_norm_(mixed, 1.0)
    assert total.dtype is ember.float64 and total.item() == pytest.approx(5.0)
    assert mixed[0].grad.dtype is ember.float32 and mixed[0].grad.item() == pytest.approx(0.6, rel=1e-6)


def test_params_without_grads_and_single_tensor():
    a, b = with_grads([3.0, 4.0])[0], ember.zeros(2, requires_grad=True)
    total = clip_grad_norm_([a, b], 1.0)
    assert total.item() == pytest.approx(5.0) and b.grad is None
    assert clip_grad_norm_(b, 1.0).item() == 0.0  # no gradients at all: a zero norm
    c = with_grads([[0.0, -2.0]])[0]
    assert clip_grad_norm_(c, 1.0, norm_type=1).item() == 2.0
    assert c.grad.tolist() == [[0.0, pytest.approx(-2.0 / (2.0 + 1e-6), rel=1e-7)]]


def test_nonfinite_norms():
    params = with_grads([1.0, math.inf])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert math.isinf(clip_grad_norm_(params, 1.0).item())  # allowed by default
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(with_grads([math.nan]), 1.0, error_if_nonfinite=True)


def test_empty_generator_warns_and_deprecated_name():
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur."):
        assert clip_grad_norm_((p for p in []), 1.0).item() == 0.0
    with pytest.warns(FutureWarning, match="deprecated in favor of `ember.nn.utils.clip_grad_norm_`"):
        clip_grad_norm(with_grads([1.0]), 1.0)


def test_clip_grads_with_a_given_norm():
    params = with_grads([1.0, 1.0], [2.0])
    clip_grads_with_norm_(params, max_norm=1.0, total_norm=ember.tensor(4.0))
    np.testing.assert_allclose(grad_arrays(params)[0], [1 / (4 + 1e-6)] * 2, rtol=1e-6)


def test_clip_grad_value():
    a, b = with_grads([[-3.0, 0.25], [2.0, -0.5]], [7.0])
    none = ember.zeros(1, requires_grad=True)
    grad = a.grad
    assert clip_grad_value_([a, b, none], clip_value=1) is None
    assert a.grad is grad and a.grad.tolist() == [[-1.0, 0.25], [1.0, -0.5]] and b.grad.tolist() == [1.0]
    clip_grad_value_(a, 0.3)
    np.testing.assert_allclose(grad_arrays([a])[0], [[-0.3, 0.25], [0.3, -0.3]], rtol=1e-6)


def test_other_backend(device):
    params = with_grads(*GRADS, dtype=ember.float64, device=device)
    total = clip_grad_norm_(params, 1.0)
    assert total.device.type == device
    assert total.item() == pytest.approx(numpy_total_norm([np.asarray(g, dtype=float) for g in GRADS], 2), rel=1e-12)
    assert numpy_total_norm(grad_arrays(params), 2) == pytest.approx(1.0, rel=1e-5)
    clip_grad_value_(params, 0.1)
    assert max(np.abs(g).max() for g in grad_arrays(params)) <= 0.1
