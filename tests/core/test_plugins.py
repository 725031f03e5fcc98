"""The plugin manager: built-ins and third parties registered alike, clashes named, kernels overridden."""
import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember import _plugins
from ember.autograd.function import Op
from ember.backends import cpu
from ember.ops.arith import Neg

TIMEOUT = 60


def run_python(source: str) -> subprocess.CompletedProcess:
    """Run ``source`` in a fresh interpreter (a fresh plugin manager)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source)], capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL, env=dict(os.environ))


class BackendPlugin:
    def __init__(self, *backends):
        self.backends = list(backends)

    @ember.hookimpl
    def ember_backends(self):
        return self.backends


class KernelPlugin:
    def __init__(self, backend_name, kernels):
        self.backend_name, self.kernels = backend_name, kernels

    @ember.hookimpl
    def ember_op_kernels(self, backend):
        return self.kernels if backend.name == self.backend_name else {}


# -- built-ins and entry points --------------------------------------------------

def test_builtins_are_registered_through_register_plugin_like_third_parties():
    proc = run_python("""
        import ember
        from ember import _plugins
        calls = []
        real = _plugins.register_plugin
        def recording(plugin, name=None):
            calls.append((name, plugin.__name__))
            return real(plugin, name)
        _plugins.register_plugin = recording
        ember.list_backends()
        print(calls)
    """)
    assert proc.returncode == 0, proc.stderr
    calls = eval(proc.stdout)
    builtins = [(name, name) for name in _plugins.BUILTIN_PLUGINS]
    assert calls[:len(builtins)] == builtins  # recorded only because the manager loads lazily, at first use
    third_party = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="ember")}
    assert dict(calls[len(builtins):]) == third_party


def test_builtin_cpu_backend_is_an_ordinary_plugin_module():
    assert "ember.backends.cpu" in _plugins.BUILTIN_PLUGINS
    pm = ember.get_plugin_manager()
    assert pm.get_plugin("ember.backends.cpu") is cpu
    assert _plugins.backends()["cpu"] == (cpu.BACKEND, "ember.backends.cpu")


def test_strict_backend_comes_from_its_entry_point():
    (ep,) = [ep for ep in importlib.metadata.entry_points(group="ember") if ep.name == "strict"]
    assert ep.value == "ember_array_api_strict"
    assert ep.dist.name == "ember-array-api-strict"
    plugin = ember.get_plugin_manager().get_plugin("strict")
    assert plugin is ep.load()
    backend, plugin_name = _plugins.backends()["strict"]
    assert plugin_name == "strict" and backend is plugin.BACKEND
    assert ember.ones(2, device="strict").device == ember.device("strict")


def test_broken_entry_point_is_a_plugin_error_naming_it():
    proc = run_python("""
        import importlib.metadata as md
        real = md.entry_points
        def entry_points(**kw):
            eps = real(**kw)
            if kw.get("group") == "ember":
                return list(eps) + [md.EntryPoint("broken", "ember_no_such_plugin_module", "ember")]
            return eps
        md.entry_points = entry_points
        import ember
        for attempt in range(2):  # the error repeats: no half-loaded plugin manager is left behind
            try:
                ember.list_backends()
            except ember.PluginError as exc:
                print(exc)
    """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    assert lines[0].startswith("could not load ember plugin 'broken' (ember_no_such_plugin_module): "
                               "ModuleNotFoundError")


def test_plugin_error_is_an_ember_error():
    assert issubclass(ember.PluginError, ember.EmberError)


# -- clashes -------------------------------------------------------------------------

def test_taken_plugin_name_names_both_plugins(registered):
    with pytest.raises(ember.PluginError,
                       match=re.escape(f"plugin name 'ember.backends.cpu' is claimed by both 'ember.backends.cpu' "
                                       f"and '{__name__}.KernelPlugin'")):
        registered(KernelPlugin("cpu", {}), "ember.backends.cpu")
    assert ember.get_plugin_manager().get_plugin("ember.backends.cpu") is cpu


def test_same_backend_device_type_from_two_plugins_names_both(registered):
    twin = type(cpu.BACKEND)()
    with pytest.raises(ember.PluginError,
                       match=r"the backend for device type 'cpu' is given by both plugin 'ember.backends.cpu' "
                             r"and plugin 'second-cpu'"):
        registered(BackendPlugin(twin), "second-cpu")
    assert not ember.get_plugin_manager().has_plugin("second-cpu")
    assert _plugins.get_backend("cpu") is cpu.BACKEND


def test_same_kernel_from_two_plugins_names_both(registered):
    registered(KernelPlugin("cpu", {"neg": Neg.forward}), "first-neg")
    with pytest.raises(ember.PluginError,
                       match=r"the kernel of op 'neg' on backend 'cpu' is given by both plugin 'first-neg' "
                             r"and plugin 'second-neg'"):
        registered(KernelPlugin("cpu", {"neg": Neg.forward}), "second-neg")
    assert not ember.get_plugin_manager().has_plugin("second-neg")


def test_same_op_kernel_on_different_backends_is_no_clash(registered):
    registered(KernelPlugin("cpu", {"neg": Neg.forward}), "cpu-neg")
    registered(KernelPlugin("strict", {"neg": Neg.forward}), "strict-neg")
    assert (-ember.tensor([1.0], device="strict")).tolist() == [-1.0]


def test_hook_with_wrong_arguments_is_a_plugin_error_naming_the_plugin(registered):
    class WrongArguments:
        @ember.hookimpl
        def ember_op_kernels(self, backend, device):
            return {}

    with pytest.raises(ember.PluginError,
                       match=r"(?s)plugin 'wrong' \(.*WrongArguments'\) is not a valid ember plugin: "
                             r".*ember_op_kernels.*device"):
        registered(WrongArguments(), "wrong")
    assert not ember.get_plugin_manager().has_plugin("wrong")


def test_unregistering_an_unknown_plugin_names_the_registered_ones():
    with pytest.raises(ember.PluginError, match=r"no plugin named 'nope' is registered; registered: \[.*'strict'"):
        ember.unregister_plugin("nope")


# -- kernels -------------------------------------------------------------------------

def test_kernel_override_is_used_and_removed_again(registered):
    x = ember.tensor([1.0, -2.0], requires_grad=True)
    assert (-x).tolist() == [-1.0, 2.0]  # runs (and caches) the default kernel first
    calls = []

    def neg_times_ten(ctx, xp, a):
        calls.append(a.shape)
        return xp.negative(a) * 10

    registered(KernelPlugin("cpu", {"neg": neg_times_ten}), "neg-times-ten")
    y = -x
    assert calls == [(2,)]
    assert y.tolist() == [-10.0, 20.0]  # the output is the kernel's ...
    assert y.grad_fn.name() == "NegBackward0"
    y.sum().backward()
    assert calls == [(2,), (2,)]  # Neg's backward is ``-g``, an ember neg itself, so it runs the kernel too
    np.testing.assert_array_equal(x.grad.numpy(), [-10.0, -10.0])
    assert (-ember.tensor([1.0], device="strict")).tolist() == [-1.0]  # other backends keep the default

    ember.unregister_plugin("neg-times-ten")
    assert (-x).tolist() == [-1.0, 2.0]
    assert len(calls) == 2


class EinsumTrace(Op):
    name_ = "einsumtrace"

    @staticmethod
    def forward(ctx, xp, a):
        return xp.einsum("ii->", a)

    @staticmethod
    def backward(ctx, g):
        raise AssertionError("not reached")


def test_op_the_strict_backend_cannot_run_names_op_and_backend():
    a = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert EinsumTrace.apply(a).item() == 5.0
    with pytest.raises(ember.UnsupportedOpError,
                       match=r"op 'einsumtrace' is not supported by backend 'strict' "
                             r"\(its array namespace has no 'einsum'\)"):
        EinsumTrace.apply(a.to("strict"))


def test_unsupported_op_error_is_a_not_implemented_error():
    assert issubclass(ember.UnsupportedOpError, NotImplementedError)


def test_kernel_can_make_an_op_run_on_strict(registered):
    def einsum_trace_strict(ctx, xp, a):
        return xp.sum(xp.linalg.diagonal(a))

    registered(KernelPlugin("strict", {"einsumtrace": einsum_trace_strict}), "strict-trace")
    a = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device="strict")
    assert EinsumTrace.apply(a).item() == 5.0
