"""DataParallel and its pieces (scatter, gather, replicate, parallel_apply) on two logical CPU devices: outputs and
gradients equal single-device training, and bad setups get errors that say what was wrong."""
import subprocess
import sys
import threading
from collections import namedtuple

import numpy as np
import pytest

import ember
from ember import nn, parallel
from ember.parallel import DataParallel, gather, parallel_apply, replicate, scatter, scatter_kwargs


@pytest.fixture(autouse=True)
def _two_devices(two_cpus):
    yield


def _mlp(seed=0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double()


def _cnn(seed=0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 5 * 5, 2)).double()


def _grads(model):
    return {name: p.grad.numpy().copy() for name, p in model.named_parameters()}


def _assert_same(a, b, tol=1e-12):
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=tol, atol=tol, err_msg=key)


@pytest.mark.parametrize("make, shape", [(_mlp, (5, 4)), (_cnn, (7, 2, 5, 5))])
def test_three_sgd_steps_equal_single_device_training(make, shape):
    single, wrapped = make(), make()
    dp = DataParallel(wrapped, device_ids=[0, 1])
    opt_single = ember.optim.SGD(single.parameters(), lr=0.1, momentum=0.9)
    opt_dp = ember.optim.SGD(dp.parameters(), lr=0.1, momentum=0.9)
    for step in range(3):
        ember.manual_seed(100 + step)
        x, y = ember.randn(*shape, dtype=ember.float64), ember.randn(shape[0], single[-1].out_features,
                                                                     dtype=ember.float64)
        for model, opt in ((single, opt_single), (dp, opt_dp)):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
        _assert_same(_grads(single), _grads(wrapped))
        opt_single.step()
        opt_dp.step()
    _assert_same({k: v.numpy() for k, v in single.state_dict().items()},
                 {k: v.numpy() for k, v in wrapped.state_dict().items()})


def test_replicas_run_on_every_device_in_threads_and_output_lands_on_output_device():
    seen = []

    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3).double()

        def forward(self, x):
            seen.append((str(self.lin.weight.device), str(x.device), threading.current_thread().name))
            return self.lin(x)

    model = Probe()
    out = DataParallel(model, device_ids=["cpu:0", "cpu:1"], output_device="cpu:1")(ember.ones(4, 3,
                                                                                           dtype=ember.float64))
    assert str(out.device) == "cpu:1" and out.shape == (4, 3)
    assert sorted((w, x) for w, x, _ in seen) == [("cpu", "cpu"), ("cpu:1", "cpu:1")]
    assert {name for _, _, name in seen} == {"ember-replica-0", "ember-replica-1"}
    np.testing.assert_allclose(out.detach().numpy(), model(ember.ones(4, 3, dtype=ember.float64)).detach().numpy())


def test_wrapper_exposes_module_and_prefixes_state_dict_keys():
    model = _mlp()
    dp = DataParallel(model)
    assert dp.module is model
    assert dp.device_ids == [0, 1] and dp.output_device == ember.device("cpu:0")
    assert list(dp.state_dict()) == [f"module.{k}" for k in model.state_dict()]
    bare = _mlp(seed=1)
    bare.load_state_dict({key.removeprefix("module."): value for key, value in dp.state_dict().items()})
    np.testing.assert_array_equal(bare[0].weight.detach().numpy(), model[0].weight.detach().numpy())


def test_keyword_arguments_and_structured_outputs_are_scattered_and_gathered():
    Pair = namedtuple("Pair", "doubled shifted")

    class Structured(nn.Module):
        def forward(self, x, *, shift):
            return {"pair": Pair(x * 2, x + shift), "none": None}

    x = ember.arange(10.0, dtype=ember.float64).reshape(5, 2)
    out = DataParallel(Structured())(x, shift=ember.full((5, 1), 3.0, dtype=ember.float64))
    assert out["none"] is None and isinstance(out["pair"], Pair)
    np.testing.assert_array_equal(out["pair"].doubled.numpy(), x.numpy() * 2)
    np.testing.assert_array_equal(out["pair"].shifted.numpy(), x.numpy() + 3)


def test_dim_one_splits_and_gathers_along_the_second_axis():
    class Scale(nn.Module):
        def forward(self, x):
            assert x.shape[0] == 2  # the batch is on dim 1 here
            return x * 3

    x = ember.randn(2, 6, dtype=ember.float64)
    np.testing.assert_array_equal(DataParallel(Scale(), dim=1)(x).numpy(), x.numpy() * 3)


def test_a_batch_smaller_than_the_devices_runs_on_the_first_devices_only():
    used = []

    class Probe(nn.Linear):
        def forward(self, x):
            used.append(str(x.device))
            return super().forward(x)

    single, wrapped = Probe(4, 3).double(), Probe(4, 3).double()
    wrapped.load_state_dict(single.state_dict())
    x = ember.randn(1, 4, dtype=ember.float64)
    single(x).sum().backward()
    used.clear()
    DataParallel(wrapped, device_ids=[0, 1])(x).sum().backward()
    assert used == ["cpu"]  # as in PyTorch: one row, one replica
    _assert_same(_grads(single), _grads(wrapped))


def test_batchnorm_running_stats_are_updated_by_the_replica_on_the_first_device():
    bn = nn.BatchNorm1d(2).double()
    x = ember.randn(6, 2, dtype=ember.float64)
    DataParallel(bn)(x)
    first_half = x.numpy()[:3]
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * first_half.mean(0), rtol=1e-12)
    assert int(bn.num_batches_tracked) == 1


def test_under_no_grad_the_replicas_are_detached():
    model = _mlp()
    with ember.no_grad():
        out = DataParallel(model)(ember.randn(4, 4, dtype=ember.float64))
    assert not out.requires_grad and out.grad_fn is None


@pytest.mark.parametrize("device_ids, error, match", [
    ([0, 5], ValueError, r"device_ids\[1\] = 5: device cpu:5 does not exist; there are 2 logical CPU device"),
    (["cpu:0", "cpu:0"], ValueError, r"device_ids\[1\] = cpu:0 appears twice"),
    ([], ValueError, "device_ids is empty"),
    ([0, -1], ValueError, r"device_ids\[1\] = -1: a device index must be non-negative"),
    ([0.5], TypeError, r"device_ids\[0\] must be an int device index, a device string .* got float 0.5"),
    ("cpu:0", TypeError, "device_ids must be a list of devices"),
    (["cuda:0"], ValueError, "CUDA is not available"),
])
def test_bad_device_ids_say_what_was_wrong(device_ids, error, match):
    if device_ids == ["cuda:0"] and ember.cuda.is_available():
        pytest.fail("this check needs a machine without CUDA")
    with pytest.raises(error, match=match):
        DataParallel(_mlp(), device_ids=device_ids)


def test_bad_output_device_and_module_say_what_was_wrong():
    with pytest.raises(ValueError, match=r"output_device = 'cpu:2': device cpu:2 does not exist"):
        DataParallel(_mlp(), output_device="cpu:2")
    with pytest.raises(TypeError, match="expects an ember.nn.Module to wrap, got function"):
        DataParallel(lambda x: x)


def test_a_module_on_the_wrong_device_is_named_in_the_error():
    model = _mlp()
    model[2].to("cpu:1")
    with pytest.raises(RuntimeError, match=r"on device cpu:0 \(device_ids\[0\]\) but found one of them on device: "
                                           r"cpu:1 \(parameter '2.weight'\)"):
        DataParallel(model)(ember.ones(2, 4, dtype=ember.float64))


def test_an_exception_in_a_replica_names_the_replica_and_device():
    class FailOnSecond(nn.Module):
        def forward(self, x):
            if x.device == ember.device("cpu:1"):
                raise ValueError("bad rows")
            return x

    with pytest.raises(ValueError, match="Caught ValueError in replica 1 on device cpu:1: bad rows"):
        DataParallel(FailOnSecond())(ember.ones(4, 1))


# -- the functions ----------------------------------------------------------------------------------------------
def test_scatter_is_differentiable_and_gather_brings_the_pieces_back():
    x = ember.randn(5, 3, dtype=ember.float64, requires_grad=True)
    pieces = scatter(x, [0, 1])
    assert [p.shape[0] for p in pieces] == [3, 2] and [str(p.device) for p in pieces] == ["cpu", "cpu:1"]
    back = gather([p * 2 for p in pieces], "cpu:1")
    assert str(back.device) == "cpu:1"
    (back * ember.arange(15.0, dtype=ember.float64, device="cpu:1").reshape(5, 3)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.arange(15.0).reshape(5, 3))


def test_scatter_kwargs_pads_the_shorter_side_and_gather_of_scalars_warns():
    args, kwargs = scatter_kwargs((), {"x": ember.zeros(4)}, ["cpu:0", "cpu:1"])
    assert args == ((), ()) and [k["x"].shape[0] for k in kwargs] == [2, 2]
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        out = gather([ember.tensor(1.0), ember.tensor(2.0, device="cpu:1")], -1)
    assert out.tolist() == [1.0, 2.0] and out.device.type == "cpu"


def test_replicate_keeps_tied_weights_tied_and_routes_gradients_to_the_original():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False).double()
            self.b = nn.Linear(2, 2, bias=False).double()
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    model = Tied()
    r0, r1 = replicate(model, ["cpu:0", "cpu:1"])
    assert r1.a.weight is r1.b.weight and str(r1.a.weight.device) == "cpu:1"
    assert r0.a.weight is model.a.weight and list(r1.parameters()) == []
    x = ember.randn(3, 2, dtype=ember.float64)
    r1(x.to("cpu:1")).sum().backward()
    got = model.a.weight.grad.numpy().copy()
    model.zero_grad()
    model(x).sum().backward()
    np.testing.assert_allclose(got, model.a.weight.grad.numpy(), rtol=1e-12)
    with pytest.raises(TypeError, match="expects an ember.nn.Module, got int"):
        replicate(3, [0])


def test_parallel_apply_keeps_the_callers_grad_mode_and_checks_lengths():
    lin = nn.Linear(2, 2)
    with ember.no_grad():
        outs = parallel_apply([lin, lin], [ember.ones(1, 2), (ember.ones(1, 2),)])
    assert [o.requires_grad for o in outs] == [False, False]
    assert all(o.requires_grad for o in parallel_apply([lin, lin], [ember.ones(1, 2), ember.ones(1, 2)]))
    with pytest.raises(ValueError, match="one input per module, got 2 modules and 1 inputs"):
        parallel_apply([lin, lin], [ember.ones(1, 2)])


# -- ember.nn.DataParallel ---------------------------------------------------------------------------------------
def test_ember_nn_reaches_data_parallel_only_when_asked():
    assert nn.DataParallel is DataParallel and nn.parallel.DataParallel is DataParallel
    from ember.nn import DataParallel as imported
    from ember.nn.parallel import DistributedDataParallel as DDP  # torch.nn.parallel's path
    assert imported is DataParallel and DDP is parallel.DistributedDataParallel
    with pytest.raises(AttributeError, match="module 'ember.nn' has no attribute 'NoSuchLayer'"):
        nn.NoSuchLayer  # noqa: B018


def test_without_ember_parallel_ember_nn_names_the_distribution_to_install():
    script = (
        "import sys\n"
        "sys.modules['ember.parallel'] = None  # as if ember-parallel were not installed\n"
        "import ember.nn\n"
        "assert 'ember.parallel' not in [m for m, v in sys.modules.items() if v is not None]\n"
        "for name in ('DataParallel', 'parallel'):\n"
        "    try:\n"
        "        getattr(ember.nn, name)\n"
        "    except AttributeError as exc:\n"
        "        print(exc)\n"
        "try:\n"
        "    from ember.nn.parallel import DistributedDataParallel\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"ember.nn.{name} is provided by the ember-parallel distribution, which is not installed: "
        "pip install ember-parallel" for name in ("DataParallel", "parallel")] + [
        "ember.nn.parallel is provided by the ember-parallel distribution, which is not installed: "
        "pip install ember-parallel"]


def test_importing_ember_nn_does_not_import_ember_parallel():
    script = "import sys, ember.nn; print('ember.parallel' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr
