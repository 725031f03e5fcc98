"""ember.parallel.Pipe on two logical CPU devices: outputs and gradients equal the unpipelined model's, stages
run at the same time, checkpointing recomputes without changing the result, and bad setups are named."""
import threading

import numpy as np
import pytest

import ember
from ember import nn
from ember.parallel import Pipe


@pytest.fixture(autouse=True)
def _two_devices(two_cpus):
    yield


def _model(seed=0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 8), nn.Sigmoid(), nn.Linear(8, 3)).double()


def _close(a, b, what, tol=1e-12):
    np.testing.assert_allclose(a.detach().to("cpu").numpy(), b.detach().numpy(), rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("chunks", [1, 3, 4])
@pytest.mark.parametrize("checkpoint", ["never", "always", "except_last"])
def test_output_and_gradients_equal_the_unpipelined_model(chunks, checkpoint):
    plain, piped = _model(), _model()
    pipe = Pipe(piped, chunks=chunks, checkpoint=checkpoint, balance=[3, 2], devices=["cpu:0", "cpu:1"])
    assert pipe.balance == [3, 2] and str(piped[4].weight.device) == "cpu:1"
    x = ember.randn(7, 5, dtype=ember.float64)
    x_plain, x_piped = x.clone().requires_grad_(), x.clone().requires_grad_()
    weights = ember.randn(7, 3, dtype=ember.float64)
    out_plain, out_piped = plain(x_plain), pipe(x_piped)
    assert str(out_piped.device) == "cpu:1"
    _close(out_piped, out_plain, "output")
    (out_plain * weights).sum().backward()
    (out_piped * weights.to("cpu:1")).sum().backward()
    _close(x_piped.grad, x_plain.grad, "input grad")
    for (name, p), q in zip(piped.named_parameters(), plain.parameters()):
        _close(p.grad, q.grad, name)


def test_three_sgd_steps_equal_the_unpipelined_training():
    plain, piped = _model(), _model()
    pipe = Pipe(piped, chunks=2, devices=["cpu:0", "cpu:1"])
    opts = [ember.optim.Adam(m.parameters(), lr=0.01) for m in (plain, pipe)]
    for _ in range(3):
        x, y = ember.randn(6, 5, dtype=ember.float64), ember.randn(6, 3, dtype=ember.float64)
        for model, opt in zip((plain, pipe), opts):
            opt.zero_grad()
            out = model(x)
            nn.functional.mse_loss(out, y.to(out.device)).backward()
            opt.step()
    for (name, p), q in zip(piped.named_parameters(), plain.parameters()):
        _close(p, q, name)


def test_stages_work_on_different_micro_batches_at_the_same_time():
    both_busy = threading.Barrier(2, timeout=10)
    calls = {0: 0, 1: 0}

    class Meet(nn.Module):
        """Stage 0 on micro-batch 1 and stage 1 on micro-batch 0 share a clock: each waits for the other."""

        def __init__(self, stage, meet_at):
            super().__init__()
            self.stage, self.meet_at = stage, meet_at
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            if calls[self.stage] == self.meet_at:
                both_busy.wait()  # raises BrokenBarrierError if the other stage does not run meanwhile
            calls[self.stage] += 1
            return self.lin(x)

    pipe = Pipe(nn.Sequential(Meet(0, meet_at=1), Meet(1, meet_at=0)), chunks=2, checkpoint="never", balance=[1, 1])
    assert pipe(ember.ones(4, 2)).shape == (4, 2) and calls == {0: 2, 1: 2}


@pytest.mark.parametrize("checkpoint, grad, recomputed", [
    ("always", True, 3), ("except_last", True, 2), ("never", True, 0), ("always", False, 0)])
def test_checkpointing_recomputes_the_chosen_micro_batches(checkpoint, grad, recomputed):
    calls = []

    class Count(nn.Linear):
        def forward(self, x):
            calls.append(ember.is_grad_enabled())
            return super().forward(x)

    pipe = Pipe(nn.Sequential(Count(2, 2), nn.Linear(2, 1)), chunks=3, checkpoint=checkpoint, balance=[1, 1])
    with ember.set_grad_enabled(grad):
        out = pipe(ember.ones(3, 2))
    if grad:
        out.sum().backward()
    assert len(calls) == 3 + recomputed
    assert calls[3:] == [True] * recomputed  # the reruns record a graph


def test_checkpointed_dropout_replays_its_mask_and_batchnorm_updates_once():
    def run(checkpoint):
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Dropout(0.5), nn.Linear(6, 2)).double()
        pipe = Pipe(model, chunks=2, checkpoint=checkpoint, balance=[3, 1])
        ember.manual_seed(1)
        pipe(ember.randn(8, 4, dtype=ember.float64)).sum().backward()
        return model

    kept, recomputed = run("never"), run("always")
    for (name, p), q in zip(recomputed.named_parameters(), kept.parameters()):
        _close(p.grad, q.grad, name)
    assert int(recomputed[1].num_batches_tracked) == 2
    _close(recomputed[1].running_mean, kept[1].running_mean, "running_mean")


def test_stages_follow_where_the_layers_already_live():
    model = nn.Sequential(nn.Flatten(), nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4).to("cpu:1"), nn.ReLU())
    pipe = Pipe(model, chunks=2)
    assert pipe.balance == [3, 2] and [str(d) for d in pipe.devices] == ["cpu:0", "cpu:1"]
    assert len(pipe) == 5 and pipe[3] is model[3] and list(pipe) == list(model)
    assert list(pipe.state_dict()) == ["partitions.0.1.weight", "partitions.0.1.bias", "partitions.1.3.weight",
                                       "partitions.1.3.bias"]


def test_devices_alone_split_the_layers_evenly():
    pipe = Pipe(_model(), devices=["cpu:1", "cpu:0"])
    assert pipe.balance == [3, 2] and [str(d) for d in pipe.devices] == ["cpu:1", "cpu:0"]
    assert str(pipe[0].weight.device) == "cpu:1" and pipe(ember.ones(2, 5, dtype=ember.float64)).device.type == "cpu"


@pytest.mark.parametrize("kwargs, error, match", [
    ({"chunks": 0}, ValueError, "number of chunks must be a positive integer, got 0"),
    ({"checkpoint": "sometimes"}, ValueError, "checkpoint is not one of 'always', 'except_last', or 'never'"),
    ({"balance": [2, 2]}, ValueError, r"balance \[2, 2\] sums to 4, but the module has 5 layers"),
    ({"balance": [5, 0]}, ValueError, "balance must be a non-empty list of positive ints"),
    ({"balance": [1, 1, 3]}, ValueError, r"balance \[1, 1, 3\] has 3 stages but only 2 cpu device\(s\) exist"),
    ({"balance": [2, 3], "devices": ["cpu:1"]}, ValueError, "has 2 stages but devices has only 1"),
    ({"devices": ["cpu:0", "cpu:7"]}, ValueError, r"devices\[1\] = 'cpu:7': device cpu:7 does not exist"),
])
def test_bad_arguments_say_what_was_wrong(kwargs, error, match):
    with pytest.raises(error, match=match):
        Pipe(_model(), **kwargs)


def test_bad_modules_and_inputs_say_what_was_wrong():
    with pytest.raises(TypeError, match="Pipe expects an ember.nn.Sequential whose layers become the stages, got "
                                        "Linear"):
        Pipe(nn.Linear(2, 2))
    straddling = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2).to("cpu:1")))
    with pytest.raises(ValueError, match=r"layer '1' has parameters or buffers on several devices \(cpu:0, cpu:1\)"):
        Pipe(straddling)
    tied = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    tied[1].weight = tied[0].weight
    with pytest.raises(ValueError, match="'1.weight' of stage 1 is shared with '0.weight' of stage 0"):
        Pipe(tied, balance=[1, 1])
    pipe = Pipe(_model(), balance=[3, 2])
    with pytest.raises(TypeError, match="Pipe's input must be a Tensor .* got list"):
        pipe([1.0])
    with pytest.raises(ValueError, match=r"at least one row along dim 0, got input of size ember.Size\(\[0, 5\]\)"):
        pipe(ember.zeros(0, 5, dtype=ember.float64))


def test_an_error_in_a_stage_names_the_stage_device_and_micro_batch():
    pipe = Pipe(nn.Sequential(nn.Linear(4, 3), nn.Linear(4, 2)), chunks=2, balance=[1, 1])
    with pytest.raises(RuntimeError, match=r"Caught RuntimeError in stage 1 on device cpu:1, micro-batch 0: "):
        pipe(ember.ones(4, 4))
