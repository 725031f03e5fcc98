"""BatchNorm1d/2d/3d, LayerNorm, GroupNorm as modules: running statistics over steps, train/eval, buffers and
state dicts, reprs, gradients, errors."""
import numpy as np
import pytest

import ember
from ember import nn
from tests.core.helpers import check_grads, rand64


def _np(t):
    return t.detach().numpy(force=True)


def _batches(shape, n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(1.5 * i, 1.0 + i, size=shape) for i in range(n)]


def _per_channel_stats(x):
    axes = (0,) + tuple(range(2, x.ndim))
    count = x.size // x.shape[1]
    mean = x.mean(axis=axes)
    return mean, x.var(axis=axes) * count / (count - 1)


@pytest.mark.parametrize("layer,shape", [(nn.BatchNorm1d, (6, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                         (nn.BatchNorm2d, (2, 3, 4, 4)), (nn.BatchNorm3d, (2, 3, 2, 2, 2))])
def test_running_stats_after_steps_match_numpy(layer, shape):
    bn = layer(3, momentum=0.2).double()
    ref_mean, ref_var = np.zeros(3), np.ones(3)
    for batch in _batches(shape, 3):
        out = bn(ember.tensor(batch))
        mean, var = _per_channel_stats(batch)
        ref_mean, ref_var = 0.8 * ref_mean + 0.2 * mean, 0.8 * ref_var + 0.2 * var
        cshape = (1, 3) + (1,) * (len(shape) - 2)
        biased = batch.var(axis=(0,) + tuple(range(2, len(shape))))
        np.testing.assert_allclose(_np(out), (batch - mean.reshape(cshape)) / np.sqrt(biased.reshape(cshape) + 1e-5),
                                   rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(bn.running_mean), ref_mean, rtol=1e-12)
    np.testing.assert_allclose(_np(bn.running_var), ref_var, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 3 and bn.num_batches_tracked.dtype == ember.int64


def test_momentum_none_is_a_cumulative_average():
    bn = nn.BatchNorm1d(2, momentum=None).double()
    batches = _batches((5, 2), 4, seed=1)
    for batch in batches:
        bn(ember.tensor(batch))
    stats = [_per_channel_stats(b) for b in batches]
    np.testing.assert_allclose(_np(bn.running_mean), np.mean([s[0] for s in stats], axis=0), rtol=1e-12)
    np.testing.assert_allclose(_np(bn.running_var), np.mean([s[1] for s in stats], axis=0), rtol=1e-12)


def test_eval_mode_uses_running_stats_and_leaves_them_alone():
    bn = nn.BatchNorm2d(2).double()
    f64 = ember.float64
    with ember.no_grad():
        bn.weight.copy_(ember.tensor([2.0, 0.5], dtype=f64))
        bn.bias.copy_(ember.tensor([1.0, -1.0], dtype=f64))
        bn.running_mean.copy_(ember.tensor([0.3, -0.2], dtype=f64))
        bn.running_var.copy_(ember.tensor([4.0, 0.25], dtype=f64))
    bn.eval()
    x = _batches((3, 2, 2, 2), 1)[0]
    out = bn(ember.tensor(x))
    c = (1, 2, 1, 1)
    ref = (x - np.array([0.3, -0.2]).reshape(c)) / np.sqrt(np.array([4.0, 0.25]).reshape(c) + 1e-5)
    np.testing.assert_allclose(_np(out), ref * np.array([2.0, 0.5]).reshape(c) + np.array([1.0, -1.0]).reshape(c),
                               rtol=1e-12)
    assert _np(bn.running_mean).tolist() == [0.3, -0.2] and bn.num_batches_tracked.item() == 0
    one = bn(ember.tensor(x[:1, :, :1, :1]))  # a single value per channel is fine in evaluation
    assert one.shape == (1, 2, 1, 1)


def test_without_running_stats_batch_stats_are_used_in_eval_too():
    bn = nn.BatchNorm1d(2, track_running_stats=False).double().eval()
    assert bn.running_mean is None and bn.num_batches_tracked is None
    assert list(bn.state_dict()) == ["weight", "bias"]
    x = _batches((4, 2), 1)[0]
    np.testing.assert_allclose(_np(bn(ember.tensor(x))), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-10)


def test_parameters_buffers_and_state_dict():
    bn = nn.BatchNorm2d(4)
    sd = bn.state_dict()
    assert list(sd) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert [tuple(v.shape) for v in sd.values()] == [(4,), (4,), (4,), (4,), ()]
    assert sd["num_batches_tracked"].dtype == ember.int64 and sd["running_var"].tolist() == [1.0] * 4
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    assert bn.weight.tolist() == [1.0] * 4 and bn.bias.tolist() == [0.0] * 4
    assert list(nn.BatchNorm1d(3, affine=False).state_dict()) == ["running_mean", "running_var",
                                                                 "num_batches_tracked"]
    no_bias = nn.BatchNorm1d(3, bias=False)
    assert [n for n, _ in no_bias.named_parameters()] == ["weight"] and no_bias.bias is None
    doubled = nn.BatchNorm1d(2).double()
    assert doubled.running_mean.dtype == ember.float64 and doubled.num_batches_tracked.dtype == ember.int64


def test_state_dict_round_trip_and_old_checkpoints_without_counter():
    src = nn.BatchNorm1d(3)
    for batch in _batches((5, 3), 2):
        src(ember.tensor(batch, dtype=ember.float32))
    dst = nn.BatchNorm1d(3)
    dst.load_state_dict(src.state_dict())
    for key in ("running_mean", "running_var"):
        np.testing.assert_array_equal(_np(getattr(dst, key)), _np(getattr(src, key)))
    assert dst.num_batches_tracked.item() == 2
    old = {k: v for k, v in src.state_dict().items() if k != "num_batches_tracked"}
    fresh = nn.BatchNorm1d(3)
    fresh.load_state_dict(old)  # no missing-key error: the counter is filled in
    assert fresh.num_batches_tracked.item() == 0
    np.testing.assert_array_equal(_np(fresh.running_var), _np(src.running_var))


def test_reprs():
    # strings printed by torch 2.13 for the same constructions (taken by hand)
    assert repr(nn.BatchNorm1d(3)) == ("BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                                       "track_running_stats=True)")
    assert repr(nn.BatchNorm2d(64, momentum=None, affine=False, track_running_stats=False)) == (
        "BatchNorm2d(64, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=False)")
    assert repr(nn.LayerNorm(4)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.LayerNorm((3, 4), elementwise_affine=False)) == (
        "LayerNorm((3, 4), eps=1e-05, elementwise_affine=False, bias=False)")
    assert repr(nn.LayerNorm(4, bias=False)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=False)"
    assert repr(nn.GroupNorm(2, 4)) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert repr(nn.GroupNorm(2, 4, affine=False)) == "GroupNorm(2, 4, eps=1e-05, affine=False, bias=False)"


def test_gradients_through_the_modules():
    bn = nn.BatchNorm2d(3).double()
    with ember.no_grad():
        bn.weight.copy_(ember.tensor([1.5, -0.5, 2.0]))
    x = rand64(2, 3, 2, 2)
    check_grads(bn, x, gradgrad=True)
    bn(x).sum().backward()
    np.testing.assert_allclose(_np(bn.bias.grad), [8.0, 8.0, 8.0])  # d sum(y) / d bias = values per channel
    np.testing.assert_allclose(_np(bn.weight.grad), 0.0, atol=1e-12)  # the normalised values sum to zero
    np.testing.assert_allclose(_np(x.grad), 0.0, atol=1e-12)
    ln = nn.LayerNorm((2, 2)).double()
    check_grads(ln, x, gradgrad=True)
    gn = nn.GroupNorm(3, 3).double()
    check_grads(gn, x, gradgrad=True)


def test_layer_norm_and_group_norm_values():
    x = _batches((2, 4, 3), 1, seed=3)[0]
    ln = nn.LayerNorm(3).double()
    with ember.no_grad():
        ln.weight.copy_(ember.tensor([1.0, 2.0, 3.0]))
        ln.bias.fill_(0.5)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * [1.0, 2.0, 3.0] + 0.5
    np.testing.assert_allclose(_np(ln(ember.tensor(x))), ref, rtol=1e-10)
    assert list(nn.LayerNorm(3, elementwise_affine=False).parameters()) == []
    gn = nn.GroupNorm(2, 4, eps=1e-3).double()
    grouped = x.reshape(2, 2, 6)
    ref = ((grouped - grouped.mean(-1, keepdims=True)) / np.sqrt(grouped.var(-1, keepdims=True) + 1e-3))
    np.testing.assert_allclose(_np(gn(ember.tensor(x))), ref.reshape(x.shape), rtol=1e-10)
    assert list(gn.state_dict()) == ["weight", "bias"]


def test_errors_name_the_layer_and_shapes():
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\): BatchNorm1d\(3\) got input of "
                                         r"size \[2, 3, 4, 5\]"):
        nn.BatchNorm1d(3)(ember.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(ember.ones(2, 3, 4))
    with pytest.raises(RuntimeError, match=r"BatchNorm2d\(3\): expected input with 3 channels \(dim 1\), got input of "
                                           r"size \[2, 4, 5, 5\]"):
        nn.BatchNorm2d(3)(ember.ones(2, 4, 5, 5))
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(ember.ones(1, 3))
    with pytest.raises(RuntimeError, match=r"LayerNorm\(4,\): Given normalized_shape=\[4\], expected input with shape "
                                           r"\[\*, 4\], but got input of size\[2, 3\]"):
        nn.LayerNorm(4)(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"GroupNorm\(2, 4\): expected input with 4 channels \(dim 1\), got input "
                                           r"of size \[2, 6\]"):
        nn.GroupNorm(2, 4)(ember.ones(2, 6))
    with pytest.raises(ValueError, match=r"num_channels \(4\) must be divisible by num_groups \(3\)"):
        nn.GroupNorm(3, 4)
