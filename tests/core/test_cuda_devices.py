"""The CUDA backend's own logic on the CuPy stand-in (tests/cuda_standin): registration, devices, transfers."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from tests.conftest import STANDIN


def test_registers_through_the_entry_point_without_importing_cupy():
    # with a CuPy importable (the stand-in), CPU work never imports it; ember.cuda.is_available() does
    code = ("import sys, ember; print(ember.list_backends()); x = ember.ones(2, requires_grad=True); "
            "(x * x).sum().backward(); print([m for m in sys.modules if m.startswith('cupy')]); "
            "print(ember.cuda.is_available(), 'cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                         env=dict(os.environ, PYTHONPATH=str(STANDIN))).stdout.splitlines()
    assert "cuda" in out[0] and out[1:] == ["[]", "True True"]
    assert ember.collect_claims("ember_backends")["cuda"][1] == "cuda"  # the entry point's name


def test_ember_info_lists_the_standin_gpus():
    env = {"PYTHONPATH": str(STANDIN), "EMBER_STANDIN_GPUS": "2", "PATH": ""}
    out = subprocess.run([sys.executable, "-m", "ember", "info"], capture_output=True, text=True, timeout=60,
                         env=env).stdout
    line = next(x for x in out.splitlines() if "[plugin cuda]" in x)
    assert "Stand-in GPU" in line and "devices: cuda:0, cuda:1" in line


def test_devices_and_their_errors(cuda_standin):
    assert ember.cuda.is_available() and ember.cuda.device_count() == 2
    assert ember.zeros(2, device="cuda:1").device == ember.device("cuda:1")
    with pytest.raises(RuntimeError, match=r"cuda:2 does not exist.*cuda:0, cuda:1"):
        ember.zeros(2, device="cuda:2")
    with pytest.raises(RuntimeError, match="CUDA device 5 does not exist"):
        ember.cuda.Stream(5)
    with pytest.raises(ValueError, match="expected a CUDA device"):
        ember.cuda.get_device_name("cpu")


def test_without_gpus_cuda_is_unavailable_with_the_reason(monkeypatch):
    monkeypatch.setenv("EMBER_STANDIN_GPUS", "0")
    from tests.conftest import _forget_cupy
    monkeypatch.syspath_prepend(str(STANDIN))
    _forget_cupy()
    try:
        assert not ember.cuda.is_available() and ember.cuda.device_count() == 0
        ember.cuda.manual_seed_all(1)  # ignored without CUDA, as in PyTorch
        with pytest.raises(RuntimeError, match="CUDA is not available.*no usable GPU.*cudaErrorNoDevice"):
            ember.zeros(1, device="cuda")
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            ember.cuda.current_device()
    finally:
        _forget_cupy()


def test_transfers_between_cpu_and_two_gpus(cuda_standin):
    x = ember.arange(6.0).reshape(2, 3)
    a = x.to("cuda:0")
    b = a.to("cuda:1")
    assert a._data.device.id == 0 and b._data.device.id == 1
    assert b.data_ptr() != a.data_ptr() != x.data_ptr()
    assert ember.equal(b.cpu(), x) and b.cpu().device == ember.device("cpu")
    assert x.cuda(1).device == ember.device("cuda:1")
    c = b.to("cuda:0", dtype=ember.float64)
    assert c.dtype == ember.float64 and c._data.device.id == 0


def test_gradient_flows_back_across_devices(cuda_standin):
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("cuda:1")
    (y * y).sum().backward()
    assert x.grad.device == ember.device("cpu") and x.grad.tolist() == [2.0, 4.0]


def test_current_device_set_device_and_device_context(cuda_standin):
    assert ember.cuda.current_device() == 0
    with ember.cuda.device(1):
        assert ember.cuda.current_device() == 1 and cuda_standin.cuda.runtime.getDevice() == 1
    assert ember.cuda.current_device() == 0
    ember.cuda.set_device("cuda:1")
    try:
        assert ember.cuda.current_device() == 1
    finally:
        ember.cuda.set_device(0)
    props = ember.cuda.get_device_properties(1)
    assert (props.name, props.major, props.minor, props.multi_processor_count) == ("Stand-in GPU (NumPy)", 9, 0, 132)
    assert props.total_memory == 1 << 30 and ember.cuda.get_device_name() == "Stand-in GPU (NumPy)"


def test_bfloat16_is_held_when_cupy_can(cuda_standin):
    t = ember.ones(2, dtype=ember.bfloat16, device="cuda")
    assert t.dtype == ember.bfloat16 and (t * 2).float().tolist() == [2.0, 2.0]


def test_ops_run_on_cupy_arrays(cuda_standin):
    x = ember.randn(4, 5, device="cuda")
    assert isinstance(x._data, cuda_standin.ndarray)
    w = ember.randn(5, 3, device="cuda")
    np.testing.assert_allclose((x @ w).cpu().numpy(), x.cpu().numpy() @ w.cpu().numpy(), rtol=1e-5)
    assert ember.linalg.vector_norm(x, dim=1).device == ember.device("cuda")


def test_work_on_the_second_gpu_stays_there_whatever_the_current_device(cuda_standin):
    assert ember.cuda.current_device() == 0
    x = ember.ones(3, device="cuda:1", requires_grad=True)
    y = (x * 2).exp().sum()
    y.backward()
    for t in (ember.zeros(2, device="cuda:1"), ember.eye(2, device="cuda:1"), y, x.grad,
              ember.nn.functional.dropout(x, 0.5) if hasattr(ember, "nn") else y):
        assert t._data.device.id == 1, t
    assert ember.cuda.current_device() == 0
    assert ember.cuda.memory_reserved(1) >= ember.cuda.memory_allocated(1) > 0


def test_ember_accelerator_is_cuda_and_shares_the_current_device(cuda_standin):
    assert ember.accelerator.current_accelerator() == ember.device("cuda")
    assert ember.accelerator.is_available() and ember.accelerator.device_count() == 2
    with ember.accelerator.device_index(1):
        assert ember.cuda.current_device() == 1 == ember.accelerator.current_device_index()
    assert ember.cuda.current_device() == 0
    x = ember.ones(250, device="cuda:1")
    assert ember.accelerator.memory_allocated(1) >= 1000 and x.device.index == 1
