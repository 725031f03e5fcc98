"""softmax and log_softmax: values, stability, dtypes, gradients (first and second), errors."""
import numpy as np
import pytest

import ember
from tests.core.helpers import check_grads, rand64


def _np_softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_values_match_numpy(dim, device):
    x = rand64(3, 4, device=device, low=-3, high=3)
    ref = _np_softmax(x.detach().numpy(force=True), dim)
    np.testing.assert_allclose(ember.softmax(x, dim).detach().numpy(force=True), ref, rtol=1e-12)
    np.testing.assert_allclose(x.log_softmax(dim=dim).detach().numpy(force=True), np.log(ref), rtol=1e-12)
    np.testing.assert_allclose(ember.softmax(x, dim).sum(dim).detach().numpy(force=True), 1.0)


def test_names_and_gradients(device):
    x = rand64(3, 4, device=device, low=-2, high=2)
    assert x.softmax(1).grad_fn.name() == "SoftmaxBackward0"
    assert ember.log_softmax(x, 0).grad_fn.name() == "LogSoftmaxBackward0"
    for dim in (0, 1):
        check_grads(lambda t: ember.softmax(t, dim), x, gradgrad=True)
        check_grads(lambda t: ember.log_softmax(t, dim), x, gradgrad=True)


def test_stable_for_large_and_very_negative_inputs(device):
    big = ember.tensor([1000.0, 1000.0, -1000.0], device=device)
    assert big.softmax(0).tolist() == [0.5, 0.5, 0.0]
    lsm = big.log_softmax(0).tolist()
    assert lsm[0] == pytest.approx(-0.6931472) and lsm[2] == pytest.approx(-2000.6931472)
    with_inf = ember.tensor([0.0, -float("inf")], device=device)
    assert with_inf.softmax(0).tolist() == [1.0, 0.0]
    assert np.isnan(ember.tensor([-float("inf")] * 2, device=device).softmax(0).numpy(force=True)).all()


def test_dtype_argument_and_integer_inputs(device):
    i = ember.tensor([1, 2, 3], device=device)
    out = ember.softmax(i, 0, dtype=ember.float64)
    assert out.dtype == ember.float64
    np.testing.assert_allclose(out.numpy(force=True), _np_softmax(np.array([1.0, 2.0, 3.0]), 0))
    assert ember.tensor([1.0], device=device).log_softmax(0, dtype=ember.float64).dtype == ember.float64
    with pytest.raises(NotImplementedError, match="\"softmax\" not implemented for 'Long'"):
        ember.softmax(i, 0)
    with pytest.raises(NotImplementedError, match="\"log_softmax\" not implemented for 'Long'"):
        i.log_softmax(0)


def test_zero_dim_and_errors(device):
    s = ember.tensor(3.0, device=device)
    assert s.softmax(0).item() == 1.0 and s.log_softmax(-1).item() == 0.0
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], "
                                         r"but got 2\)"):
        ember.softmax(ember.tensor([1.0, 2.0]), 2)
    with pytest.raises(TypeError, match="missing 1 required positional argument: \"dim\""):
        ember.softmax(ember.tensor([1.0]))


def test_infinite_nan_and_empty_slices_as_pytorch(device):
    """PyTorch 2.13 (checked by hand): a slice holding +inf or NaN, or only -inf, comes out all NaN; an empty
    dimension gives an empty result."""
    inf, nan = float("inf"), float("nan")
    x = ember.tensor([[inf, 1.0, -inf], [nan, 1.0, 2.0], [-inf, -inf, -inf], [1000.0, 1000.0, -inf]], device=device)
    for fn in (ember.softmax, ember.log_softmax):
        out = fn(x, 1).tolist()
        assert str(out[:3]) == "[[nan, nan, nan], [nan, nan, nan], [nan, nan, nan]]"
    assert ember.softmax(x, 1)[3].tolist() == [0.5, 0.5, 0.0]
    empty = ember.zeros(3, 0, device=device, requires_grad=True)
    assert tuple(ember.softmax(empty, 1).shape) == (3, 0) and tuple(ember.log_softmax(empty, 1).shape) == (3, 0)
    ember.softmax(empty, 1).sum().backward()
    assert tuple(empty.grad.shape) == (3, 0)
