"""``ember.compile(model, example_inputs, backend=...)`` with onnxruntime and OpenVINO: eager outputs,
recompiling for new shapes and new weights, and the errors."""
import numpy as np
import pytest

import ember
from ember import nn

TOL = dict(rtol=1e-4, atol=1e-5)
BACKENDS = ["onnxruntime", "openvino"]  # the dev group installs both (ember-onnx[openvino])


def small_cnn():
    ember.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 4, 3, stride=2), nn.Flatten(), nn.Linear(4 * 3 * 3, 5)).eval()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_compiled_model_gives_the_eager_outputs_for_new_inputs(backend):
    net = small_cnn()
    fast = ember.compile(net, ember.randn(2, 3, 16, 16), backend=backend)
    x = ember.randn(2, 3, 16, 16)
    out = fast(x)
    assert isinstance(out, ember.Tensor) and out.grad_fn is None and out.shape == (2, 5)
    np.testing.assert_allclose(out.numpy(), net(x).detach().numpy(), **TOL)


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_batch_size_and_a_weight_change_are_followed(backend):
    net = small_cnn()
    fast = ember.compile(net, ember.randn(2, 3, 16, 16), backend=backend)
    x = ember.randn(5, 3, 16, 16)
    np.testing.assert_allclose(fast(x).numpy(), net(x).detach().numpy(), **TOL)  # another signature: re-exported
    with ember.no_grad():
        net[0].weight.mul_(-2.0)  # in place, as an optimizer step: the compiled model must not keep stale weights
    np.testing.assert_allclose(fast(x).numpy(), net(x).detach().numpy(), **TOL)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_function_with_several_outputs_returns_a_tuple(backend):
    w = ember.randn(4, 3)
    fast = ember.compile(lambda a, b: (a @ w, (a @ w).relu() + b), (ember.randn(2, 4), ember.randn(2, 3)),
                         backend=backend)
    a, b = ember.randn(2, 4), ember.randn(2, 3)
    first, second = fast(a, b)
    np.testing.assert_allclose(first.numpy(), (a @ w).numpy(), **TOL)
    np.testing.assert_allclose(second.numpy(), ((a @ w).relu() + b).numpy(), **TOL)
    again, _ = fast(b @ w.T, b)  # a second call must not overwrite the first call's outputs
    np.testing.assert_allclose(first.numpy(), (a @ w).numpy(), **TOL)
    np.testing.assert_allclose(again.numpy(), (b @ w.T @ w).numpy(), **TOL)


def test_options_reach_the_session_and_bad_ones_are_named(monkeypatch):
    import onnxruntime

    made = []
    session_class = onnxruntime.InferenceSession
    monkeypatch.setattr(onnxruntime, "InferenceSession",
                        lambda *a, **k: made.append(session_class(*a, **k)) or made[-1])
    net = small_cnn()
    ember.compile(net, ember.randn(1, 3, 16, 16), options={"intra_op_num_threads": 1,
                                                           "graph_optimization_level": "basic"})
    assert made[0].get_session_options().intra_op_num_threads == 1
    assert made[0].get_session_options().graph_optimization_level == onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    with pytest.raises(ValueError, match="unknown option 'threads'; known: .*intra_op_num_threads"):
        ember.compile(net, ember.randn(1, 3, 16, 16), options={"threads": 1})
    with pytest.raises(TypeError, match="option intra_op_num_threads must be int, got '1'"):
        ember.compile(net, ember.randn(1, 3, 16, 16), options={"intra_op_num_threads": "1"})


def test_openvino_options_reach_the_compiled_model_and_float32_is_its_default_precision(monkeypatch):
    import openvino

    configs = []
    compile_model = openvino.Core.compile_model
    monkeypatch.setattr(openvino.Core, "compile_model",
                        lambda self, model, device, config: configs.append(config) or compile_model(self, model, device,
                                                                                                   config))
    net = small_cnn()
    ember.compile(net, ember.randn(1, 3, 16, 16), backend="openvino", options={"inference_num_threads": 1})
    ember.compile(net, ember.randn(1, 3, 16, 16), backend="openvino", options={"inference_precision": "bf16"})
    assert configs[0]["INFERENCE_NUM_THREADS"] == 1 and configs[0]["INFERENCE_PRECISION_HINT"] == openvino.Type.f32
    assert configs[1]["INFERENCE_PRECISION_HINT"] == openvino.Type.bf16
    with pytest.raises(ValueError, match="backend='openvino'.*unknown option 'intra_op_num_threads'; known: "
                                         ".*inference_num_threads"):
        ember.compile(net, ember.randn(1, 3, 16, 16), backend="openvino", options={"intra_op_num_threads": 1})
    with pytest.raises(ValueError, match=r"inference_precision must be one of \['bf16', 'f16', 'f32'\], got 'fp8'"):
        ember.compile(net, ember.randn(1, 3, 16, 16), backend="openvino", options={"inference_precision": "fp8"})


def test_a_training_model_is_compiled_in_eval_mode_with_a_warning():
    net = small_cnn().train()
    with pytest.warns(UserWarning, match=r"training mode; the compiled model runs it in eval mode") as caught:
        fast = ember.compile(net, ember.randn(2, 3, 16, 16))
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert net.training
    x = ember.randn(2, 3, 16, 16)
    np.testing.assert_allclose(fast(x).numpy(), net.eval()(x).detach().numpy(), **TOL)


@pytest.mark.parametrize("backend", BACKENDS)
def test_errors_name_what_is_wrong(backend):
    net = small_cnn()
    with pytest.raises(ValueError, match=r"no compiler backend 'inductor'; installed: \['onnxruntime', 'openvino'\]"):
        ember.compile(net, ember.randn(1, 3, 16, 16), backend="inductor")
    with pytest.raises(TypeError, match="needs example_inputs"):
        ember.compile(net)
    fast = ember.compile(net, ember.randn(1, 3, 16, 16), backend=backend)
    with pytest.raises(RuntimeError, match=f"input 0 requires grad, but a model compiled for {backend}.*inference"):
        fast(ember.randn(1, 3, 16, 16, requires_grad=True))
    with pytest.raises(TypeError, match="input 0 is a list; expected tensors"):
        fast([1.0])


def test_a_model_with_an_op_onnx_cannot_express_fails_at_compile_naming_the_op():
    with pytest.raises(ember.onnx.UnsupportedExportError, match="cannot be exported: .*hypot"):
        ember.compile(lambda x: ember.hypot(x, x), ember.tensor([0.0, 1.0, 2.0]))


def test_a_plugin_can_add_a_compiler_backend():
    class Identity:
        @ember.hookimpl
        def ember_compilers(self):
            return {"identity": lambda model, example_inputs, options: ("compiled", model, example_inputs, options)}

    name = ember.register_plugin(Identity(), "identity-compiler")
    try:
        x = ember.ones(1)
        assert ember.compile(len, x, backend="identity", options={"a": 1}) == ("compiled", len, (x,), {"a": 1})
        assert "identity" in ember.list_compilers()
    finally:
        ember.unregister_plugin(name)


def test_the_compiler_plugin_does_not_import_onnx_until_a_model_is_compiled():
    import subprocess
    import sys
    code = ("import sys, ember\nember.zeros(1)\nassert 'openvino' in ember.list_compilers()\n"
            "print('onnx' in sys.modules, 'ember.onnx' in sys.modules, 'openvino' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "False"]
