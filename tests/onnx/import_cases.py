"""One-node (or few-node) ONNX graphs, one per supported op and attribute form, for tests/onnx/test_import.py.

Each case: the nodes, the graph inputs (name -> array), the initializers
(name -> array), the outputs (name -> ONNX element type) and the opset.
"""
from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto
from onnx.helper import make_node, make_tensor

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RNG = np.random.default_rng(0)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


@dataclass
class Case:
    id: str
    nodes: list
    inputs: dict
    inits: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=lambda: {"y": F32})
    opset: int = 17
    checked: bool = True  # False where onnx's shape inference disagrees with onnxruntime and its reference


def unary(op, low=-2.0, high=2.0, **attrs):
    return Case(f"{op}{attrs or ''}", [make_node(op, ["x"], ["y"], **attrs)], {"x": rand(2, 3, 4, low=low, high=high)})


CASES = [
    *[unary(op) for op in ["Neg", "Abs", "Exp", "Erf", "Tanh", "Sigmoid", "Relu", "Floor", "Ceil", "Identity",
                           "Softplus", "Sin", "Cos"]],
    *[unary(op, low=-0.9, high=0.9) for op in ["Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Atanh",
                                                "HardSwish"]],
    unary("Acosh", low=1.1, high=3.0),
    Case("BitwiseNot", [make_node("BitwiseNot", ["a"], ["y"])], {"a": i64(0, 5, -3)}, outputs={"y": I64}, opset=18),
    *[Case(op, [make_node(op, ["a", "b"], ["y"])], {"a": i64(12, 5, -3), "b": i64(10, 3, 6)}, outputs={"y": I64},
           opset=18) for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]],
    *[Case(f"{op}{attrs}", [make_node(op, ["x"], ["y"], **attrs)],
           {"x": np.array([[1, 3, 3, 0], [2, 2, -1, 2]], np.float32)}, outputs={"y": I64})
      for op in ["ArgMax", "ArgMin"]
      for attrs in ({}, {"axis": 1, "keepdims": 0}, {"axis": -1, "select_last_index": 1})],
    unary("Log", low=0.1), unary("Sqrt", low=0.0), unary("Reciprocal", low=0.5),
    unary("LeakyRelu", alpha=0.2), unary("LeakyRelu"), unary("Elu", alpha=0.5), unary("Sign"),
    unary("HardSigmoid", alpha=0.3, beta=0.4), unary("Shrink", bias=0.2, lambd=0.6),
    Case("Round-half-to-even", [make_node("Round", ["x"], ["y"])],
         {"x": np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7], np.float32)}),
    *[Case(f"{op}{attrs}", [make_node(op, ["x"], ["y"], **attrs)],
           {"x": np.array([np.inf, -np.inf, np.nan, 0.0, 1.0], np.float32)}, outputs={"y": BOOL})
      for op, attrs in [("IsNaN", {}), ("IsInf", {}), ("IsInf", {"detect_negative": 0}),
                        ("IsInf", {"detect_positive": 0})]],
    *[Case(f"Mod-fmod{f}", [make_node("Mod", ["a", "b"], ["y"], fmod=f)],
           {"a": i64(-7, 7, -8, 9), "b": i64(3, -3, 3, 4)}, outputs={"y": I64}) for f in (0, 1)],
    Case("Mod-float-fmod", [make_node("Mod", ["a", "b"], ["y"], fmod=1)], {"a": rand(2, 3, low=-5, high=5)},
         {"b": np.array([1.5, -2.0, 0.7], np.float32)}),
    Case("Gelu-opset20", [make_node("Gelu", ["x"], ["y"])], {"x": rand(2, 5)}, opset=20),
    Case("Gelu-tanh", [make_node("Gelu", ["x"], ["y"], approximate="tanh")], {"x": rand(2, 5)}, opset=20),
    *[Case(f"{op}-broadcast", [make_node(op, ["x", "w"], ["y"])], {"x": rand(2, 3, 4)},
           {"w": rand(3, 1, low=0.5, high=2.0)}) for op in ["Add", "Sub", "Mul", "Div"]],
    Case("Pow", [make_node("Pow", ["x", "e"], ["y"])], {"x": rand(2, 3, low=0.1, high=2.0)}, {"e": rand(3)}),
    Case("Div-int-truncates", [make_node("Div", ["a", "b"], ["y"])], {"a": i64(-7, 7, -8, 9), "b": i64(2, -2, 3, 4)},
         outputs={"y": I64}),
    Case("MatMul-batched", [make_node("MatMul", ["x", "w"], ["y"])], {"x": rand(2, 3, 4)}, {"w": rand(4, 5)}),
    *[Case(f"{op}-variadic", [make_node(op, ["a", "b", "c"], ["y"])], {"a": rand(2, 3), "b": rand(3), "c": rand(2, 1)})
      for op in ["Max", "Min", "Sum", "Mean"]],
    *[Case(f"{op}", [make_node(op, ["a", "b"], ["y"])], {"a": rand(2, 3), "b": rand(3)}, outputs={"y": BOOL})
      for op in ["Less", "Greater", "LessOrEqual", "GreaterOrEqual"]],
    *[Case(f"{op}", [make_node(op, ["a", "b"], ["y"])], {"a": RNG.random((2, 3)) > 0.5, "b": RNG.random(3) > 0.5},
           outputs={"y": BOOL}) for op in ["And", "Or", "Xor"]],
    Case("Not", [make_node("Not", ["a"], ["y"])], {"a": RNG.random((2, 3)) > 0.5}, outputs={"y": BOOL}),
    Case("Size", [make_node("Size", ["x"], ["y"])], {"x": rand(2, 3, 4)}, outputs={"y": I64}),
    Case("Pad-int-default-zero", [make_node("Pad", ["x", "p"], ["y"])], {"x": i64(1, 2, 3)}, {"p": i64(1, 2)},
         outputs={"y": I64}),
    Case("Equal-int", [make_node("Equal", ["a", "b"], ["y"])], {"a": i64(1, 2, 3), "b": i64(1, 0, 3)},
         outputs={"y": BOOL}),
    Case("Where-Greater", [make_node("Greater", ["a", "b"], ["c"]), make_node("Where", ["c", "a", "b"], ["y"])],
         {"a": rand(2, 3), "b": rand(2, 3)}),
    *[Case(f"Gemm-{i}", [make_node("Gemm", ["a", "b", "c"], ["y"], **attrs)],
           {"a": rand(*((4, 3) if attrs.get("transA") else (3, 4)))},
           {"b": rand(*((5, 4) if attrs.get("transB") else (4, 5))), "c": rand(5)})
      for i, attrs in enumerate([{}, {"transB": 1}, {"transA": 1, "alpha": 0.5, "beta": 2.0}])],
    Case("Gemm-no-C", [make_node("Gemm", ["a", "b"], ["y"], transB=1)], {"a": rand(3, 4)}, {"b": rand(5, 4)}),
    Case("Softmax-axis1", [make_node("Softmax", ["x"], ["y"], axis=1)], {"x": rand(2, 3, 4)}),
    Case("LogSoftmax", [make_node("LogSoftmax", ["x"], ["y"])], {"x": rand(2, 3, 4)}),
    Case("Softmax-opset11-flattens", [make_node("Softmax", ["x"], ["y"], axis=1)], {"x": rand(2, 3, 4)}, opset=11),
    # convolution
    Case("Conv-pads-strides-dilations", [make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 2, 1, 2],
                                                   strides=[2, 1], dilations=[1, 2])],
         {"x": rand(2, 3, 7, 8)}, {"w": rand(4, 3, 3, 3), "b": rand(4)}),
    Case("Conv-group", [make_node("Conv", ["x", "w"], ["y"], group=2, kernel_shape=[3, 3])],
         {"x": rand(1, 4, 5, 5)}, {"w": rand(6, 2, 3, 3)}),
    Case("Conv-SAME_UPPER", [make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])],
         {"x": rand(1, 2, 6, 7)}, {"w": rand(3, 2, 4, 3)}),
    Case("Conv-SAME_LOWER", [make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER")], {"x": rand(1, 2, 5, 6)},
         {"w": rand(3, 2, 2, 2)}),
    Case("ConvTranspose-SAME_UPPER", [make_node("ConvTranspose", ["x", "w"], ["y"], auto_pad="SAME_UPPER",
                                                strides=[2, 2])], {"x": rand(1, 2, 3, 4)}, {"w": rand(2, 3, 3, 3)}),
    Case("ConvTranspose-SAME_UPPER-no-negative-pads", [make_node("ConvTranspose", ["x", "w"], ["y"],
                                                                auto_pad="SAME_UPPER", strides=[1, 3])],
         {"x": rand(1, 2, 4, 4)}, {"w": rand(2, 3, 1, 1)}),
    Case("Conv-VALID", [make_node("Conv", ["x", "w"], ["y"], auto_pad="VALID")], {"x": rand(1, 2, 5, 5)},
         {"w": rand(3, 2, 2, 2)}),
    Case("Conv-asymmetric-pads", [make_node("Conv", ["x", "w"], ["y"], pads=[0, 1, 2, 0])], {"x": rand(1, 2, 5, 5)},
         {"w": rand(3, 2, 3, 3)}),
    Case("Conv-1d", [make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1], strides=[2])], {"x": rand(2, 3, 9)},
         {"w": rand(4, 3, 3), "b": rand(4)}),
    Case("ConvTranspose-stride-pads-output_padding",
         [make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
                    output_padding=[1, 0])],
         {"x": rand(1, 3, 4, 4)}, {"w": rand(3, 2, 3, 3), "b": rand(2)}),
    Case("ConvTranspose-group-dilations", [make_node("ConvTranspose", ["x", "w"], ["y"], group=2, dilations=[2, 1])],
         {"x": rand(1, 4, 3, 3)}, {"w": rand(4, 3, 2, 2)}),
    Case("ConvTranspose-output_shape", [make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2],
                                                  output_shape=[8, 9])],
         {"x": rand(1, 2, 4, 4)}, {"w": rand(2, 3, 3, 3)}),
    Case("ConvTranspose-asymmetric-pads", [make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2],
                                                     pads=[0, 1, 2, 0])],
         {"x": rand(1, 2, 4, 4)}, {"w": rand(2, 3, 3, 3)}),
    Case("ConvTranspose-1d", [make_node("ConvTranspose", ["x", "w"], ["y"], strides=[3])], {"x": rand(2, 2, 5)},
         {"w": rand(2, 3, 4)}),
    # pooling
    Case("MaxPool-k3s2p1", [make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                      pads=[1, 1, 1, 1])], {"x": rand(2, 3, 7, 8)}),
    Case("MaxPool-ceil", [make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)],
         {"x": rand(1, 2, 5, 7)}),
    Case("MaxPool-ceil-pads", [make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                         pads=[1, 1, 1, 1], ceil_mode=1)], {"x": rand(1, 2, 6, 8)}),
    Case("MaxPool-ceil-end-pad-only", [make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 1], strides=[2, 1],
                                                 pads=[0, 0, 2, 0], ceil_mode=1)], {"x": rand(1, 2, 4, 4)},
         checked=False),  # shape inference keeps the window that starts in the end padding
    Case("MaxPool-VALID-ceil-dilations", [make_node("MaxPool", ["x"], ["y"], kernel_shape=[1, 2], strides=[1, 2],
                                                    dilations=[1, 2], auto_pad="VALID", ceil_mode=1)],
         {"x": rand(1, 2, 4, 4)}),
    Case("MaxPool-pads-beyond-half-kernel-dilated", [make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3],
                                                               dilations=[2, 2], pads=[2, 2, 2, 2])],
         {"x": rand(1, 2, 5, 5)}),
    Case("AveragePool-SAME_UPPER-ceil", [make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 2],
                                                   auto_pad="SAME_UPPER", ceil_mode=1)], {"x": rand(1, 2, 5, 6)}),
    Case("MaxPool-dilations", [make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])],
         {"x": rand(1, 2, 6, 6)}),
    Case("MaxPool-SAME_UPPER", [make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 3], strides=[2, 2],
                                          auto_pad="SAME_UPPER")], {"x": rand(1, 2, 5, 6)}),
    Case("MaxPool-1d", [make_node("MaxPool", ["x"], ["y"], kernel_shape=[3], strides=[2])], {"x": rand(2, 3, 9)}),
    *[Case(f"AveragePool-count_include_pad{c}", [make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3],
                                                            strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=c)],
           {"x": rand(2, 3, 7, 8)}) for c in (0, 1)],
    Case("AveragePool-ceil", [make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                                        ceil_mode=1)], {"x": rand(1, 2, 5, 7)}),
    Case("AveragePool-1d", [make_node("AveragePool", ["x"], ["y"], kernel_shape=[2])], {"x": rand(2, 3, 5)}),
    Case("MaxPool-asymmetric-large-pads", [make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3],
                                                     pads=[0, 2, 1, 0])], {"x": rand(1, 2, 5, 6)}),
    *[Case(f"AveragePool-ceil-pads-count_include_pad{c}",
           [make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                      ceil_mode=1, count_include_pad=c)], {"x": rand(1, 2, 6, 8)}) for c in (0, 1)],
    *[Case(f"AveragePool-asymmetric-pads-count_include_pad{c}",
           [make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], pads=[1, 0, 0, 1], count_include_pad=c)],
           {"x": rand(1, 2, 4, 5)}) for c in (0, 1)],
    Case("AveragePool-SAME_UPPER-excludes-pad", [make_node("AveragePool", ["x"], ["y"], kernel_shape=[1, 2],
                                                           auto_pad="SAME_UPPER")], {"x": rand(1, 2, 4, 4)}),
    Case("GlobalAveragePool", [make_node("GlobalAveragePool", ["x"], ["y"])], {"x": rand(2, 3, 4, 5)}),
    Case("GlobalMaxPool", [make_node("GlobalMaxPool", ["x"], ["y"])], {"x": rand(2, 3, 4, 5)}),
    # normalisation
    Case("BatchNormalization", [make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)],
         {"x": rand(2, 3, 4, 5)}, {"s": rand(3), "b": rand(3), "m": rand(3), "v": rand(3, low=0.5, high=2.0)}),
    Case("LayerNormalization", [make_node("LayerNormalization", ["x", "s", "b"], ["y"])], {"x": rand(2, 3, 4)},
         {"s": rand(4), "b": rand(4)}),
    Case("LayerNormalization-axis1", [make_node("LayerNormalization", ["x", "s"], ["y"], axis=1, epsilon=1e-3)],
         {"x": rand(2, 3, 4)}, {"s": rand(3, 4)}),
    Case("InstanceNormalization", [make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-4)],
         {"x": rand(2, 3, 4, 5)}, {"s": rand(3), "b": rand(3)}),
    Case("Dropout", [make_node("Dropout", ["x", "r"], ["y"])], {"x": rand(2, 3)}, {"r": np.array(0.5, np.float32)}),
    # shapes
    Case("Flatten-axis2", [make_node("Flatten", ["x"], ["y"], axis=2)], {"x": rand(2, 3, 4, 5)}),
    Case("Flatten-axis0", [make_node("Flatten", ["x"], ["y"], axis=0)], {"x": rand(2, 3, 4)}),
    Case("Reshape-0-and-minus1", [make_node("Reshape", ["x", "s"], ["y"])], {"x": rand(2, 3, 4)},
         {"s": i64(0, -1, 2)}),
    Case("Reshape-allowzero", [make_node("Reshape", ["x", "s"], ["y"], allowzero=1)], {"x": rand(0, 3)},
         {"s": i64(3, 0)}, opset=14),
    Case("Transpose-perm", [make_node("Transpose", ["x"], ["y"], perm=[1, 2, 0])], {"x": rand(2, 3, 4)}),
    Case("Transpose-default", [make_node("Transpose", ["x"], ["y"])], {"x": rand(2, 3, 4)}),
    Case("Squeeze-axes-input", [make_node("Squeeze", ["x", "a"], ["y"])], {"x": rand(2, 1, 3, 1)}, {"a": i64(-1, 1)}),
    Case("Squeeze-all", [make_node("Squeeze", ["x"], ["y"])], {"x": rand(1, 3, 1)}),
    Case("Squeeze-opset11-attribute", [make_node("Squeeze", ["x"], ["y"], axes=[1])], {"x": rand(2, 1, 3)}, opset=11),
    Case("Unsqueeze-axes-input", [make_node("Unsqueeze", ["x", "a"], ["y"])], {"x": rand(2, 3)}, {"a": i64(0, -1)}),
    Case("Concat", [make_node("Concat", ["a", "b"], ["y"], axis=1)], {"a": rand(2, 3), "b": rand(2, 1)}),
    Case("Split-sizes-input", [make_node("Split", ["x", "s"], ["y", "z"], axis=1)], {"x": rand(2, 5)},
         {"s": i64(2, 3)}, outputs={"y": F32, "z": F32}),
    Case("Split-equal", [make_node("Split", ["x"], ["y", "z", "w"])], {"x": rand(6, 2)},
         outputs={"y": F32, "z": F32, "w": F32}),
    Case("Split-num_outputs-uneven", [make_node("Split", ["x"], ["y", "z", "w"], axis=1, num_outputs=3)],
         {"x": rand(2, 7)}, outputs={"y": F32, "z": F32, "w": F32}, opset=18),
    Case("Slice-steps-clamping", [make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": rand(5, 6, 7)},
         {"s": i64(1, -1, 0), "e": i64(2 ** 62, -7, -2), "a": i64(0, 2, 1), "t": i64(2, -2, 1)}),
    Case("Slice-default-axes", [make_node("Slice", ["x", "s", "e"], ["y"])], {"x": rand(4, 5)},
         {"s": i64(1, 2), "e": i64(3, 100)}),
    Case("Slice-empty", [make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": rand(4, 5)},
         {"s": i64(0), "e": i64(-10), "a": i64(1), "t": i64(-1)}),
    Case("Gather-axis1-negative", [make_node("Gather", ["x", "i"], ["y"], axis=1)], {"x": rand(3, 4, 2)},
         {"i": i64(-1, 0, 2, 0).reshape(2, 2)}),
    Case("Gather-scalar", [make_node("Gather", ["x", "i"], ["y"])], {"x": rand(3, 4)},
         {"i": np.array(1, np.int64)}),
    Case("Shape", [make_node("Shape", ["x"], ["y"])], {"x": rand(2, 3, 4)}, outputs={"y": I64}),
    Case("Shape-start-end", [make_node("Shape", ["x"], ["y"], start=1, end=-1)], {"x": rand(2, 3, 4, 5)},
         outputs={"y": I64}, opset=15),
    Case("Constant-ConstantOfShape", [
        make_node("Constant", [], ["s"], value=make_tensor("v", I64, [2], [2, 3])),
        make_node("ConstantOfShape", ["s"], ["c"], value=make_tensor("f", F32, [1], [1.5])),
        make_node("Constant", [], ["k"], value_float=2.0),
        make_node("Mul", ["c", "k"], ["y"])], {}),
    Case("GatherElements", [make_node("GatherElements", ["x", "i"], ["y"], axis=1)], {"x": rand(3, 4)},
         {"i": i64(0, -1, 2, 3, 1, 1).reshape(3, 2)}),
    Case("OneHot", [make_node("OneHot", ["i", "d", "v"], ["y"], axis=1)], {"i": i64(0, 2, -1, 1).reshape(2, 2)},
         {"d": i64(3), "v": np.array([-1.0, 2.0], np.float32)}),
    Case("Tile", [make_node("Tile", ["x", "r"], ["y"])], {"x": rand(2, 3)}, {"r": i64(2, 3)}),
    *[Case(f"Trilu-upper{u}", [make_node("Trilu", ["x", "k"], ["y"], upper=u)], {"x": rand(2, 4, 5)},
           {"k": np.array(k, np.int64)}) for u, k in ((1, 1), (0, -1))],
    *[Case(f"CumSum{attrs}", [make_node("CumSum", ["x", "a"], ["y"], **attrs)], {"x": rand(3, 4)},
           {"a": np.array(-1, np.int64)}) for attrs in ({}, {"exclusive": 1}, {"reverse": 1},
                                                        {"exclusive": 1, "reverse": 1})],
    Case("Einsum", [make_node("Einsum", ["a", "b"], ["y"], equation="bij,bjk->bik")], {"a": rand(2, 3, 4)},
         {"b": rand(2, 4, 5)}),
    Case("Cast-float-to-int", [make_node("Cast", ["x"], ["y"], to=I64)], {"x": rand(2, 3, low=-5, high=5)},
         outputs={"y": I64}),
    Case("Cast-int-to-float", [make_node("Cast", ["x"], ["y"], to=F32)], {"x": i64(1, -2, 3)}),
    Case("dynamic-flatten-chain", [
        make_node("Shape", ["x"], ["shape"]),
        make_node("Constant", [], ["zero"], value=make_tensor("z", I64, [], [0])),
        make_node("Gather", ["shape", "zero"], ["batch"]),
        make_node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        make_node("Concat", ["batch1", "minus1"], ["target"], axis=0),
        make_node("Reshape", ["x", "target"], ["y"])], {"x": rand(3, 2, 4)}, {"axes": i64(0), "minus1": i64(-1)}),
    Case("ReduceMean-attribute-axes", [make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)],
         {"x": rand(2, 3, 4)}),
    Case("ReduceSum-axes-input", [make_node("ReduceSum", ["x", "a"], ["y"])], {"x": rand(2, 3, 4)},
         {"a": i64(0, -1)}),
    Case("ReduceSum-all", [make_node("ReduceSum", ["x"], ["y"], keepdims=0)], {"x": rand(2, 3, 4)}),
    Case("ReduceSum-noop", [make_node("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1)], {"x": rand(2, 3)}),
    Case("ReduceMax", [make_node("ReduceMax", ["x"], ["y"], axes=[2])], {"x": rand(2, 3, 4)}),
    Case("ReduceLogSumExp", [make_node("ReduceLogSumExp", ["x"], ["y"], axes=[0, 2])], {"x": rand(2, 3, 4)}),
    Case("ReduceProd", [make_node("ReduceProd", ["x"], ["y"], axes=[2, 0], keepdims=0)], {"x": rand(2, 3, 4)}),
    Case("ReduceProd-all", [make_node("ReduceProd", ["x"], ["y"])], {"x": rand(2, 3, low=0.5, high=1.5)}),
    Case("ReduceMin", [make_node("ReduceMin", ["x"], ["y"], axes=[0, 2], keepdims=0)], {"x": rand(2, 3, 4)}),
    Case("ReduceMean-opset18-axes-input", [make_node("ReduceMean", ["x", "a"], ["y"])], {"x": rand(2, 3, 4)},
         {"a": i64(1)}, opset=18),
    Case("Expand", [make_node("Expand", ["x", "s"], ["y"])], {"x": rand(3, 1)}, {"s": i64(2, 1, 4)}),
    Case("Pad-constant", [make_node("Pad", ["x", "p", "v"], ["y"])], {"x": rand(2, 3, 4)},
         {"p": i64(0, 1, 2, 0, 0, 1), "v": np.array(0.5, np.float32)}),
    Case("Pad-reflect", [make_node("Pad", ["x", "p"], ["y"], mode="reflect")], {"x": rand(1, 2, 4, 5)},
         {"p": i64(0, 0, 1, 2, 0, 0, 2, 1)}),
    Case("Pad-reflect-one-axis-of-4", [make_node("Pad", ["x", "p"], ["y"], mode="reflect")], {"x": rand(2, 2, 2, 4)},
         {"p": i64(0, 0, 0, 1, 0, 0, 0, 2)}),
    Case("Pad-wrap-all-axes", [make_node("Pad", ["x", "p"], ["y"], mode="wrap")], {"x": rand(3, 4)},
         {"p": i64(1, 2, 2, 1)}, opset=19),
    Case("Pad-edge-axes-input", [make_node("Pad", ["x", "p", "", "a"], ["y"], mode="edge")], {"x": rand(2, 3, 4)},
         {"p": i64(1, 2, 0, 1), "a": i64(-1, 0)}, opset=18),
    Case("Pad-edge", [make_node("Pad", ["x", "p"], ["y"], mode="edge")], {"x": rand(1, 2, 4)},
         {"p": i64(0, 0, 2, 0, 0, 1)}),
    Case("Resize-nearest-asymmetric-floor", [make_node("Resize", ["x", "", "s"], ["y"], mode="nearest",
                                                       coordinate_transformation_mode="asymmetric",
                                                       nearest_mode="floor")],
         {"x": rand(1, 2, 3, 4)}, {"s": np.array([1, 1, 2, 3], np.float32)}),
    Case("Resize-linear-half_pixel", [make_node("Resize", ["x", "", "s"], ["y"], mode="linear")],
         {"x": rand(1, 2, 3, 4)}, {"s": np.array([1, 1, 2, 1.5], np.float32)}),
    Case("Resize-linear-align_corners-sizes", [make_node("Resize", ["x", "", "", "z"], ["y"], mode="linear",
                                                         coordinate_transformation_mode="align_corners")],
         {"x": rand(1, 2, 3, 4)}, {"z": i64(1, 2, 5, 7)}),
    Case("Resize-nearest-sizes", [make_node("Resize", ["x", "", "", "z"], ["y"], mode="nearest",
                                            coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
         {"x": rand(1, 2, 3, 4)}, {"z": i64(1, 2, 7, 5)}),
    Case("Resize-pytorch_half_pixel-to-length-1-sizes",
         [make_node("Resize", ["x", "", "", "z"], ["y"], mode="linear",
                    coordinate_transformation_mode="pytorch_half_pixel")],
         {"x": rand(1, 2, 3, 4)}, {"z": i64(1, 2, 1, 7)}),
    Case("Resize-pytorch_half_pixel-to-length-1-scales",
         [make_node("Resize", ["x", "", "s"], ["y"], mode="linear",
                    coordinate_transformation_mode="pytorch_half_pixel")],
         {"x": rand(1, 2, 3, 2)}, {"s": np.array([1, 1, 2, 0.5], np.float32)}),
    Case("Resize-default-nearest-half_pixel", [make_node("Resize", ["x", "", "s"], ["y"])], {"x": rand(1, 2, 3, 5)},
         {"s": np.array([1, 1, 1.5, 0.6], np.float32)}),
    Case("Resize-nearest-align_corners-round_prefer_ceil-sizes",
         [make_node("Resize", ["x", "", "", "z"], ["y"], coordinate_transformation_mode="align_corners",
                    nearest_mode="round_prefer_ceil")], {"x": rand(1, 2, 4)}, {"z": i64(1, 2, 7)}),
    Case("Resize-opset10", [make_node("Resize", ["x", "s"], ["y"])], {"x": rand(1, 2, 3, 4)},
         {"s": np.array([1, 1, 2, 1.5], np.float32)}, opset=10),
    Case("Upsample-opset9", [make_node("Upsample", ["x", "s"], ["y"])], {"x": rand(1, 2, 3, 4)},
         {"s": np.array([1, 1, 2, 3], np.float32)}, opset=9),
    Case("Pad-negative-crops", [make_node("Pad", ["x", "p"], ["y"])], {"x": rand(3, 4)}, {"p": i64(-1, 1, 0, -2)}),
    Case("Split-opset11-attribute", [make_node("Split", ["x"], ["y", "z"], axis=0, split=[1, 3])], {"x": rand(4, 2)},
         outputs={"y": F32, "z": F32}, opset=11),
    Case("Unsqueeze-opset11-attribute", [make_node("Unsqueeze", ["x"], ["y"], axes=[1])], {"x": rand(2, 3)},
         opset=11),
    Case("ReduceSum-opset11-attribute", [make_node("ReduceSum", ["x"], ["y"], axes=[1])], {"x": rand(2, 3)},
         opset=11),
    Case("Clip-opset6-attributes", [make_node("Clip", ["x"], ["y"], min=-0.2, max=0.3)], {"x": rand(2, 3)}, opset=6),
    Case("Clip-inputs", [make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": rand(2, 3)},
         {"lo": np.array(-0.3, np.float32), "hi": np.array(0.4, np.float32)}),
    Case("Clip-max-only", [make_node("Clip", ["x", "", "hi"], ["y"])], {"x": rand(2, 3)},
         {"hi": np.array(0.1, np.float32)}),
]


def _rnn_case(op, direction="forward", layout=0, states=True, bias=True, **attrs):
    gates, hidden, size, length, batch = {"LSTM": 4, "GRU": 3, "RNN": 1}[op], 3, 2, 4, 2
    dirs = 2 if direction == "bidirectional" else 1
    inputs = {"x": rand(batch, length, size) if layout else rand(length, batch, size)}
    inits = {"W": rand(dirs, gates * hidden, size), "R": rand(dirs, gates * hidden, hidden)}
    names = ["x", "W", "R", "B" if bias else ""]
    if bias:
        inits["B"] = rand(dirs, 2 * gates * hidden)
    state_shape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    if states:
        names += ["", "h0"] + (["c0"] if op == "LSTM" else [])
        inputs["h0"] = rand(*state_shape)
        if op == "LSTM":
            inputs["c0"] = rand(*state_shape)
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = make_node(op, names, outputs, hidden_size=hidden, direction=direction, layout=layout, **attrs)
    label = f"{op}-{direction}-layout{layout}" + ("-states" if states else "") + "".join(f"-{k}{v}" for k, v in
                                                                                       attrs.items())
    return Case(label, [node], inputs, inits, outputs={name: F32 for name in outputs})


RNN_CASES = [
    _rnn_case("LSTM"), _rnn_case("LSTM", "bidirectional"), _rnn_case("LSTM", "reverse", states=False),
    _rnn_case("LSTM", bias=False, states=False),
    _rnn_case("GRU"), _rnn_case("GRU", linear_before_reset=1), _rnn_case("GRU", "bidirectional", states=False),
    _rnn_case("GRU", "reverse", bias=False),
    _rnn_case("RNN"), _rnn_case("RNN", "bidirectional", states=False, activations=["Relu", "Relu"]),
    _rnn_case("RNN", "reverse", bias=False),
    Case("LSTM-full-sequence_lens", [make_node("LSTM", ["x", "W", "R", "", "n"], ["y"], hidden_size=2)],
         {"x": rand(3, 2, 1)}, {"W": rand(1, 8, 1), "R": rand(1, 8, 2), "n": np.array([3, 3], np.int32)}),
]

#: batch-first (layout=1) cases, which onnxruntime's CPU kernels reject: each pairs with its time-major twin
LAYOUT_CASES = [
    (_rnn_case("LSTM", "bidirectional", layout=1), _rnn_case("LSTM", "bidirectional")),
    (_rnn_case("GRU", "bidirectional", linear_before_reset=1, layout=1),
     _rnn_case("GRU", "bidirectional", linear_before_reset=1)),
]
