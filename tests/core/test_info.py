"""`python -m ember info` and the `ember` console script, run as subprocesses."""
import importlib.metadata
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import ember
from ember.__main__ import gpu_lines, main

TIMEOUT = 60


def run(args, *, env_extra=None, script=False):
    env = dict(os.environ, **(env_extra or {}))
    cmd = [str(Path(sys.executable).parent / "ember"), *args] if script else [sys.executable, "-m", "ember", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL)


def section(out: str, title: str) -> list[str]:
    """The indented lines under ``title:`` in the report."""
    lines = out.splitlines()
    start = lines.index(f"{title}:") + 1
    body = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        body.append(line.strip())
    return body


@pytest.fixture(scope="module")
def report():
    proc = run(["info"])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_info_header_names_version_and_python(report):
    assert report.splitlines()[0].startswith(f"ember {ember.__version__} on Python {sys.version_info.major}.")


def test_info_lists_ember_distributions_with_versions(report):
    dists = section(report, "distributions")
    assert f"ember-core {importlib.metadata.version('ember-core')}" in dists
    assert f"ember-array-api-strict {importlib.metadata.version('ember-array-api-strict')}" in dists
    assert all(line.startswith("ember-") for line in dists)


def test_info_lists_plugins_with_their_modules(report):
    plugins = section(report, "plugins")
    assert any(line.split()[:2] == ["ember.backends.cpu", "ember.backends.cpu"] and "built-in" in line
               for line in plugins)
    assert any(line.split()[:2] == ["strict", "ember_array_api_strict"] and "entry point" in line
               for line in plugins)


def test_info_lists_backends_and_devices(report):
    backends = {line.split()[0]: line for line in section(report, "backends")}
    assert set(backends) >= {"cpu", "strict"}
    assert backends["cpu"].endswith("devices: cpu:0")
    assert "NumPy" in backends["cpu"]
    assert backends["strict"].endswith("devices: strict:0")


def test_info_names_the_plugin_of_the_cpu_kernels(report):
    kernels = ("adam_update, channel_affine, cross_entropy, cross_entropy_backward, float16_to_float32, "
               "float32_to_float16, max_pool_scatter, max_pool_stage, random_bernoulli, random_integers, "
               "random_normal, random_permutation, random_uniform, relu, relu_backward, sgd_update")
    assert section(report, "CPU kernels") == [f"{kernels}  [plugin numba]", "gemm_float32  [plugin onednn]"]


def test_info_without_cpu_kernels_says_numpy_serves(capsys):
    from ember_numba import plugin
    from ember_onednn import plugin as onednn_plugin
    ember.unregister_plugin("numba")
    ember.unregister_plugin("onednn")
    try:
        assert main(["info"]) == 0
    finally:
        ember.register_plugin(plugin, "numba")
        ember.register_plugin(onednn_plugin, "onednn")
    assert section(capsys.readouterr().out, "CPU kernels")[0].startswith("none: ember's NumPy code")


def test_info_shows_logical_cpu_devices():
    proc = run(["info"], env_extra={"EMBER_CPU_DEVICES": "3"})
    assert proc.returncode == 0, proc.stderr
    cpu = [line for line in section(proc.stdout, "backends") if line.startswith("cpu ")]
    assert cpu and cpu[0].endswith("devices: cpu:0, cpu:1, cpu:2")


def test_console_script_gives_the_same_report(report):
    proc = run(["info"], script=True)
    assert proc.returncode == 0, proc.stderr
    assert section(proc.stdout, "backends") == section(report, "backends")


def fake_module(monkeypatch, name, source=None):
    """Make ``import name`` give a module running ``source`` (or fail, when ``source`` is None)."""
    module = None
    if source is not None:
        module = types.ModuleType(name)
        exec(textwrap.dedent(source), module.__dict__)
    monkeypatch.setitem(sys.modules, name, module)


def test_gpu_status_without_nvml_or_gputil(monkeypatch):
    fake_module(monkeypatch, "pynvml")
    fake_module(monkeypatch, "GPUtil")
    lines = gpu_lines()
    assert len(lines) == 1 and lines[0].startswith("no NVIDIA GPU/driver found")


def test_gpu_status_when_the_driver_is_missing(monkeypatch):
    fake_module(monkeypatch, "pynvml", """
        class NVMLError(Exception):
            pass
        def nvmlInit():
            raise NVMLError("Driver Not Loaded")
    """)
    assert gpu_lines() == ["no NVIDIA GPU/driver found (pynvml: Driver Not Loaded)"]


PYNVML_WITH_GPUS = """
    N = {n}
    from types import SimpleNamespace
    shut_down = []
    def nvmlInit(): pass
    def nvmlShutdown(): shut_down.append(True)
    def nvmlSystemGetDriverVersion(): return b"550.54"
    def nvmlDeviceGetCount(): return N
    def nvmlDeviceGetHandleByIndex(i): return i
    def nvmlDeviceGetName(h): return f"Fake GPU {{h}}"
    def nvmlDeviceGetMemoryInfo(h): return SimpleNamespace(used=2**30, total=16 * 2**30)
"""


def test_gpu_status_lists_gpus_through_pynvml(monkeypatch):
    fake_module(monkeypatch, "pynvml", PYNVML_WITH_GPUS.format(n=2))
    assert gpu_lines() == [  # this fake driver reports neither utilisation nor processes
        "NVIDIA driver 550.54 (via nvidia-ml-py)",
        "gpu 0: Fake GPU 0, 1024 MiB used of 16384 MiB",
        "gpu 1: Fake GPU 1, 1024 MiB used of 16384 MiB",
    ]
    assert sys.modules["pynvml"].shut_down == [True]


def test_gpu_status_with_a_driver_but_no_gpu(monkeypatch):
    fake_module(monkeypatch, "pynvml", PYNVML_WITH_GPUS.format(n=0))
    assert gpu_lines() == ["no NVIDIA GPU found (pynvml: the driver reports 0 devices)"]


def test_gpu_status_through_gputil(monkeypatch):
    fake_module(monkeypatch, "pynvml")
    fake_module(monkeypatch, "GPUtil", """
        from types import SimpleNamespace
        def getGPUs():
            return [SimpleNamespace(id=0, name="Fake GPU", memoryUsed=10.0, memoryTotal=80.0, load=0.25, uuid="GPU-a",
                                    driver="550.54")]
    """)
    assert gpu_lines() == ["NVIDIA driver 550.54 (via GPUtil)",
                           "gpu 0: Fake GPU, 10 MiB used of 80 MiB, 25% utilization"]


def test_gpu_status_when_gputil_finds_no_nvidia_smi(monkeypatch):
    fake_module(monkeypatch, "pynvml")
    fake_module(monkeypatch, "GPUtil", """
        def getGPUs():
            raise FileNotFoundError("nvidia-smi")
    """)
    assert gpu_lines() == ["no NVIDIA GPU/driver found (GPUtil: nvidia-smi)"]


@pytest.mark.parametrize("script", [False, True], ids=["python -m ember", "ember"])
def test_unknown_command_is_a_usage_error(script):
    proc = run(["bogus"], script=script)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "usage:" in proc.stderr
    assert "invalid choice: 'bogus'" in proc.stderr and "info" in proc.stderr


def test_missing_command_is_a_usage_error(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "missing command; choose from: info" in err


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"ember {ember.__version__}"


def test_broken_plugin_is_reported_not_a_traceback(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent("""
        import importlib.metadata as md
        _real = md.entry_points
        def entry_points(**kw):
            eps = _real(**kw)
            if kw.get("group") == "ember":
                return list(eps) + [md.EntryPoint("broken", "ember_no_such_plugin_module", "ember")]
            return eps
        md.entry_points = entry_points
    """))
    proc = run(["info"], env_extra={"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    plugins = section(proc.stdout, "plugins")
    assert len(plugins) == 1
    assert plugins[0].startswith("ERROR: could not load ember plugin 'broken' (ember_no_such_plugin_module)")
    assert "NVIDIA GPUs:" in proc.stdout  # the rest of the report still comes
