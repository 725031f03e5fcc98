"""ember.amp.GradScaler against a hand-computed sequence of scales and skipped steps (checked by hand against
``torch.amp.GradScaler("cpu")`` of PyTorch 2.13, which gives the same figures), and its errors and state."""
from __future__ import annotations

import math

import pytest

import ember
from ember.amp import GradScaler


def _setup(lr=0.1):
    w = ember.ones(2, requires_grad=True)
    return w, ember.optim.SGD([w], lr=lr)


def _iteration(scaler, w, opt, bad):
    opt.zero_grad()
    loss = (w * w).sum() * (math.inf if bad else 1.0)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    grad = w.grad.tolist()
    ret = scaler.step(opt)
    scaler.update()
    return grad, ret


def test_scales_and_skipped_steps_follow_the_hand_computed_sequence():
    scaler = GradScaler("cpu", init_scale=8.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)
    w, opt = _setup()
    # (inf in the loss?, scale after update, growth tracker after update, w after the step)
    # growth after 2 clean steps in a row, halving (and the count reset) at each inf; w -= 0.1 * 2w when stepped
    expected = [
        (False, 8.0, 1, 0.8),
        (False, 16.0, 0, 0.64),
        (True, 8.0, 0, 0.64),     # skipped
        (False, 8.0, 1, 0.512),
        (False, 16.0, 0, 0.4096),
        (False, 16.0, 1, 0.32768),
        (True, 8.0, 0, 0.32768),  # skipped
        (True, 4.0, 0, 0.32768),  # skipped
    ]
    w_before = 1.0
    for bad, scale, tracker, w_after in expected:
        grad, ret = _iteration(scaler, w, opt, bad)
        assert ret is None  # SGD.step returns None; a skipped step returns None as well
        if bad:
            assert all(math.isinf(g) for g in grad)
        else:
            assert grad == pytest.approx([2 * w_before] * 2, rel=1e-6)  # unscaled: the true gradient
        assert scaler.get_scale() == scale and scaler._get_growth_tracker() == tracker
        assert w.tolist() == pytest.approx([w_after] * 2, rel=1e-6)
        w_before = w_after
    assert scaler.state_dict() == {"scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2,
                                   "_growth_tracker": 0}


def test_step_returns_the_optimizers_result_and_unscales_when_unscale_was_not_called():
    w = ember.ones(2, requires_grad=True)

    class Recording:
        param_groups = [{"params": [w]}]

        def step(self, *args, **kwargs):
            self.seen = (w.grad.tolist(), args, kwargs)
            return "stepped"

    opt = Recording()
    scaler = GradScaler("cpu", init_scale=4.0)
    scaler.scale((w * 3).sum()).backward()
    assert w.grad.tolist() == [12.0, 12.0]
    assert scaler.step(opt, 1, key=2) == "stepped"
    assert opt.seen == ([3.0, 3.0], (1,), {"key": 2})


def test_scale_multiplies_nested_outputs_in_float32():
    scaler = GradScaler("cpu", init_scale=4.0)
    a, b = ember.tensor(1.0), ember.tensor([2.0, 3.0])
    out = scaler.scale([a, (b, a)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    assert out[0].item() == 4.0 and out[1][0].tolist() == [8.0, 12.0]
    low = scaler.scale(ember.tensor(1.5).bfloat16())
    assert low.dtype is ember.float32 and low.shape == () and low.item() == 6.0
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale(3.0)


def test_clipping_after_unscale_sees_the_true_gradients():
    w = ember.tensor([1.0, 1.0], requires_grad=True)
    opt = ember.optim.SGD([w], lr=1.0)
    scaler = GradScaler("cpu", init_scale=1024.0)
    scaler.scale((w * ember.tensor([3.0, 4.0])).sum()).backward()
    scaler.unscale_(opt)
    assert w.grad.tolist() == [3.0, 4.0]
    total = ember.nn.utils.clip_grad_norm_([w], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    scaler.step(opt)  # does not unscale a second time
    scaler.update()
    assert w.tolist() == pytest.approx([1.0 - 0.6, 1.0 - 0.8], rel=1e-5)


def test_calls_out_of_order_raise_pytorchs_errors():
    w, opt = _setup()
    scaler = GradScaler("cpu")
    with pytest.raises(RuntimeError, match="Attempted step but _scale is None"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Attempted update but _scale is None"):
        scaler.update()
    scaler.scale((w * w).sum())
    with pytest.raises(RuntimeError, match="No inf checks were recorded prior to update"):
        scaler.update()
    idle = ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1)
    with pytest.raises(RuntimeError, match="No inf checks were recorded for this optimizer"):
        scaler.step(idle)  # no parameter has a gradient
    scaler.scale((w * w).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0.0)
    scaler.update()
    scaler.unscale_(opt)  # a new iteration after update()


def test_float16_gradients_are_refused():
    w = ember.ones(2, dtype=ember.float16, requires_grad=True)
    scaler = GradScaler("cpu")
    scaler.scale((w * w).sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.unscale_(ember.optim.SGD([w], lr=0.1))


def test_update_with_a_new_scale():
    w, opt = _setup()
    scaler = GradScaler("cpu")
    scaler.scale((w * w).sum()).backward()
    scaler.step(opt)
    scaler.update(3.0)
    assert scaler.get_scale() == 3.0
    scaler.update(ember.tensor([0.5]))
    assert scaler.get_scale() == 0.5
    with pytest.raises(ValueError, match="1-element float tensor"):
        scaler.update(ember.tensor([2.0, 1.0]))
    with pytest.raises(TypeError, match="new_scale should be a float"):
        scaler.update("2")


def test_the_scale_is_kept_in_float32_and_never_grows_to_inf():
    w, opt = _setup(lr=0.0)
    scaler = GradScaler("cpu", init_scale=1.1, growth_factor=1.5, growth_interval=1)
    seen = []
    for _ in range(3):
        opt.zero_grad()
        scaler.scale(w.sum()).backward()
        scaler.step(opt)
        scaler.update()
        seen.append(scaler.get_scale())
    assert seen == [1.6500000953674316, 2.4750001430511475, 3.7125000953674316]  # PyTorch's figures
    huge = GradScaler("cpu", init_scale=3e38, growth_interval=1)
    opt.zero_grad()
    huge.scale(w.sum() * 0).backward()
    huge.step(opt)
    huge.update()
    assert huge.get_scale() == 3.0000000054977558e+38 and huge._get_growth_tracker() == 0


def test_state_dict_round_trip_and_disabled_scaler():
    scaler = GradScaler("cpu", init_scale=2.0 ** 16)
    state = {"scale": 4.0, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 5, "_growth_tracker": 2}
    scaler.load_state_dict(state)
    assert scaler.get_scale() == 4.0 and scaler.state_dict() == state
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (3.0, 0.25, 5)
    with pytest.raises(RuntimeError, match="saved from a disabled instance"):
        scaler.load_state_dict({})
    with pytest.raises(KeyError, match="lacks"):
        scaler.load_state_dict({"scale": 1.0})
    off = GradScaler("cpu", enabled=False)
    w, opt = _setup()
    loss = (w * w).sum()
    assert not off.is_enabled() and off.scale(loss) is loss
    assert off.get_scale() == 1.0 and off.state_dict() == {}
    loss.backward()
    off.unscale_(opt)
    off.step(opt)
    off.update()
    assert w.tolist() == pytest.approx([0.8, 0.8])


def test_bad_arguments_say_what_was_expected():
    with pytest.raises(ValueError, match="growth factor must be > 1.0"):
        GradScaler("cpu", growth_factor=0.5)
    with pytest.raises(ValueError, match="backoff factor must be < 1.0"):
        GradScaler("cpu", backoff_factor=1.5)
    with pytest.raises(ValueError, match="growth_interval must be a positive int"):
        GradScaler("cpu", growth_interval=0)
    with pytest.raises(TypeError, match="device type string"):
        GradScaler(ember.device("cpu"))
    w = ember.ones(1, requires_grad=True)
    scaler = GradScaler("cpu")
    scaler.scale(w.sum()).backward()
    with pytest.raises(TypeError, match="param_groups"):
        scaler.unscale_(object())
