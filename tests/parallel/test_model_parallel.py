"""Model parallelism on two logical CPU devices: a module whose parts live on different devices, with ``.to(device)``
inside ``forward``, trains as on one device; the seed's ModelParallelResNet50 / PipelineParallelResNet50 example
(examples/model_parallel_resnet50.py) gives the single-device model's outputs and gradients."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.models import resnet50

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "model_parallel_resnet50.py"


@pytest.fixture(autouse=True)
def _two_devices(two_cpus):
    yield


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("model_parallel_resnet50", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TwoDeviceNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(4, 8).double().to("cpu:0")
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(8, 2).double().to("cpu:1")

    def forward(self, x):
        return self.net2(self.relu(self.net1(x.to("cpu:0"))).to("cpu:1"))


def _where(t):
    """A tensor's device as 'type:index' ('cpu' and 'cpu:0' are the same device)."""
    return f"{t.device.type}:{t.device.index or 0}"


def _assert_close(a, b, what, tol=1e-10):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol, err_msg=what)


def test_a_module_split_over_two_devices_trains_like_the_single_device_one():
    ember.manual_seed(0)
    split = TwoDeviceNet()
    single = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).double()
    single[0].load_state_dict(split.net1.state_dict())
    single[2].load_state_dict({k: v.to("cpu") for k, v in split.net2.state_dict().items()})
    opts = [ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (split, single)]
    for _ in range(3):
        x, y = ember.randn(6, 4, dtype=ember.float64), ember.randn(6, 2, dtype=ember.float64)
        for model, opt in zip((split, single), opts):
            opt.zero_grad()
            out = model(x)
            nn.functional.mse_loss(out, y.to(out.device)).backward()
            opt.step()
    assert [_where(p.grad) for p in split.parameters()] == ["cpu:0", "cpu:0", "cpu:1", "cpu:1"]
    for (name, p), q in zip(split.named_parameters(), single.parameters()):
        _assert_close(p.to("cpu"), q, name)


def test_the_gradient_of_a_move_goes_back_to_the_source_device():
    x = ember.randn(3, dtype=ember.float64, requires_grad=True, device="cpu:1")
    (x.to("cpu:0") * ember.arange(3.0, dtype=ember.float64)).sum().backward()
    assert str(x.grad.device) == "cpu:1" and x.grad.tolist() == [0.0, 1.0, 2.0]


def test_the_seeds_resnet50_split_and_pipelined_equal_the_single_device_model(example):
    ember.manual_seed(0)
    single = resnet50(num_classes=10).double()
    ember.manual_seed(0)
    split = example.ModelParallelResNet50(num_classes=10).double()
    ember.manual_seed(0)
    piped = example.PipelineParallelResNet50(split_size=2, num_classes=10).double()
    assert _where(split.seq1[0].weight) == "cpu:0" and _where(split.seq2[0][0].conv1.weight) == "cpu:1"
    assert str(piped.fc.weight.device) == "cpu:1"
    x = ember.randn(4, 3, 32, 32, dtype=ember.float64)
    target = ember.randn(4, 10, dtype=ember.float64)
    names = [name for name, _ in single.named_parameters()]

    def step(model, forward):
        out = forward(model)
        nn.functional.mse_loss(out, target.to(out.device)).backward()
        grads = dict(model.named_parameters())
        return out, {name: grads[name].grad for name in names}

    out_single, grads_single = step(single, lambda m: m(x))
    out_split, grads_split = step(split, lambda m: m(x))
    assert str(out_split.device) == "cpu:1"
    _assert_close(out_split.to("cpu"), out_single, "output")
    for name in names:  # batch norm in training mode: the split model sees the whole batch, as the single one
        _assert_close(grads_split[name].to("cpu"), grads_single[name], name)

    # the pipeline's batch norms see micro-batches of split_size rows: compare with the single-device model
    # run on the same micro-batches
    single.zero_grad()
    ember.manual_seed(0)
    fresh = resnet50(num_classes=10).double()
    out_micro, grads_micro = step(fresh, lambda m: ember.cat([m(s) for s in x.split(2)]))
    out_piped, grads_piped = step(piped, lambda m: m(x))
    _assert_close(out_piped.to("cpu"), out_micro, "pipelined output")
    for name in names:
        _assert_close(grads_piped[name].to("cpu"), grads_micro[name], name)
    _assert_close(piped.layer4[2].bn3.running_var.to("cpu"), fresh.layer4[2].bn3.running_var, "running_var")


@pytest.mark.slow
def test_the_example_script_trains_the_three_models():
    done = subprocess.run([sys.executable, str(EXAMPLE), "--batch-size", "4", "--image-size", "32",
                           "--num-batches", "1", "--split-size", "2"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    names = [line.split("  loss")[0].strip() for line in done.stdout.splitlines()]
    assert names == ["single device", "model parallel", "pipeline parallel"], done.stdout
    assert all(np.isfinite(float(line.split("loss")[1].split()[0])) for line in done.stdout.splitlines())
