"""GPU picking by memory status, read through ember.gpus() (fake GPUtil / nvidia-ml-py: this machine has no GPU), and
CUDA_VISIBLE_DEVICES."""
import os
import sys
import types
import warnings

import pytest

import ember
from ember import tune
from ember.tune import Decision, TrialRun
from ember.tune.executors.local import LocalExecutor
from ember.tune.gpus import GPUPicker, GPUStatus, gpu_status, visible_devices_env


class FakeGPU:
    """What GPUtil.getGPUs() returns (the attributes ember reads)."""

    def __init__(self, index, used, total=16000.0):
        self.id, self.uuid, self.memoryTotal, self.memoryUsed = index, f"GPU-{index}-uuid", total, used
        self.name, self.load, self.driver = "Fake GPU", 0.5, "550.54"


@pytest.fixture
def fake_gputil(monkeypatch):
    """GPUtil seeing four GPUs: 0 (busy: 90% used), 1 (2 GB used), 2 (empty), 3 (8 GB used: exactly half)."""
    module = types.ModuleType("GPUtil")
    module.gpus = [FakeGPU(0, 14400), FakeGPU(1, 2000), FakeGPU(2, 0), FakeGPU(3, 8000)]
    module.calls = 0

    def get_gpus():
        module.calls += 1
        return module.gpus

    module.getGPUs = get_gpus
    monkeypatch.setitem(sys.modules, "GPUtil", module)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed: ember.gpus() would ask it first
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return module


def test_status_through_gputil(fake_gputil):
    status = gpu_status()
    assert [g.index for g in status] == [0, 1, 2, 3]
    assert status[1] == GPUStatus(1, "GPU-1-uuid", 16000.0, 2000.0)
    assert status[1].memory_free == 14000.0 and status[0].memory_fraction == 0.9


def test_gputil_failing_means_no_gpu(monkeypatch):
    module = types.ModuleType("GPUtil")

    def broken():
        raise OSError("nvidia-smi not found")

    module.getGPUs = broken
    monkeypatch.setitem(sys.modules, "GPUtil", module)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert gpu_status() == []


def test_status_through_nvidia_ml_py(monkeypatch):
    nvml = types.ModuleType("pynvml")
    nvml.nvmlInit = nvml.nvmlShutdown = lambda: None
    nvml.nvmlDeviceGetCount = lambda: 2
    nvml.nvmlDeviceGetHandleByIndex = lambda i: i
    nvml.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=8 * 2**30, used=(h + 1) * 2**30)
    nvml.nvmlDeviceGetUUID = lambda h: f"GPU-n{h}".encode()
    nvml.nvmlDeviceGetName = lambda h: b"Fake GPU"
    monkeypatch.setitem(sys.modules, "GPUtil", None)  # not installed
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    assert gpu_status() == [GPUStatus(0, "GPU-n0", 8192.0, 1024.0), GPUStatus(1, "GPU-n1", 8192.0, 2048.0)]


def test_the_status_is_ember_gpus(monkeypatch):
    seen = []

    def fake_gpus():
        seen.append(True)
        return [ember.utils.gpu_status.GPUInfo(3, "Fake GPU", 3 * 2**30, 4 * 2**30, 90.0, "GPU-x", [])]

    monkeypatch.setattr(ember, "gpus", fake_gpus)
    assert gpu_status() == [GPUStatus(3, "GPU-x", 4096.0, 3072.0)] and seen == [True]
    assert GPUPicker(max_memory=0.5).pick(1) is None and GPUPicker(max_memory=0.8).pick(1) == [3]


def test_neither_installed_means_no_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "GPUtil", None)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert gpu_status() == []


def test_pick_most_free_first_and_skip_busy(fake_gputil):
    picker = GPUPicker(max_memory=0.5)
    assert picker.count() == 4
    assert picker.pick(3) == [2, 1, 3]  # GPU 0 is 90% used: not free
    assert picker.pick(1, exclude={2}) == [1]
    assert picker.pick(4) is None
    assert GPUPicker(max_memory=0.95).pick(4) == [2, 1, 3, 0]
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        GPUPicker(max_memory=50)


def test_status_is_cached_for_refresh_s(fake_gputil):
    picker = GPUPicker(refresh_s=3600)
    picker.pick(1), picker.pick(2), picker.count()
    assert fake_gputil.calls == 1
    GPUPicker(refresh_s=0).pick(1)
    assert fake_gputil.calls == 2


@pytest.mark.parametrize("visible, expected", [("2,0", [0, 2]), ("GPU-3-uuid", [3]), ("", [])])
def test_the_drivers_cuda_visible_devices_limits_the_gpus(fake_gputil, monkeypatch, visible, expected):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert [g.index for g in GPUPicker().status()] == expected


def test_visible_devices_env():
    assert visible_devices_env([3, 1]) == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "3,1"}
    assert visible_devices_env([])["CUDA_VISIBLE_DEVICES"] == ""


def report_devices(config):
    tune.report({"visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "order": os.environ.get("CUDA_DEVICE_ORDER")})


@pytest.mark.timeout(60)
def test_trials_get_free_gpus_in_cuda_visible_devices(fake_gputil, tmp_path):
    ex = LocalExecutor(max_concurrent=4, num_cpus=4)
    try:
        ex.setup(report_devices, str(tmp_path))
        got = {}
        for trial_id, gpus in (("a", 1), ("b", 2), ("c", 0)):
            assert ex.has_free_slot({"cpu": 1, "gpu": gpus})
            ex.start(TrialRun(trial_id, {}, trial_dir=str(tmp_path / trial_id), resources={"cpu": 1, "gpu": gpus}))
        # a, b hold GPUs 2, 1, 3 while they wait for an answer; GPU 0 is busy: no GPU is free now
        while len(got) < 3:
            for ev in ex.poll(20.0):
                assert ev.kind == "result", ev.error
                got[ev.trial_id] = ev.metrics
        assert not ex.has_free_slot({"cpu": 1, "gpu": 1})
        with pytest.raises(ValueError, match="5 GPU"):
            ex.has_free_slot({"gpu": 5})
        assert got["a"]["visible"] == "2" and got["b"]["visible"] == "1,3" and got["c"]["visible"] == ""
        assert got["a"]["order"] == "PCI_BUS_ID"
        for trial_id in "abc":
            ex.respond(trial_id, Decision.STOP)
        while ex.running:
            ex.poll(20.0)
        assert ex.has_free_slot({"cpu": 1, "gpu": 3})  # released with their processes
    finally:
        ex.shutdown(timeout=5.0)


def test_asking_for_a_gpu_without_any_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "GPUtil", None)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(ValueError, match="0 found .*GPUtil"):
        LocalExecutor(max_concurrent=1).has_free_slot({"cpu": 1, "gpu": 1})


def test_waiting_for_gpus_others_use_warns_once(fake_gputil):
    fake_gputil.gpus = [FakeGPU(0, 15000), FakeGPU(1, 12000)]
    ex = LocalExecutor(max_concurrent=2)
    with pytest.warns(RuntimeWarning, match="GPU 0: 94%, GPU 1: 75%.*gpu_max_memory"):
        assert not ex.has_free_slot({"cpu": 1, "gpu": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not ex.has_free_slot({"cpu": 1, "gpu": 1})
    assert LocalExecutor(max_concurrent=2, gpu_max_memory=0.8).has_free_slot({"cpu": 1, "gpu": 1})
