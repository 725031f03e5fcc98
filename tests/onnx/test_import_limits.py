"""ember.onnx.load(max_elements=...): tensors whose size comes from the inputs are refused when called, before
they are allocated, naming the node; valid sizes still run."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.helper import make_node, make_tensor_value_info

import ember
from ember.onnx import OnnxImportError, load

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(node, inputs, inits=None, opset=17):
    graph = helper.make_graph([node], "g", [make_tensor_value_info(n, t, None) for n, t in inputs.items()],
                              [make_tensor_value_info("y", F32, None)],
                              [numpy_helper.from_array(a, n) for n, a in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def i64(*values):
    return ember.tensor(list(values), dtype=ember.int64)


# (node, graph inputs, initializers, arguments within the limit, arguments past it, expected output shape)
CASES = {
    "ConstantOfShape": (make_node("ConstantOfShape", ["s"], ["y"], name="fill"), {"s": I64}, {},
                        [i64(10, 10)], [i64(10, 11)], (10, 10)),
    "Expand": (make_node("Expand", ["x", "s"], ["y"], name="ex"), {"x": F32, "s": I64}, {},
               [ember.ones(1, 10), i64(10, 10)], [ember.ones(1, 10), i64(11, 10)], (10, 10)),
    "Tile": (make_node("Tile", ["x", "r"], ["y"], name="tl"), {"x": F32, "r": I64}, {},
             [ember.ones(2, 5), i64(5, 2)], [ember.ones(2, 5), i64(5, 3)], (10, 10)),
    "Pad": (make_node("Pad", ["x", "p"], ["y"], name="pd"), {"x": F32, "p": I64}, {},
            [ember.ones(8, 8), i64(1, 1, 1, 1)], [ember.ones(8, 8), i64(1, 1, 1, 2)], (10, 10)),
    "Resize": (make_node("Resize", ["x", "", "", "s"], ["y"], name="rs"), {"x": F32, "s": I64}, {},
               [ember.ones(1, 1, 2, 2), i64(1, 1, 10, 10)], [ember.ones(1, 1, 2, 2), i64(1, 1, 10, 11)],
               (1, 1, 10, 10)),
    "Resize-scales": (make_node("Resize", ["x", "", "s"], ["y"], name="rs"), {"x": F32, "s": F32}, {},
                      [ember.ones(1, 1, 2, 2), ember.tensor([1.0, 1.0, 5.0, 5.0])],
                      [ember.ones(1, 1, 2, 2), ember.tensor([1.0, 1.0, 5.0, 6.0])], (1, 1, 10, 10)),
    "Conv-pads": (make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="cv"), {"x": F32},
                  {"w": np.ones((1, 1, 1, 1), np.float32)}, [ember.ones(1, 1, 8, 8)], [ember.ones(1, 1, 8, 9)],
                  (1, 1, 10, 10)),
    "ConvTranspose": (make_node("ConvTranspose", ["x", "w"], ["y"], strides=[5, 5], name="ct"), {"x": F32},
                      {"w": np.ones((1, 1, 5, 5), np.float32)}, [ember.ones(1, 1, 2, 2)], [ember.ones(1, 1, 2, 3)],
                      (1, 1, 10, 10)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES)
def test_sizes_past_max_elements_are_refused_before_allocating(case):
    node, inputs, inits, small, large, shape = case
    module = load(model(node, inputs, inits), max_elements=100)
    assert tuple(module(*small).shape) == shape  # 100 elements: at the limit, runs
    with pytest.raises(OnnxImportError, match=rf"{node.op_type} node '{node.name}': its (padded input|unpadded "
                                              rf"output|output) would have shape .*more than max_elements=100"):
        module(*large)


def test_the_default_limit_refuses_a_huge_declared_shape_at_call():
    module = load(model(CASES["ConstantOfShape"][0], {"s": I64}))
    with pytest.raises(OnnxImportError, match=r"ConstantOfShape node 'fill': its output would have shape "
                                              r"\[65536, 65536\], 4294967296 elements, more than "
                                              r"max_elements=2147483648"):
        module(i64(2 ** 16, 2 ** 16))


@pytest.mark.parametrize("name, value", [("max_elements", 0), ("max_scan_iterations", -1),
                                         ("max_elements", 1.5), ("max_scan_iterations", True)])
def test_limits_must_be_positive_ints(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a positive int"):
        load(model(CASES["ConstantOfShape"][0], {"s": I64}), **{name: value})
