"""ember.onnx.export: the written model, names, dynamic axes, modes, constants, errors and third-party lowerings."""
import io
import subprocess
import sys
import warnings

import numpy as np
import onnx
import onnxruntime
import pytest

import ember
import ember.onnx
from ember import nn
from ember.autograd.function import Op


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))


def _export(model, args, **kw) -> onnx.ModelProto:
    buf = io.BytesIO()
    ember.onnx.export(model, args, buf, **kw)
    return onnx.load_from_string(buf.getvalue())


def _run(proto, *arrays):
    session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip([i.name for i in session.get_inputs()], arrays)))


def _mlp_reference(model, x):
    """The MLP written out in NumPy from its parameters."""
    w1, b1, w2, b2 = (p.detach().numpy() for p in model.parameters())
    return np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def test_mlp_passes_the_full_checker_and_matches_a_numpy_reference(tmp_path):
    model = _mlp().eval()
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    path = tmp_path / "mlp.onnx"
    ember.onnx.export(model, ember.tensor(x), str(path))
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    out, = _run(proto, x)
    np.testing.assert_allclose(out, _mlp_reference(model, x), rtol=1e-5, atol=1e-6)


def test_opset_and_ir_version_suit_onnxruntime():
    proto = _export(_mlp().eval(), ember.randn(2, 3))
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 17)]
    assert proto.ir_version == 8  # the first IR version for opset 17; onnxruntime reads it
    assert _export(_mlp().eval(), ember.randn(2, 3), opset_version=18).opset_import[0].version == 18


def test_parameters_become_initializers_named_by_state_dict_keys():
    model = _mlp().eval()
    proto = _export(model, ember.randn(2, 3))
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(inits[key], value.numpy())
    assert [i.name for i in proto.graph.input] == ["input"]


def test_export_params_false_makes_parameters_graph_inputs():
    model = _mlp().eval()
    proto = _export(model, ember.randn(2, 3), export_params=False)
    assert [i.name for i in proto.graph.input] == ["input", "0.weight", "0.bias", "2.weight", "2.bias"]
    assert not any(i.name.endswith(("weight", "bias")) for i in proto.graph.initializer)


def test_input_and_output_names():
    proto = _export(lambda a, b: (a + b, a * b), (ember.ones(2), ember.ones(2)), input_names=["a", "b"],
                    output_names=["total", "product"])
    assert [i.name for i in proto.graph.input] == ["a", "b"]
    assert [o.name for o in proto.graph.output] == ["total", "product"]
    total, product = _run(proto, np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32))
    np.testing.assert_array_equal(total, [4.0, 6.0])
    np.testing.assert_array_equal(product, [3.0, 8.0])


def test_default_names_and_an_output_that_is_an_input():
    proto = _export(lambda a, b: (b, a.exp()), (ember.zeros(2), ember.ones(2)))
    assert [i.name for i in proto.graph.input] == ["input_0", "input_1"]
    assert [o.name for o in proto.graph.output] == ["output_0", "output_1"]
    first, second = _run(proto, np.zeros(2, np.float32), np.full(2, 5.0, np.float32))
    np.testing.assert_array_equal(first, [5.0, 5.0])
    np.testing.assert_array_equal(second, [1.0, 1.0])


def test_too_many_names_is_an_error():
    with pytest.raises(ValueError, match="2 input names given for 1 input"):
        _export(lambda a: a + 1, ember.ones(2), input_names=["a", "b"])


def test_dynamic_axes_unknown_name_is_an_error():
    with pytest.raises(ValueError, match="'x'"):
        _export(lambda a: a + 1, ember.ones(2), dynamic_axes={"x": [0]})


def test_dynamic_batch_axis_runs_at_two_batch_sizes():
    model = _mlp().eval()
    proto = _export(model, ember.randn(2, 3), input_names=["x"], output_names=["y"],
                    dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    onnx.checker.check_model(proto, full_check=True)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    for n in (1, 7):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        out, = _run(proto, x)
        np.testing.assert_allclose(out, _mlp_reference(model, x), rtol=1e-5, atol=1e-6)


def test_dynamic_axes_as_a_list_get_generated_names():
    proto = _export(lambda a: a * 2, ember.ones(2, 3), input_names=["x"], dynamic_axes={"x": [0, 1]})
    dims = [d.dim_param for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["x_dynamic_axes_1", "x_dynamic_axes_2"]
    # the output follows both axes, and takes their names
    assert [d.dim_param for d in proto.graph.output[0].type.tensor_type.shape.dim] == dims


class _FlattenHead(nn.Module):
    """Reshapes with sizes read from ``x.shape`` (baked by the trace): the dynamic batch must still work."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 2)

    def forward(self, x):
        b = x.shape[0]
        h = x.view(b, -1)
        h = h.view(b, 3, 4).permute(0, 2, 1).reshape(b * 4, 3)
        return self.fc(h.reshape(b, 12)).softmax(-1)


def test_dynamic_batch_through_reshapes_that_read_the_shape():
    model = _FlattenHead().eval()
    x = ember.randn(2, 3, 2, 2)
    other = ember.randn(5, 3, 2, 2)
    diffs = ember.onnx.verify(model, x, input_names=["x"], dynamic_axes={"x": {0: "batch"}}, other_args=[other])
    assert max(diffs) < 1e-5


def test_dynamic_batch_through_multihead_attention():
    ember.manual_seed(0)
    attn = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = ember.randn(2, 5, 8)
    model = lambda q: attn(q, q, q, need_weights=False)[0]  # noqa: E731
    diffs = ember.onnx.verify(model, x, input_names=["q"], dynamic_axes={"q": {0: "batch", 1: "seq"}},
                              other_args=[ember.randn(3, 4, 8)])
    assert max(diffs) < 1e-5


def test_training_mode_warns_exports_in_eval_mode_and_is_restored():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 2))
    model[2].eval()  # a mixed state must come back as it was
    x = ember.randn(3, 4)
    with pytest.warns(UserWarning, match="training mode"):
        proto = _export(model, x)
    assert model.training and model[0].training and model[1].training and not model[2].training
    model.eval()
    out, = _run(proto, x.numpy())
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_eval_mode_model_gives_no_warning():
    model = _mlp().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _export(model, ember.randn(2, 3))
    assert not model.training


def test_constants_created_during_forward_become_initializers():
    def fn(x):
        offset = ember.arange(3, dtype=ember.float32)  # created inside forward: a constant
        return x + offset * ember.ones(3)  # an op on constants only: folded into one constant
    proto = _export(fn, ember.zeros(2, 3))
    assert [n.op_type for n in proto.graph.node] == ["Add"]
    out, = _run(proto, np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(out, [[1, 2, 3], [1, 2, 3]])
    unfolded = _export(fn, ember.zeros(2, 3), do_constant_folding=False)
    assert [n.op_type for n in unfolded.graph.node] == ["Mul", "Add"]
    np.testing.assert_array_equal(_run(unfolded, np.ones((2, 3), np.float32))[0], out)


def test_inplace_relu_is_followed():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(inplace=True), nn.Linear(3, 1)).eval()
    assert max(ember.onnx.verify(model, ember.randn(4, 3))) < 1e-5


def test_assignment_into_a_slice_during_forward_is_an_error():
    def fn(x):
        y = x * 1
        y[:, 0] = 0.0
        return y + 1
    with pytest.raises(ember.onnx.UnsupportedExportError, match="modified in place"):
        _export(fn, ember.ones(2, 2))


class Cube(Op):
    """A third-party op with no built-in lowering."""

    name_ = "cube"

    @staticmethod
    def forward(ctx, xp, a):
        return a * a * a


def test_op_without_lowering_is_an_error_naming_the_op():
    with pytest.raises(ember.onnx.UnsupportedExportError, match="no ONNX lowering for op 'cube'") as info:
        _export(lambda x: Cube.apply(x) + 1, ember.ones(2))
    assert isinstance(info.value, ember.EmberError)


class CubeLowering:
    @ember.hookimpl
    def ember_onnx_lowerings(self):
        return {"cube": lambda g, node: [g.op("Pow", node.inputs[0], g.const(3.0, node.input_dtypes[0]))]}


def test_third_party_plugin_lowering_is_used():
    name = ember.register_plugin(CubeLowering(), "cube-lowering")
    try:
        proto = _export(lambda x: Cube.apply(x) + 1, ember.ones(2))
        assert [n.op_type for n in proto.graph.node] == ["Pow", "Add"]
        out, = _run(proto, np.array([2.0, -1.0], np.float32))
        np.testing.assert_array_equal(out, [9.0, 0.0])
    finally:
        ember.unregister_plugin(name)
    with pytest.raises(ember.onnx.UnsupportedExportError, match="'cube'"):
        _export(lambda x: Cube.apply(x), ember.ones(2))


class ReluClash:
    @ember.hookimpl
    def ember_onnx_lowerings(self):
        return {"relu": lambda g, node: [g.op("Relu", node.inputs[0])]}


def test_lowering_clash_with_a_builtin_names_both_plugins():
    with pytest.raises(ember.PluginError, match="'relu'.*ember.onnx.lowerings.*relu-clash"):
        ember.register_plugin(ReluClash(), "relu-clash")
    assert not ember.get_plugin_manager().has_plugin("relu-clash")


def test_builtin_lowerings_are_a_plugin():
    assert ember.get_plugin_manager().has_plugin("ember.onnx.lowerings")
    assert ember.onnx.registered_lowerings()["matmul"] is ember.onnx.lowerings.tensor_ops.LOWERINGS["matmul"]


def test_import_ember_does_not_import_onnx():
    code = "import sys, ember, ember.nn; print('onnx' in sys.modules, 'ember.onnx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_no_trace_is_left_behind_after_an_error():
    from ember.autograd import function
    with pytest.raises(ember.onnx.UnsupportedExportError):
        _export(lambda x: Cube.apply(x), ember.ones(2))
    assert function.TRACE.get() is None
    assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]


def test_export_to_a_path_and_verbose_prints_the_graph(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    ember.onnx.export(lambda x: x.relu(), ember.ones(2), path, verbose=True)
    assert "Relu" in capsys.readouterr().out
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)


def test_bad_args_type_is_an_error():
    with pytest.raises(TypeError, match="args must be a tensor or a tuple"):
        _export(lambda x: x, np.ones(2))


def test_model_returning_a_non_tensor_is_an_error():
    with pytest.raises(ember.onnx.UnsupportedExportError, match="returned a dict"):
        _export(lambda x: {"y": x}, ember.ones(2))


def test_filled_tensor_made_with_a_dynamic_size_is_rebuilt_in_the_graph():
    def fn(x):
        pad = ember.full((x.shape[0], 2), 7.0)  # follows the batch: Expand of 7 to [batch, 2]
        return ember.cat([x, pad], dim=1)
    proto = _export(fn, ember.zeros(2, 3), input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    for n in (1, 4):
        out, = _run(proto, np.ones((n, 3), np.float32))
        np.testing.assert_array_equal(out, np.concatenate([np.ones((n, 3)), np.full((n, 2), 7.0)], axis=1))


def test_unfilled_tensor_made_with_a_dynamic_size_is_an_error():
    def fn(x):
        return x + ember.arange(x.shape[0], dtype=ember.float32)
    with pytest.raises(ember.onnx.UnsupportedExportError, match="created during forward.*dynamic axis"):
        _export(fn, ember.zeros(3), input_names=["x"], dynamic_axes={"x": [0]})


def test_lstm_initial_state_follows_the_dynamic_batch():
    ember.manual_seed(0)
    lstm = nn.LSTM(3, 4, batch_first=True).eval()
    diffs = ember.onnx.verify(lambda x: lstm(x)[0], ember.randn(2, 5, 3), input_names=["x"],
                              dynamic_axes={"x": {0: "batch", 1: "seq"}}, other_args=[ember.randn(4, 3, 3)])
    assert max(diffs) < 1e-5


def test_transformer_encoder_layer_with_dynamic_batch_and_sequence():
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True).eval()
    diffs = ember.onnx.verify(layer, ember.randn(2, 5, 8), input_names=["src"],
                              dynamic_axes={"src": {0: "batch", 1: "seq"}}, other_args=[ember.randn(3, 7, 8)])
    assert max(diffs) < 1e-5


def test_index_made_by_the_model_is_a_graph_value_not_a_constant():
    def fn(x):
        best = x.argmax(1, keepdim=True)  # computed from the input: must not be baked
        return x.gather(1, best), x.index_select(1, best.view(-1))
    x = ember.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    proto = _export(fn, x)
    other = np.array([[0.0, 1.0, 9.0], [2.0, 8.0, 1.0]], np.float32)
    picked, selected = _run(proto, other)
    np.testing.assert_array_equal(picked, [[9.0], [8.0]])
    np.testing.assert_array_equal(selected, other[:, [2, 1]])


class Doubled(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_user_autograd_function_exports_the_ops_its_forward_runs():
    proto = _export(lambda x: Doubled.apply(x).exp(), ember.ones(2))
    assert [n.op_type for n in proto.graph.node] == ["Mul", "Exp"]


def test_indices_from_the_end_stay_relative_on_dynamic_axes():
    def fn(x):
        return x[:, 1:-1], x[:, -2], x[..., :2], x[:, :-2:2], x[-1]
    x = ember.randn(2, 5, 3)
    diffs = ember.onnx.verify(fn, x, input_names=["x"], dynamic_axes={"x": {0: "batch", 1: "seq"}},
                              other_args=[ember.randn(3, 7, 3), ember.randn(1, 4, 3)])
    assert diffs == [0.0] * 5


def test_last_step_of_a_recurrent_model_with_dynamic_sequence():
    ember.manual_seed(0)
    embed, gru = nn.Embedding(10, 6), nn.GRU(6, 5, batch_first=True)
    diffs = ember.onnx.verify(lambda x: gru(embed(x))[0][:, -1], ember.tensor([[1, 2, 3], [4, 5, 6]]),
                              input_names=["x"], dynamic_axes={"x": {0: "batch", 1: "seq"}},
                              other_args=[ember.tensor([[1, 2], [3, 4], [5, 6]])])
    assert max(diffs) < 1e-5


class _ClassToken(nn.Module):
    """A learned token expanded to the batch size (read from ``x.shape``), as in vision transformers."""

    def __init__(self):
        super().__init__()
        self.token = nn.Parameter(ember.randn(1, 1, 4))

    def forward(self, x):
        return ember.cat([self.token.expand(x.shape[0], -1, -1), x], dim=1)


def test_expand_to_a_dynamic_size_the_input_lacks():
    ember.manual_seed(0)
    diffs = ember.onnx.verify(_ClassToken().eval(), ember.randn(2, 3, 4), input_names=["x"],
                              dynamic_axes={"x": {0: "batch", 1: "seq"}}, other_args=[ember.randn(5, 2, 4)])
    assert diffs == [0.0]


def test_inplace_arithmetic_is_followed():
    def fn(x):
        y = x * 2
        y += x      # a residual connection written in place
        y *= 0.5
        return y.relu()
    assert ember.onnx.verify(fn, ember.randn(2, 3)) == [0.0]
    y = ember.ones(2)
    y += 1  # after the trace: an eager in-place op, which no later export may pick up
    assert [node.op_type for node in _export(lambda x: -x, ember.ones(2)).graph.node] == ["Neg"]


class Halves(Op):
    """Two outputs; the plugin below lowers only the first."""

    name_ = "halves"
    multi_output = True

    @staticmethod
    def forward(ctx, xp, a):
        return a * 0.5, a * 1.5


class FirstHalfLowering:
    @ember.hookimpl
    def ember_onnx_lowerings(self):
        return {"halves": lambda g, node: [g.op("Mul", node.inputs[0], g.const(0.5)), None]}


def test_an_output_a_lowering_leaves_out_may_only_be_unused():
    name = ember.register_plugin(FirstHalfLowering(), "first-half")
    try:
        assert ember.onnx.verify(lambda x: Halves.apply(x)[0] + 1, ember.ones(2)) == [0.0]
        with pytest.raises(ember.onnx.UnsupportedExportError, match="uses output 1 of op 'halves'"):
            _export(lambda x: Halves.apply(x)[1] + 1, ember.ones(2))
    finally:
        ember.unregister_plugin(name)
