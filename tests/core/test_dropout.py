"""dropout and its channel-wise and alpha variants: statistics of the mask, seeding, gradients, in place, errors."""
import math
import warnings

import numpy as np
import pytest

import ember
from ember.ops.dropout import alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout
from tests.core.helpers import check_grads, rand64


def _np(t):
    return t.detach().numpy(force=True)


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_fraction_zeroed_and_mean_preserved(p, device):
    ember.manual_seed(1)
    n = 40000
    y = _np(dropout(ember.ones(n, device=device), p=p))
    zeroed = np.mean(y == 0)
    assert abs(zeroed - p) < 4 * math.sqrt(p * (1 - p) / n)  # within 4 standard deviations
    np.testing.assert_allclose(y[y != 0], 1 / (1 - p), rtol=1e-6)
    assert abs(y.mean() - 1) < 4 * math.sqrt(p / (1 - p) / n)


def test_same_seed_same_mask_and_fresh_masks_otherwise(device):
    x = ember.ones(50, device=device)
    ember.manual_seed(7)
    first, second = _np(dropout(x)), _np(dropout(x))
    ember.manual_seed(7)
    np.testing.assert_array_equal(_np(dropout(x)), first)
    assert (first != second).any()


def test_follows_explicit_generator_state(device):
    x = ember.ones(30, device=device)
    ember.manual_seed(3)
    state = ember.get_rng_state(device)
    a = _np(dropout(x))
    ember.set_rng_state(state, device)
    np.testing.assert_array_equal(_np(dropout(x)), a)


def test_gradient_is_the_same_mask(device):
    x = rand64(8, 5, device=device)
    ember.manual_seed(0)
    y = dropout(x, p=0.4)
    y.backward(ember.ones(8, 5, dtype=ember.float64, device=device))
    mask = _np(y) / _np(x)
    np.testing.assert_allclose(_np(x.grad), mask, rtol=1e-12)
    assert set(np.round(mask, 12).ravel()) <= {0.0, round(1 / 0.6, 12)}
    assert y.grad_fn.name() == "MulBackward0"

    def seeded(t):
        ember.manual_seed(0)
        return dropout(t, p=0.4)
    check_grads(seeded, x, gradgrad=True)


def test_not_training_and_zero_p_return_the_input_itself(device):
    x = ember.ones(3, device=device)
    assert dropout(x, training=False) is x
    assert dropout(x, p=0.0) is x
    assert dropout2d(ember.ones(1, 2, 2, 2, device=device), training=False).shape == (1, 2, 2, 2)
    assert alpha_dropout(x) is x  # off by default (training=False), as PyTorch
    assert _np(dropout(x, p=1.0)).tolist() == [0.0, 0.0, 0.0]


def test_probability_out_of_range():
    for fn in (dropout, dropout1d, dropout2d, dropout3d, alpha_dropout):
        for p in (-0.1, 1.5):
            with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, but got {p}"):
                fn(ember.ones(2, 2, 2, 2, 2), p=p)


def test_integer_input_is_refused():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        dropout(ember.tensor([1, 2]))


def _channel_values(y):
    """Per (sample, channel) the set of distinct values: one value means the whole channel was kept or dropped."""
    flat = y.reshape(y.shape[0], y.shape[1], -1)
    return [[set(flat[i, c].tolist()) for c in range(y.shape[1])] for i in range(y.shape[0])]


@pytest.mark.parametrize("fn,shape", [(dropout1d, (6, 8, 5)), (dropout2d, (6, 8, 3, 3)), (dropout3d, (4, 8, 2, 2, 2))])
def test_channel_dropout_masks_whole_channels(fn, shape, device):
    ember.manual_seed(2)
    y = _np(fn(ember.ones(*shape, device=device), p=0.5))
    for row in _channel_values(y):
        for values in row:
            assert values in ({0.0}, {2.0})
    dropped = np.mean(y.reshape(shape[0], shape[1], -1)[:, :, 0] == 0)
    assert 0.2 < dropped < 0.8


def test_unbatched_channel_dropout_masks_each_channel(device):
    ember.manual_seed(5)
    y = _np(dropout1d(ember.ones(16, 4, device=device)))  # (C, L)
    assert all(len(set(row.tolist())) == 1 for row in y)
    y3 = _np(dropout3d(ember.ones(16, 2, 2, 2, device=device)))  # (C, D, H, W)
    assert all(len(set(ch.ravel().tolist())) == 1 for ch in y3)


def test_channel_dropout_rank_checks_and_warnings():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        dropout1d(ember.ones(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                                         "1D dropout behavior is desired"):
        y = dropout2d(ember.ones(4, 6, 5))
    assert all(len(set(ch.tolist())) == 1 for row in _np(y) for ch in row)  # (N, C, L) channels
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input to dropout2d, which is deprecated"):
        dropout2d(ember.ones(3, 4))
    with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input to dropout3d, which is deprecated"):
        dropout3d(ember.ones(3, 4, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dropout2d(ember.ones(2, 3, 4, 4))
        dropout3d(ember.ones(2, 3, 2, 2, 2))


def test_inplace_writes_into_the_input_and_backpropagates(device):
    x = rand64(6, 4, device=device)
    h = x * 3
    ember.manual_seed(4)
    out = dropout(h, p=0.5, inplace=True)
    assert out is h and h._version == 1
    ember.manual_seed(4)
    expected = _np(dropout(x * 3, p=0.5))
    np.testing.assert_allclose(_np(h), expected)
    h.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 3 * (expected != 0) * 2.0)
    leaf = rand64(3, device=device)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        dropout(leaf, inplace=True)


def test_feature_dropout_inplace_keeps_shape(device):
    y = ember.ones(2, 3, 4, device=device)
    assert dropout1d(y, inplace=True) is y


# -- alpha dropout -----------------------------------------------------------------------------------------------------
# SELU's constants (Klambauer et al. 2017); alpha_dropout sends dropped units to -scale * alpha
_ALPHA, _SCALE = 1.6732632423543772, 1.0507009873554805


def test_alpha_dropout_values_and_statistics(device):
    p = 0.3
    ember.manual_seed(0)
    x = ember.randn(50000, device=device, dtype=ember.float64)
    y = _np(alpha_dropout(x, p=p, training=True))
    a_prime = -_ALPHA * _SCALE
    a = ((1 - p) * (1 + p * a_prime ** 2)) ** -0.5
    b = -a * a_prime * p
    xs = _np(x)
    kept = np.isclose(y, a * xs + b)
    dropped = np.isclose(y, a * a_prime + b)
    assert (kept | dropped).all()
    assert abs(dropped.mean() - p) < 0.01
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02  # zero mean, unit variance kept


def test_alpha_dropout_gradient_and_feature_variant(device):
    x = rand64(4, 6, 3, device=device)

    def seeded(t):
        ember.manual_seed(1)
        return alpha_dropout(t, p=0.4, training=True)
    check_grads(seeded, x, gradgrad=True)
    ember.manual_seed(3)
    y = _np(feature_alpha_dropout(ember.zeros(4, 6, 3, device=device), p=0.5, training=True))
    assert (y == y[:, :, :1]).all()
    assert len(set(np.round(y.ravel(), 6))) == 2
    assert _np(alpha_dropout(ember.ones(3, device=device), p=1.0, training=True)).tolist() == [0.0, 0.0, 0.0]
