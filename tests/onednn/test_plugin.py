"""ember-onednn as a plugin: registered through its entry point over the built-in kernels, its line in
``python -m ember info``, what happens without oneDNN (no wheel, a library that does not load), and its threads."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import ember
import ember.nn.functional as F
from ember.__main__ import main, override_lines, status_lines
from ember.backends.cpu_kernels import convolution as built_in
from ember_onednn import _library, plugin

CONVOLUTION_OPS = ("convolution", "convolution_backward", "convolutionweightgrad")


def _cpu_claims():
    return ember.collect_claims("ember_op_kernels", backend=ember.device("cpu").backend)


def _indented(lines):
    """The leading indented lines of ``lines`` (a section of ``ember info``'s report), stripped."""
    body = []
    for line in lines:
        if not line.startswith("  "):
            break
        body.append(line.strip())
    return body


def _ember(code: str, **env) -> str:
    """Run ``code`` in a fresh interpreter with ``env`` added (a value None removes the variable); its stdout."""
    environ = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          env=environ, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def fresh_plugin():
    """The plugin unregistered and its loaded state forgotten; the test registers it again as it needs, and
    afterwards the plugin is back as it was."""
    saved = dict(plugin._state)
    ember.unregister_plugin("onednn")
    plugin._state.clear()
    _library.load.cache_clear()
    try:
        yield
    finally:
        if "onednn" in ember._plugins.plugin_names():
            ember.unregister_plugin("onednn")
        plugin._state.clear()
        plugin._state.update(saved)
        _library.load.cache_clear()
        ember.register_plugin(plugin, "onednn")


def test_the_entry_point_registers_it_over_the_built_in_kernels():
    assert "onednn" in ember._plugins.plugin_names()
    claims = _cpu_claims()
    assert {op: claims[op][1] for op in CONVOLUTION_OPS} == dict.fromkeys(CONVOLUTION_OPS, "onednn")
    assert all(f"op {op} on cpu: plugin onednn (over ember.backends.cpu)" in override_lines() for op in CONVOLUTION_OPS)


@pytest.mark.skipif(plugin.convolutions() is None, reason=f"oneDNN is not usable: {plugin.status()}")
def test_info_says_onednn_serves_the_convolutions(capsys):
    assert main(["info"]) == 0
    lines = _indented(capsys.readouterr().out.split("plugin status:\n", 1)[1].splitlines())
    line = next(line for line in lines if line.startswith("oneDNN kernels: "))
    assert line.startswith("oneDNN kernels: in use: oneDNN 3.") and line.endswith("[plugin onednn]")


def test_without_the_wheel_no_kernel_is_claimed_and_info_says_why(fresh_plugin, monkeypatch):
    def missing():
        raise _library.Unavailable("the wheel 'onednn-cpu-gomp' is not installed (simulated)")
    monkeypatch.setattr(_library, "library_path", missing)
    ember.register_plugin(plugin, "onednn")
    claims = _cpu_claims()
    assert all(claims[op][1] == "ember.backends.cpu" for op in CONVOLUTION_OPS)
    assert not any("onednn" in line for line in override_lines())
    assert "oneDNN kernels: not in use, ember's own kernels run: the wheel 'onednn-cpu-gomp' is not installed " \
           "(simulated)  [plugin onednn]" in status_lines()
    x = ember.randn(2, 3, 8, 8)
    w = ember.randn(4, 3, 3, 3)
    assert ember._plugins.op_kernels("cpu")["convolution"] is built_in.convolution
    assert F.conv2d(x, w, padding=1).shape == (2, 4, 8, 8)


def test_a_library_that_does_not_load_leaves_the_built_in_kernels_at_work(fresh_plugin, monkeypatch):
    def no_libgomp(path):
        raise OSError("libgomp.so.1: cannot open shared object file: No such file or directory")
    monkeypatch.setattr(_library.ctypes, "CDLL", no_libgomp)
    ember.register_plugin(plugin, "onednn")
    x = ember.randn(2, 3, 9, 7, requires_grad=True)
    w = ember.randn(4, 3, 3, 2, requires_grad=True)
    y = F.conv2d(x, w, stride=2, padding=1)
    y.sum().backward()
    assert plugin.convolutions() is None
    line = next(line for line in status_lines() if line.startswith("oneDNN kernels: "))
    assert "not in use, ember's own kernels run: the system's GNU OpenMP runtime libgomp.so.1 is missing" in line
    ember.unregister_plugin("onednn")
    x2, w2 = (ember.tensor(t.detach().numpy(), requires_grad=True) for t in (x, w))
    y2 = F.conv2d(x2, w2, stride=2, padding=1)
    y2.sum().backward()
    assert ember.equal(y, y2) and ember.equal(x.grad, x2.grad) and ember.equal(w.grad, w2.grad)


def test_turned_off_by_the_environment_ember_info_says_so():
    out = _ember("from ember.__main__ import main; main(['info'])", EMBER_ONEDNN_LIBRARY="")
    assert "oneDNN kernels: not in use, ember's own kernels run: turned off ($EMBER_ONEDNN_LIBRARY is set to " \
           "an empty string)  [plugin onednn]" in out
    assert "op convolution on cpu: plugin onednn" not in out


def test_a_missing_library_file_runs_the_built_in_kernels_and_says_so():
    out = _ember("""
        import ember, ember.nn.functional as F
        from ember.__main__ import status_lines
        x = ember.randn(1, 2, 5, 5, requires_grad=True)
        F.conv2d(x, ember.randn(3, 2, 3, 3)).sum().backward()
        print(x.grad.shape)
        print(status_lines())
        """, EMBER_ONEDNN_LIBRARY="/nonexistent/libdnnl.so.3")
    assert "ember.Size([1, 2, 5, 5])" in out
    assert "not in use, ember's own kernels run: /nonexistent/libdnnl.so.3 could not be loaded" in out


@pytest.mark.skipif(plugin.convolutions() is None, reason=f"oneDNN is not usable: {plugin.status()}")
@pytest.mark.parametrize("env, expected", [({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": None}, 1),
                                           ({"OPENBLAS_NUM_THREADS": "3", "OMP_NUM_THREADS": "2"}, 2)])
def test_onednn_s_threads_follow_numpy_s_blas_unless_openmp_is_told(env, expected):
    out = _ember("""
        import ctypes, ember, ember.nn.functional as F
        F.conv2d(ember.randn(1, 2, 5, 5), ember.randn(3, 2, 3, 3))
        print(ctypes.CDLL("libgomp.so.1").omp_get_max_threads())
        """, GOTO_NUM_THREADS=None, **env)
    assert out.split() == [str(expected)]


@pytest.mark.skipif(plugin.convolutions() is None, reason=f"oneDNN is not usable: {plugin.status()}")
def test_onednn_s_threads_follow_ember_set_num_threads():
    out = _ember("""
        import ctypes, ember, ember.nn.functional as F
        for n in (1, 3):
            ember.set_num_threads(n)
            F.conv2d(ember.randn(1, 2, 5, 5), ember.randn(3, 2, 3, 3))
            print(ctypes.CDLL("libgomp.so.1").omp_get_max_threads())
        """, GOTO_NUM_THREADS=None, OMP_NUM_THREADS=None, OPENBLAS_NUM_THREADS=None)
    assert out.split() == ["1", "3"]
