"""ember.gpus() and `python -m ember gpus`: this machine has no GPU, so nvidia-ml-py (pynvml) and GPUtil are faked
(a module put in sys.modules, or on PYTHONPATH for the subprocess) with two GPUs and their processes."""
import os
import subprocess
import sys
import textwrap
import types

import ember
from ember.__main__ import main
from ember.utils.gpu_status import GPUInfo, GPUProcess, GPUs

GiB, MiB = 2**30, 2**20

FAKE_PYNVML = """
from types import SimpleNamespace

class NVMLError(Exception):
    pass

class NVMLError_NotSupported(NVMLError):
    pass

calls = []
def nvmlInit(): calls.append("init")
def nvmlShutdown(): calls.append("shutdown")
def nvmlSystemGetDriverVersion(): return "550.54.15"
def nvmlDeviceGetCount(): return 2
def nvmlDeviceGetHandleByIndex(i): return f"handle{i}"
def nvmlDeviceGetName(h): return {"handle0": b"NVIDIA H100 80GB HBM3", "handle1": "NVIDIA A10"}[h]
def nvmlDeviceGetUUID(h): return "GPU-" + h
def nvmlDeviceGetMemoryInfo(h):
    return SimpleNamespace(used={"handle0": 40 * 2**30, "handle1": 512 * 2**20}[h],
                           total={"handle0": 80 * 2**30, "handle1": 24 * 2**30}[h])
def nvmlDeviceGetUtilizationRates(h):
    if h == "handle1":
        raise NVMLError_NotSupported("Not Supported")
    return SimpleNamespace(gpu=87, memory=40)
def nvmlDeviceGetComputeRunningProcesses(h):
    if h == "handle0":
        return [SimpleNamespace(pid=4242, usedGpuMemory=30 * 2**30), SimpleNamespace(pid=77, usedGpuMemory=None)]
    return []
def nvmlDeviceGetGraphicsRunningProcesses(h):
    if h == "handle0":
        return [SimpleNamespace(pid=4242, usedGpuMemory=30 * 2**30)]  # also a compute process: listed once
    return [SimpleNamespace(pid=901, usedGpuMemory=256 * 2**20)]
def nvmlSystemGetProcessName(pid):
    if pid == 77:
        raise NVMLError("No permission")
    return {4242: b"python", 901: "Xorg"}[pid]
"""

EXPECTED = [
    "NVIDIA driver 550.54.15 (via nvidia-ml-py)",
    "gpu 0: NVIDIA H100 80GB HBM3, 40960 MiB used of 81920 MiB, 87% utilization, 2 processes",
    "  pid 4242 python: 30720 MiB",
    "  pid 77: memory not reported",
    "gpu 1: NVIDIA A10, 512 MiB used of 24576 MiB, 1 process",
    "  pid 901 Xorg: 256 MiB",
]


def fake(monkeypatch, name, source):
    """Install a fake module ``name`` made from ``source`` (None: the module is not installed)."""
    module = None
    if source is not None:
        module = types.ModuleType(name)
        exec(textwrap.dedent(source), module.__dict__)
    monkeypatch.setitem(sys.modules, name, module)
    return module


def test_two_gpus_with_their_processes_through_nvidia_ml_py(monkeypatch):
    nvml = fake(monkeypatch, "pynvml", FAKE_PYNVML)
    fake(monkeypatch, "GPUtil", None)
    found = ember.gpus()
    assert found == [
        GPUInfo(0, "NVIDIA H100 80GB HBM3", 40 * GiB, 80 * GiB, 87.0, "GPU-handle0",
                [GPUProcess(4242, "python", 30 * GiB), GPUProcess(77, None, None)]),
        GPUInfo(1, "NVIDIA A10", 512 * MiB, 24 * GiB, None, "GPU-handle1", [GPUProcess(901, "Xorg", 256 * MiB)]),
    ]
    assert found.source == "nvidia-ml-py" and found.driver == "550.54.15"
    assert str(found).splitlines() == EXPECTED and repr(found) == str(found)
    assert nvml.calls == ["init", "shutdown"]  # the library is shut down again
    assert found[0].memory_total - found[0].memory_used == 40 * GiB  # records code can use


def test_without_a_gpu_library_it_says_so_in_one_line(monkeypatch):
    fake(monkeypatch, "pynvml", None)
    fake(monkeypatch, "GPUtil", None)
    found = ember.gpus()
    assert found == [] and str(found).count("\n") == 0
    assert str(found) == ("no NVIDIA GPU/driver found (neither nvidia-ml-py nor GPUtil is installed; "
                          "`pip install ember-core[gpu]` to query the driver)")


def test_without_a_driver_it_says_why(monkeypatch):
    fake(monkeypatch, "pynvml", FAKE_PYNVML + "\ndef nvmlInit():\n    raise NVMLError('Driver Not Loaded')\n")
    fake(monkeypatch, "GPUtil", "def getGPUs():\n    raise OSError('nvidia-smi not found')\n")
    assert str(ember.gpus()) == ("no NVIDIA GPU/driver found (pynvml: Driver Not Loaded; "
                                 "GPUtil: nvidia-smi not found)")
    fake(monkeypatch, "pynvml", FAKE_PYNVML.replace("return 2", "return 0"))
    assert str(ember.gpus()) == "no NVIDIA GPU found (pynvml: the driver reports 0 devices)"


def test_gputil_where_nvidia_ml_py_cannot_reach_the_driver(monkeypatch):
    fake(monkeypatch, "pynvml", FAKE_PYNVML + "\ndef nvmlInit():\n    raise NVMLError('Driver Not Loaded')\n")
    fake(monkeypatch, "GPUtil", """
        from types import SimpleNamespace
        def getGPUs():
            return [SimpleNamespace(id=0, uuid="GPU-u0", name="Tesla T4", load=0.5, memoryUsed=1000.0,
                                    memoryTotal=15360.0, driver="535.1")]
    """)
    found = ember.gpus()
    assert found == [GPUInfo(0, "Tesla T4", 1000 * MiB, 15360 * MiB, 50.0, "GPU-u0", None)]
    assert str(found).splitlines() == ["NVIDIA driver 535.1 (via GPUtil)",
                                       "gpu 0: Tesla T4, 1000 MiB used of 15360 MiB, 50% utilization"]


def test_a_plain_list_of_records_prints_too():
    assert str(GPUs([GPUInfo(2, "X", 0, GiB, None, None, None)], source="GPUtil")).splitlines() == [
        "NVIDIA GPUs (via GPUtil)", "gpu 2: X, 0 MiB used of 1024 MiB"]


def run_gpus(tmp_path, pynvml_source):
    """``python -m ember gpus`` with ``pynvml`` made from ``pynvml_source`` and GPUtil not importable."""
    (tmp_path / "pynvml.py").write_text(pynvml_source)
    (tmp_path / "GPUtil.py").write_text("raise ImportError('not installed here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "ember", "gpus"], capture_output=True, text=True, timeout=60,
                          env=env, stdin=subprocess.DEVNULL)


def test_the_command_lists_the_gpus(tmp_path):
    proc = run_gpus(tmp_path, FAKE_PYNVML)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == EXPECTED


def test_the_command_without_a_gpu_library_prints_one_line(tmp_path):
    proc = run_gpus(tmp_path, "raise ImportError('not installed here')\n")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.splitlines() == ["no NVIDIA GPU/driver found (neither nvidia-ml-py nor GPUtil is installed; "
                                        "`pip install ember-core[gpu]` to query the driver)"]


def test_info_reports_the_same_status(monkeypatch, capsys):
    fake(monkeypatch, "pynvml", FAKE_PYNVML)
    main(["info"])
    out = capsys.readouterr().out.splitlines()
    start = out.index("NVIDIA GPUs:") + 1
    assert [line[2:] for line in out[start:start + len(EXPECTED)]] == EXPECTED
