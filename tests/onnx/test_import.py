"""ember.onnx.load: ONNX graphs built with onnx.helper run in ember as in onnxruntime, and train."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnx.helper import make_node

import ember
from ember import nn
from ember.onnx._import import OnnxImportError, UnsupportedImportError, load

from .import_cases import CASES, F32, LAYOUT_CASES, RNN_CASES, rand


def make_model(nodes, inputs, outputs, inits=None, opset=17, check=True):
    """A checked model; ``inputs``/``outputs`` map names to (element type, shape or None)."""
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(name, *spec) for name, spec in inputs.items()],
        [helper.make_tensor_value_info(name, *spec) for name, spec in outputs.items()],
        [numpy_helper.from_array(array, name) for name, array in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model, full_check=True)
    return model


def case_model(case):
    """The case's model, checked; output shapes (which the checker wants) come from onnxruntime's results."""
    inputs = {name: (helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for name, a in case.inputs.items()}
    unchecked = make_model(case.nodes, inputs, {name: (t, None) for name, t in case.outputs.items()}, case.inits,
                           case.opset, check=False)
    shapes = [r.shape for r in run_ort(unchecked, list(case.inputs.values()))]
    outputs = {name: (t, shape) for (name, t), shape in zip(case.outputs.items(), shapes)}
    return make_model(case.nodes, inputs, outputs, case.inits, case.opset, check=case.checked)


def run_ort(model, arrays):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, arrays)))


def run_ember(module, arrays):
    out = module(*[ember.from_numpy(a.copy()) for a in arrays])
    return [t.detach().numpy() for t in (out if isinstance(out, tuple) else (out,))]


def assert_same(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES + RNN_CASES, ids=lambda c: c.id)
def test_op_matches_onnxruntime(case):
    model = case_model(case)
    arrays = list(case.inputs.values())
    assert_same(run_ember(load(model), arrays), run_ort(model, arrays))


@pytest.mark.parametrize("batch_first, time_major", LAYOUT_CASES, ids=lambda c: c.id)
def test_batch_first_rnn_matches_time_major_onnxruntime(batch_first, time_major):
    """Same weights; inputs and states of the time-major twin are the batch-first ones transposed."""
    time_major.inits = batch_first.inits
    arrays = [a.swapaxes(0, 1) for a in batch_first.inputs.values()]
    y, *states = run_ort(case_model(time_major), arrays)
    expected = [y.transpose(2, 0, 1, 3)] + [s.swapaxes(0, 1) for s in states]
    model = make_model(batch_first.nodes, {n: (F32, a.shape) for n, a in batch_first.inputs.items()},
                       {n: (F32, e.shape) for n, e in zip(batch_first.outputs, expected)}, batch_first.inits)
    assert_same(run_ember(load(model), list(batch_first.inputs.values())), expected)


# -- whole models ---------------------------------------------------------------------------------------------
def cnn_model():
    """Conv-Relu-MaxPool-Flatten-Gemm with a dynamic batch axis, initializers named as PyTorch would."""
    nodes = [make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["c"], pads=[1, 1, 1, 1]),
             make_node("Relu", ["c"], ["r"]),
             make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             make_node("Flatten", ["p"], ["f"]),
             make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], transB=1)]
    rng = np.random.default_rng(2)
    inits = {"conv1.weight": rng.uniform(-1, 1, (4, 1, 3, 3)), "conv1.bias": rng.uniform(-1, 1, 4),
             "fc.weight": rng.uniform(-0.3, 0.3, (3, 4 * 3 * 3)), "fc.bias": rng.uniform(-1, 1, 3)}
    inits = {name: array.astype(np.float32) for name, array in inits.items()}
    return make_model(nodes, {"x": (F32, ["batch", 1, 6, 6])}, {"y": (F32, ["batch", 3])}, inits)


def lstm_model():
    """LSTM over a dynamic batch, last hidden state through a linear head."""
    nodes = [make_node("LSTM", ["x", "W", "R", "B"], ["", "h"], hidden_size=4),
             make_node("Squeeze", ["h", "zero"], ["hs"]),
             make_node("Gemm", ["hs", "head.weight", "head.bias"], ["y"], transB=1)]
    rng = np.random.default_rng(3)
    inits = {name: rng.uniform(-1, 1, shape).astype(np.float32) for name, shape in
             [("W", (1, 16, 3)), ("R", (1, 16, 4)), ("B", (1, 32)), ("head.weight", (2, 4)), ("head.bias", (2,))]}
    inits["zero"] = np.array([0], np.int64)
    return make_model(nodes, {"x": (F32, [5, "batch", 3])}, {"y": (F32, ["batch", 2])}, inits)


@pytest.mark.parametrize("make, shape", [(cnn_model, (1, 6, 6)), (lstm_model, (5, 3))], ids=["cnn", "lstm"])
def test_dynamic_batch_at_two_sizes(make, shape):
    model = make()
    module = load(model)
    for batch in (1, 4):
        x = np.random.default_rng(batch).standard_normal((batch, *shape) if make is cnn_model
                                                         else (shape[0], batch, shape[1])).astype(np.float32)
        assert_same(run_ember(module, [x]), run_ort(model, [x]))


def shape_chain_model():
    """Shape, Constant, Gather, Unsqueeze, Concat, Reshape: values made inside the graph land on the input's device."""
    (case,) = [c for c in CASES if c.id == "dynamic-flatten-chain"]
    return case_model(case)


@pytest.mark.parametrize("make, shape", [(cnn_model, (3, 1, 6, 6)), (lstm_model, (5, 3, 3)),
                                         (shape_chain_model, (3, 2, 4))], ids=["cnn", "lstm", "shape-chain"])
def test_runs_on_each_backend(device, make, shape):
    model = make()
    module = load(model).to(device)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    y = module(ember.from_numpy(x).to(device))
    assert y.device.type == device
    assert_same([y.detach().cpu().numpy()], run_ort(model, [x]))


@pytest.mark.parametrize("make, lr", [(cnn_model, 0.02), (lstm_model, 0.3)], ids=["cnn", "lstm"])
def test_fine_tuning_reduces_the_loss(make, lr):
    ember.manual_seed(0)
    module = load(make())
    x = ember.randn(8, 1, 6, 6) if make is cnn_model else ember.randn(5, 8, 3)
    target = ember.randn(8, module(x).shape[1])
    optimizer = ember.optim.SGD(module.parameters(), lr=lr)
    losses = []
    for _ in range(10):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(module(x), target)
        loss.backward()
        losses.append(loss.item())
        assert all(p.grad is not None and bool(ember.isfinite(p.grad).all()) for p in module.parameters())
        optimizer.step()
    assert losses[-1] < 0.7 * losses[0]


def test_gradients_match_the_same_layers_written_in_ember():
    module = load(cnn_model())
    x = ember.from_numpy(rand(2, 1, 6, 6))
    module(x).square().sum().backward()
    params = {name: p.detach().clone().requires_grad_(True) for name, p in module.named_parameters()}
    h = nn.functional.max_pool2d(nn.functional.relu(nn.functional.conv2d(x, params["conv1.weight"],
                                                                         params["conv1.bias"], padding=1)), 2)
    nn.functional.linear(h.flatten(1), params["fc.weight"], params["fc.bias"]).square().sum().backward()
    for name, p in module.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), params[name].grad.numpy(), rtol=1e-5, atol=1e-6)


def test_recurrent_import_gradcheck_float64():
    """LSTM (ember's layer op with reordered gates) and GRU (ONNX's default reset, an ember loop) in float64."""
    rng = np.random.default_rng(1)
    nodes = [make_node("LSTM", ["x", "W", "R", "B"], ["y1"], hidden_size=2, direction="bidirectional"),
             make_node("Reshape", ["y1", "shape"], ["y1f"]),
             make_node("GRU", ["y1f", "Wg", "Rg", "Bg"], ["y"], hidden_size=2)]
    inits = {"W": rng.uniform(-1, 1, (2, 8, 2)), "R": rng.uniform(-1, 1, (2, 8, 2)), "B": rng.uniform(-1, 1, (2, 16)),
             "shape": np.array([0, 0, -1], np.int64), "Wg": rng.uniform(-1, 1, (1, 6, 4)),
             "Rg": rng.uniform(-1, 1, (1, 6, 2)), "Bg": rng.uniform(-1, 1, (1, 12))}
    model = make_model(nodes, {"x": (TensorProto.DOUBLE, [3, 2, 2])}, {"y": (TensorProto.DOUBLE, [3, 1, 2, 2])}, inits)
    module = load(model)
    x = ember.tensor(rng.uniform(-1, 1, (3, 2, 2)), dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(module, (x,))
    grad_params = [p for p in module.parameters() if p.requires_grad]
    module(x).sum().backward()
    assert len(grad_params) == 6 and all(p.grad is not None for p in grad_params)


def scan_model():
    """A Scan with state, two scan inputs (one along axis 1, one reversed), outputs stacked on different axes,
    and a body reading the outer initializer ``w``."""
    vec = [helper.make_tensor_value_info(name, F32, [2]) for name in ("s", "xe", "ze", "s_next", "o1", "o2")]
    body = helper.make_graph([make_node("Mul", ["xe", "w"], ["xw"]), make_node("Add", ["s", "xw"], ["s_next"]),
                              make_node("Mul", ["s_next", "ze"], ["o1"]), make_node("Add", ["xe", "ze"], ["o2"])],
                             "body", vec[:3], vec[3:])
    scan = make_node("Scan", ["s0", "x", "z"], ["s_final", "y1", "y2"], body=body, num_scan_inputs=2,
                     scan_input_axes=[0, 1], scan_input_directions=[0, 1], scan_output_axes=[0, -1],
                     scan_output_directions=[1, 0])
    return make_model([scan], {"s0": (F32, [2]), "x": (F32, [4, 2]), "z": (F32, [2, 4])},
                      {"s_final": (F32, [2]), "y1": (F32, [4, 2]), "y2": (F32, [2, 4])}, {"w": rand(2)})


def test_scan_matches_onnxruntime_and_trains_outer_weights():
    model = scan_model()
    arrays = [rand(2), rand(4, 2), rand(2, 4)]
    module = load(model)
    assert_same(run_ember(module, arrays), run_ort(model, arrays))
    s_final, y1, y2 = module(*[ember.from_numpy(a) for a in arrays])
    (s_final.sum() + y1.sum()).backward()
    x = arrays[1]  # s_final = s0 + w * sum_t x_t, so d s_final.sum() / dw = sum_t x_t (plus y1's share)
    assert module.w.grad is not None
    s_steps = arrays[0] + np.cumsum(x * module.w.detach().numpy(), axis=0)
    z_steps = arrays[2][:, ::-1].T
    d_y1 = np.array([np.sum(x[:t + 1], axis=0) for t in range(4)]) * z_steps
    np.testing.assert_allclose(module.w.grad.numpy(), x.sum(0) + d_y1.sum(0), rtol=1e-5)
    assert np.allclose(s_steps[-1], s_final.detach().numpy(), atol=1e-6)


def test_unsupported_op_inside_a_subgraph_fails_at_load():
    body = helper.make_graph([make_node("Hardmax", ["xe"], ["o"], name="inner")], "body",
                             [helper.make_tensor_value_info("xe", F32, [2])],
                             [helper.make_tensor_value_info("o", F32, [2])])
    scan = make_node("Scan", ["x"], ["y"], body=body, num_scan_inputs=1)
    model = make_model([scan], {"x": (F32, [3, 2])}, {"y": (F32, [3, 2])})
    with pytest.raises(UnsupportedImportError, match="Hardmax node 'inner'"):
        load(model)


@pytest.mark.parametrize("op, gates, attrs", [("LSTM", 4, {"direction": "bidirectional"}), ("GRU", 3, {}),
                                               ("GRU", 3, {"linear_before_reset": 1, "direction": "reverse"}),
                                               ("RNN", 1, {})], ids=["lstm", "gru", "gru-lbr", "rnn"])
def test_recurrent_gradcheck_wrt_weights_and_states(op, gates, attrs):
    """Weights given as graph inputs, so gradcheck perturbs them too (the gate reordering included)."""
    dirs, hidden = (2 if attrs.get("direction") == "bidirectional" else 1), 2
    shapes = {"x": [3, 2, 2], "W": [dirs, gates * hidden, 2], "R": [dirs, gates * hidden, hidden],
              "B": [dirs, 2 * gates * hidden], "h0": [dirs, 2, hidden]}
    names = ["x", "W", "R", "B", "", "h0"]
    if op == "LSTM":
        shapes["c0"] = [dirs, 2, hidden]
        names.append("c0")
    node = make_node(op, names, ["y", "y_h"], hidden_size=hidden, **attrs)
    model = make_model([node], {n: (TensorProto.DOUBLE, shape) for n, shape in shapes.items()},
                       {"y": (TensorProto.DOUBLE, [3, dirs, 2, hidden]),
                        "y_h": (TensorProto.DOUBLE, [dirs, 2, hidden])})
    module = load(model)
    rng = np.random.default_rng(4)
    inputs = [ember.tensor(rng.uniform(-1, 1, shape), dtype=ember.float64, requires_grad=True)
              for shape in shapes.values()]
    assert ember.autograd.gradcheck(module, inputs)


def glue_model(elem):
    """Slice with a negative step, Gather, Expand, Pad, Split, Concat, Transpose, Resize, LayerNormalization with a
    broadcast scale, Reshape, Gemm with alpha/beta; inputs x, ln_scale, w, bias of element type ``elem``."""
    nodes = [make_node("Slice", ["x", "s", "e", "a", "t"], ["sl"]),          # [2, 3, 4] -> [2, 2, 4]
             make_node("Gather", ["sl", "idx"], ["g"], axis=2),              # -> [2, 2, 3]
             make_node("Expand", ["g", "shape"], ["ex"]),                    # -> [2, 2, 2, 3]
             make_node("Pad", ["ex", "pads"], ["p"], mode="reflect"),        # -> [2, 2, 2, 5]
             make_node("Split", ["p", "split"], ["p1", "p2"], axis=3),
             make_node("Concat", ["p2", "p1"], ["c"], axis=3),
             make_node("Transpose", ["c"], ["tr"], perm=[1, 0, 2, 3]),
             make_node("Resize", ["tr", "", "scales"], ["rs"], mode="linear"),  # -> [2, 2, 4, 10]
             make_node("LayerNormalization", ["rs", "ln_scale"], ["ln"], axis=2),
             make_node("Reshape", ["ln", "flat"], ["f"]),                     # -> [2, 80]
             make_node("Gemm", ["f", "w", "bias"], ["y"], transB=1, alpha=0.5, beta=2.0)]
    inits = {"s": np.array([2, 0], np.int64), "e": np.array([0, 10], np.int64), "a": np.array([1, 2], np.int64),
             "t": np.array([-1, 1], np.int64), "idx": np.array([3, -4, 1], np.int64),
             "shape": np.array([2, 1, 1, 1], np.int64), "pads": np.array([0, 0, 0, 1, 0, 0, 0, 1], np.int64),
             "split": np.array([2, 3], np.int64), "scales": np.array([1, 1, 2, 2], np.float32),
             "flat": np.array([0, -1], np.int64)}
    shapes = {"x": [2, 3, 4], "ln_scale": [1, 10], "w": [3, 80], "bias": [3]}
    return make_model(nodes, {n: (elem, shape) for n, shape in shapes.items()}, {"y": (elem, [2, 3])}, inits), shapes


def test_glue_ops_match_onnxruntime_and_gradcheck():
    """The glue the importer adds around ember ops is differentiable (float64 gradcheck)."""
    model, shapes = glue_model(F32)
    rng = np.random.default_rng(5)
    arrays = [rng.uniform(-1, 1, shape).astype(np.float32) for shape in shapes.values()]
    assert_same(run_ember(load(model), arrays), run_ort(model, arrays))
    model, shapes = glue_model(TensorProto.DOUBLE)
    inputs = [ember.tensor(rng.uniform(-1, 1, shape), dtype=ember.float64, requires_grad=True)
              for shape in shapes.values()]
    assert ember.autograd.gradcheck(load(model), inputs)


# -- module structure -----------------------------------------------------------------------------------------
def test_state_dict_keys_are_the_initializer_names():
    nodes = [make_node("Conv", ["x", "conv1.weight"], ["c"]),
             make_node("BatchNormalization", ["c", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"],
                       ["b"]),
             make_node("Reshape", ["b", "onnx::Reshape_7"], ["f"]),
             make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["g"], transB=1),
             make_node("Add", ["g", "fc"], ["h"]),             # "fc" is also a prefix: cannot be nested
             make_node("Mul", ["h", ".odd..name"], ["i"]),    # empty path parts: flattened
             make_node("Sub", ["i", "_nodes"], ["y"])]         # an attribute of the module: gets a suffix
    inits = {"conv1.weight": rand(2, 1, 1, 1), "bn.weight": rand(2), "bn.bias": rand(2), "bn.running_mean": rand(2),
             "bn.running_var": rand(2, low=0.5), "onnx::Reshape_7": np.array([0, -1], np.int64),
             "fc.weight": rand(3, 8), "fc.bias": rand(3), "fc": rand(3), ".odd..name": rand(3), "_nodes": rand(3)}
    model = make_model(nodes, {"x": (F32, [1, 1, 2, 2])}, {"y": (F32, [1, 3])}, inits)
    module = load(model)
    keys = {"conv1.weight", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var", "onnx::Reshape_7",
            "fc.weight", "fc.bias", "fc_1", "_odd__name", "_nodes_1"}
    assert set(module.state_dict()) == keys
    assert module.initializer_keys["fc"] == "fc_1" and module.initializer_keys[".odd..name"] == "_odd__name"
    assert {name for name, _ in module.named_buffers()} == {"bn.running_mean", "bn.running_var", "onnx::Reshape_7"}
    assert all(isinstance(p, nn.Parameter) for p in module.parameters())
    assert module.get_parameter("fc.weight").shape == (3, 8)
    x = rand(1, 1, 2, 2)
    assert_same(run_ember(module, [x]), run_ort(model, [x]))
    # loading a state dict into the module changes what it computes
    state = {k: v.clone() for k, v in module.state_dict().items()}
    state["fc.bias"] = state["fc.bias"] + 1.0
    before = run_ember(module, [x])[0]
    module.load_state_dict(state)
    np.testing.assert_allclose(run_ember(module, [x])[0], before + inits[".odd..name"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("source", ["path", "bytes", "proto", "file"])
def test_load_sources(tmp_path, source):
    model = cnn_model()
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    f = {"path": str(path), "bytes": model.SerializeToString(), "proto": model, "file": None}[source]
    if source == "file":
        with open(path, "rb") as handle:
            module = load(handle)
    else:
        module = load(f)
    x = rand(2, 1, 6, 6)
    assert_same(run_ember(module, [x]), run_ort(model, [x]))


def test_multiple_outputs_and_inputs_come_back_in_order():
    nodes = [make_node("Add", ["a", "b"], ["s"]), make_node("Sub", ["a", "b"], ["d"])]
    model = make_model(nodes, {"a": (F32, [2]), "b": (F32, [2])}, {"d": (F32, [2]), "s": (F32, [2])})
    module = load(model)
    assert module.input_names == ["a", "b"] and module.output_names == ["d", "s"]
    assert repr(module) == "OnnxModule(inputs=['a', 'b'], outputs=['d', 's'], nodes=2)"
    d, s = module(ember.tensor([5.0, 1.0]), ember.tensor([2.0, 3.0]))
    assert d.tolist() == [3.0, -2.0] and s.tolist() == [7.0, 4.0]


# -- errors ---------------------------------------------------------------------------------------------------
def test_unsupported_op_names_op_and_node():
    model = make_model([make_node("Hardmax", ["x"], ["y"], name="my_hardmax")], {"x": (F32, [2, 3])},
                       {"y": (F32, [2, 3])})
    with pytest.raises(UnsupportedImportError, match="Hardmax node 'my_hardmax'.*does not support the ONNX op"):
        load(model)


UNSUPPORTED = [
    (make_node("Resize", ["x", "", "s"], ["y"], mode="cubic", name="up"), [1, 1, 2, 2],
     {"s": np.array([1, 1, 2, 2], np.float32)}, "Resize node 'up': mode 'cubic'", True),
    (make_node("Resize", ["x", "", "s"], ["y"], coordinate_transformation_mode="tf_half_pixel_for_nn", name="tf"),
     [1, 1, 2, 2], {"s": np.array([1, 1, 2, 2], np.float32)},
     "Resize node 'tf': nearest resize with coordinate_transformation_mode 'tf_half_pixel_for_nn'", True),
    (make_node("Conv", ["x", "w"], ["y"], name="c3"), [1, 1, 2, 2, 2], {"w": rand(1, 1, 1, 1, 1)},
     "Conv node 'c3': a 3-D input", False),
    (make_node("LSTM", ["x", "W", "R", "", "", "", "", "P"], ["y"], hidden_size=1, name="peep"), [2, 1, 1],
     {"W": rand(1, 4, 1), "R": rand(1, 4, 1), "P": rand(1, 3)}, "LSTM node 'peep': peepholes", True),
    (make_node("GRU", ["x", "W", "R"], ["y"], hidden_size=1, clip=1.0, name="g"), [2, 1, 1],
     {"W": rand(1, 3, 1), "R": rand(1, 3, 1)}, "GRU node 'g': clip", True),
    (make_node("RNN", ["x", "W", "R", "", "n"], ["y"], hidden_size=1, name="r"), [2, 2, 1],
     {"W": rand(1, 1, 1), "R": rand(1, 1, 1), "n": np.array([2, 1], np.int32)},
     r"RNN node 'r': sequence_lens \[2, 1\]", False),
    (make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[1], name="m"), [1, 1, 2], {},
     "MaxPool node 'm': the Indices output", True),
    (make_node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 1, 1], name="k3"), [1, 1, 2, 2, 2],
     {"w": rand(1, 1, 1, 1, 1)}, r"Conv node 'k3': a 3-D kernel_shape \[1, 1, 1\]", True),
]


@pytest.mark.parametrize("node, shape, inits, message, at_load", UNSUPPORTED,
                         ids=lambda v: getattr(v, "name", None))
def test_unsupported_attribute_names_node(node, shape, inits, message, at_load):
    """What the model alone shows unsupported fails at load; what depends on the inputs, when called."""
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F32, shape)],
                              [helper.make_tensor_value_info(name, F32, None) for name in node.output],
                              [numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedImportError, match=message + ".*is not supported by ember.onnx.load"):
        module = load(model)
        assert not at_load, "loaded"
        module(ember.ones(*shape))


def test_custom_domain_is_unsupported():
    node = make_node("FusedThing", ["x"], ["y"], domain="com.example", name="f")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F32, [1])],
                              [helper.make_tensor_value_info("y", F32, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    with pytest.raises(UnsupportedImportError, match="FusedThing node 'f'.*'com.example'"):
        load(model)


def test_wrong_number_of_inputs():
    module = load(cnn_model())
    with pytest.raises(TypeError, match=r"takes 1 input\(s\) \['x'\], got 2"):
        module(ember.ones(1, 1, 6, 6), ember.ones(1))


def test_missing_value_is_reported():
    graph = helper.make_graph([make_node("Relu", ["nowhere"], ["y"], name="r")], "g",
                              [helper.make_tensor_value_info("x", F32, [1])],
                              [helper.make_tensor_value_info("y", F32, [1])])
    with pytest.raises(OnnxImportError, match="Relu node 'r': its input 'nowhere'"):
        load(helper.make_model(graph))  # at load time, not at the first call


def test_bad_source_type():
    with pytest.raises(TypeError, match="path, bytes, a file object or an onnx.ModelProto, got int"):
        load(3)


def test_constant_inputs_are_buffers():
    """Float initializers read only as scales, clip bounds or a pad value are buffers, not parameters."""
    nodes = [make_node("Resize", ["x", "", "scales"], ["r"], mode="linear"),
             make_node("Clip", ["r", "lo", "hi"], ["c"]),
             make_node("Pad", ["c", "pads", "value"], ["y"])]
    inits = {"scales": np.array([1, 1, 2, 2], np.float32), "lo": np.array(-0.5, np.float32),
             "hi": np.array(0.5, np.float32), "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64),
             "value": np.array(9.0, np.float32)}
    model = make_model(nodes, {"x": (F32, [1, 1, 2, 2])}, {"y": (F32, [1, 1, 6, 6])}, inits)
    module = load(model)
    assert list(module.parameters()) == [] and {n for n, _ in module.named_buffers()} == set(inits)
    x = rand(1, 1, 2, 2)
    assert_same(run_ember(module, [x]), run_ort(model, [x]))


# -- property: Slice's clamping and negative steps -------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-8, 8), st.integers(-8, 8), st.sampled_from([-3, -2, -1, 1, 2, 3])),
                min_size=1, max_size=3),
       st.permutations([0, 1, 2]))
def test_slice_matches_onnxruntime(ranges, axes):
    x = np.arange(5 * 6 * 7, dtype=np.float32).reshape(5, 6, 7)
    starts, ends, steps = (np.array(v, np.int64) for v in zip(*ranges))
    axes = np.array([a - 3 if i % 2 else a for i, a in enumerate(axes[:len(ranges)])], np.int64)
    inits = {"s": starts, "e": ends, "a": axes, "t": steps}
    model = make_model([make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": (F32, x.shape)},
                       {"y": (F32, ["a", "b", "c"])}, inits)
    assert_same(run_ember(load(model), [x]), run_ort(model, [x]))


# -- property: window ops' padding, strides, dilations, auto_pad and ceil_mode ------------------------------------
WINDOW_OPS = ["Conv", "ConvTranspose", "MaxPool", "AveragePool"]


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(WINDOW_OPS), size=st.tuples(st.integers(4, 8), st.integers(4, 8)),
       kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)), strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       dilations=st.tuples(st.integers(1, 2), st.integers(1, 2)), pads=st.tuples(*[st.integers(0, 2)] * 4),
       auto_pad=st.sampled_from(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]),
       flag=st.booleans(), ceil_mode=st.booleans())
def test_window_ops_match_onnxruntime(op, size, kernel, strides, dilations, pads, auto_pad, flag, ceil_mode):
    from hypothesis import assume
    attrs = {"kernel_shape": list(kernel), "strides": list(strides), "auto_pad": auto_pad}
    if auto_pad == "NOTSET":
        attrs["pads"] = list(pads)
    if op != "AveragePool":
        attrs["dilations"] = list(dilations)
    if op == "MaxPool" and auto_pad.startswith("SAME"):  # onnxruntime ignores dilations there: see below
        attrs["dilations"] = [1, 1]
    if op in ("MaxPool", "AveragePool"):
        attrs["ceil_mode"] = int(ceil_mode)
        if auto_pad == "NOTSET":  # a window must start inside the input or its begin padding
            assume(all(p < k for p, k in zip(pads, kernel + kernel)))
        if auto_pad.startswith("SAME"):  # a stride past the window would need negative padding, which
            # onnxruntime rejects (MaxPool) or applies (AveragePool); ONNX's reference clamps it to 0
            assume(all((-(-n // s) - 1) * s + k >= n for n, s, k in zip(size, strides, kernel)))
        # and fit in the padded input (onnxruntime's size arithmetic rounds an empty output up to 1)
        extra = [pads[i] + pads[i + 2] if auto_pad == "NOTSET" else 0 for i in range(2)]
        assume(all((k - 1) * d + 1 <= n + e for k, d, n, e in zip(kernel, attrs.get("dilations", [1, 1]), size, extra)))
    if op == "AveragePool":
        attrs["count_include_pad"] = int(flag)
    if op == "ConvTranspose" and flag:
        attrs["output_padding"] = [min(s - 1, 1) for s in strides]
    inits = {}
    inputs = ["x"]
    if op in ("Conv", "ConvTranspose"):
        inits["w"] = rand(3, 2, *kernel)  # Conv: 3 out of 2 channels; ConvTranspose: 2 out of 3 channels
        inputs.append("w")
    x = rand(1, 3 if op == "ConvTranspose" else 2, *size)
    node = make_node(op, inputs, ["y"], **attrs)
    try:
        model = make_model([node], {"x": (F32, x.shape)}, {"y": (F32, None)}, inits, check=False)
        expected = run_ort(model, [x])
    except Exception:  # a configuration onnxruntime rejects (empty output, pads too large, ...)
        assume(False)
    assume(all(e.size for e in expected))
    assert_same(run_ember(load(model), [x]), expected)


def test_dilated_same_max_pool_follows_the_onnx_reference():
    """onnxruntime pads a dilated MaxPool with auto_pad=SAME_* as if undilated (even the output shape is off);
    ember follows the ONNX reference implementation, which pads for the dilated window."""
    from onnx.reference import ReferenceEvaluator
    node = make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 3], strides=[3, 1], dilations=[2, 2],
                     auto_pad="SAME_UPPER")
    model = make_model([node], {"x": (F32, [1, 2, 4, 5])}, {"y": (F32, [1, 2, 2, 5])})
    x = rand(1, 2, 4, 5)
    assert_same(run_ember(load(model), [x]), ReferenceEvaluator(model).run(None, {"x": x}))


@settings(max_examples=50, deadline=None)
@given(mode=st.sampled_from([(m, t) for m in ["nearest", "linear"]
                             for t in ["asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel"]
                             if (m, t) != ("linear", "asymmetric")]),
       nearest_mode=st.sampled_from(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]),
       rank=st.sampled_from([3, 4]), size=st.tuples(st.integers(2, 6), st.integers(2, 6)),
       by_scales=st.booleans(), scales=st.tuples(*[st.sampled_from([0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0])] * 2),
       sizes=st.tuples(st.integers(1, 9), st.integers(1, 9)))
def test_resize_matches_onnxruntime(mode, nearest_mode, rank, size, by_scales, scales, sizes):
    from hypothesis import assume
    spatial = rank - 2
    x = rand(1, 2, *size[:spatial])
    if by_scales:
        inputs, inits = ["x", "", "s"], {"s": np.array([1, 1, *scales[:spatial]], np.float32)}
        assume(all(int(n * f) >= 1 for n, f in zip(size, scales[:spatial])))
    else:
        inputs, inits = ["x", "", "", "z"], {"z": np.array([1, 2, *sizes[:spatial]], np.int64)}
    node = make_node("Resize", inputs, ["y"], mode=mode[0], coordinate_transformation_mode=mode[1],
                     nearest_mode=nearest_mode)
    model = make_model([node], {"x": (F32, x.shape)}, {"y": (F32, None)}, inits, check=False)
    assert_same(run_ember(load(model), [x]), run_ort(model, [x]))
