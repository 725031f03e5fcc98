"""Malformed ONNX models, built with onnx.helper, for tests/onnx/test_import_hostile.py.

``HOSTILE`` lists ``(id, source, message)``: ``source`` is what is passed to
``ember.onnx.load`` (a ``ModelProto`` or ``bytes``), ``message`` a regular
expression the :class:`~ember.onnx.OnnxImportError` must match, naming the node
(op and name), initializer or value at fault and the problem.
"""
import numpy as np
from onnx import AttributeProto, ModelProto, TensorProto, helper, numpy_helper
from onnx.helper import make_node, make_tensor_value_info

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(nodes, inputs=None, outputs=("y",), inits=None, opset=17, elem=F32):
    """An unchecked model: ``inputs`` maps names to shapes (default ``x`` of shape ``[2, 3]``), ``inits`` names
    to arrays or ``TensorProto`` s."""
    inputs = {"x": [2, 3]} if inputs is None else inputs
    tensors = [t if isinstance(t, TensorProto) else numpy_helper.from_array(t, name)
               for name, t in (inits or {}).items()]
    graph = helper.make_graph(nodes, "hostile", [make_tensor_value_info(n, elem, s) for n, s in inputs.items()],
                              [make_tensor_value_info(n, F32, None) for n in outputs], tensors)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def tensor(name, dims, data_type=F32, **fields):
    t = TensorProto(name=name, data_type=data_type)
    t.dims.extend(dims)
    for key, value in fields.items():
        if key == "raw_data":
            t.raw_data = value
        else:
            getattr(t, key).extend(value)
    return t


def attribute(name, attribute_type, **fields):
    a = AttributeProto(name=name, type=attribute_type)
    for key, value in fields.items():
        if isinstance(value, list):
            getattr(a, key).extend(value)
        elif key == "t":
            a.t.CopyFrom(value)
        else:
            setattr(a, key, value)
    return a


def node_with(op, inputs, outputs, attributes, name):
    n = make_node(op, inputs, outputs, name=name)
    n.attribute.extend(attributes)
    return n


def scan_body(n_inputs=1, inner=None, name="body"):
    ins = [make_tensor_value_info(f"e{i}", F32, None) for i in range(n_inputs)]
    nodes = inner or [make_node("Identity", ["e0"], ["o"], name="copy")]
    return helper.make_graph(nodes, name, ins, [make_tensor_value_info("o", F32, None)])


def nested_scan_model(length=40, depth=4, seq_input=False):
    """About 1 KB of ONNX: ``depth`` nested Scans, each over ``seq`` (``length`` elements, from a ConstantOfShape
    of the outer graph; with ``seq_input``, the graph's input), so ``length ** depth`` body runs in all."""
    def body(level):
        element = f"el{level}"
        if level == depth:
            nodes = [make_node("Identity", [element], [f"out{level}"], name=f"leaf{level}")]
        else:
            nodes = [make_node("Scan", ["seq"], [f"inner{level}"], body=body(level + 1), num_scan_inputs=1,
                               name=f"scan{level + 1}"),
                     make_node("Identity", [element], [f"out{level}"], name=f"keep{level}")]
        return helper.make_graph(nodes, f"body{level}", [make_tensor_value_info(element, F32, None)],
                                 [make_tensor_value_info(f"out{level}", F32, None)])
    scan = make_node("Scan", ["seq"], ["y"], body=body(1), num_scan_inputs=1, name="scan1")
    if seq_input:
        return model([scan], inputs={"seq": [length]})
    fill = make_node("ConstantOfShape", ["n"], ["seq"], name="fill")
    return model([fill, scan], inputs={}, inits={"n": np.array([length], np.int64)})


def _no_graph():
    m = ModelProto(ir_version=8)
    m.opset_import.append(helper.make_opsetid("", 17))
    return m


def _no_default_opset():
    m = model([make_node("Relu", ["x"], ["y"], name="r")])
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    return m


def _sequence_input():
    m = model([make_node("Identity", ["x"], ["y"], name="i")])
    m.graph.input[0].CopyFrom(helper.make_tensor_sequence_value_info("x", F32, None))
    return m


def _external(location):
    t = tensor("w", [2, 3])
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=location)
    return model([make_node("Add", ["x", "w"], ["y"], name="add")], inits={"w": t})


_VALID = model([make_node("Relu", ["x"], ["y"], name="r")]).SerializeToString()
W = np.ones((3, 2), np.float32)

HOSTILE = [
    # -- attributes of the wrong type or value ----------------------------------------------------------------------
    ("transB-string", model([make_node("Gemm", ["x", "w"], ["y"], transB="yes", name="fc")], inits={"w": W.T}),
     r"Gemm node 'fc': the attribute transB is STRING, INT expected"),
    ("transA-7", model([make_node("Gemm", ["x", "w"], ["y"], transA=7, name="fc")], inits={"w": W}),
     r"Gemm node 'fc': the attribute transA is 7, 0 or 1 expected"),
    ("alpha-undefined-type", model([node_with("LeakyRelu", ["x"], ["y"], [attribute("alpha", 0)], "lr")]),
     r"LeakyRelu node 'lr': the attribute alpha is UNDEFINED, FLOAT expected"),
    ("attribute-twice", model([node_with("LeakyRelu", ["x"], ["y"], [helper.make_attribute("alpha", 0.1),
                                                                       helper.make_attribute("alpha", 0.2)], "lr")]),
     r"LeakyRelu node 'lr': the attribute alpha is given twice"),
    ("unknown-attribute", model([make_node("Relu", ["x"], ["y"], colour=3, name="r")]),
     r"Relu node 'r': Relu \(opset 17\) has no attribute colour"),
    ("missing-required-attribute", model([make_node("Cast", ["x"], ["y"], name="c")]),
     r"Cast node 'c': Cast requires the attribute\(s\) \['to'\]"),
    ("cast-to-999", model([make_node("Cast", ["x"], ["y"], to=999, name="c")]),
     r"Cast node 'c': the attribute to: the element type 999 is not an ONNX tensor type"),
    ("cast-to-string", model([make_node("Cast", ["x"], ["y"], to=TensorProto.STRING, name="c")]),
     r"Cast node 'c': the attribute to: the element type STRING is not supported"),
    ("transpose-not-a-permutation", model([make_node("Transpose", ["x"], ["y"], perm=[0, 0], name="t")]),
     r"Transpose node 't': the attribute perm is \[0, 0\], a permutation"),
    ("conv-zero-kernel", model([make_node("Conv", ["x", "w"], ["y"], kernel_shape=[0], name="cv")],
                               inputs={"x": [1, 1, 4]}, inits={"w": np.ones((1, 1, 1), np.float32)}),
     r"Conv node 'cv': the attribute kernel_shape is \[0\], positive ints expected"),
    ("conv-strides-length", model([make_node("Conv", ["x", "w"], ["y"], kernel_shape=[1], strides=[1, 1],
                                             name="cv")],
                                  inputs={"x": [1, 1, 4]}, inits={"w": np.ones((1, 1, 1), np.float32)}),
     r"Conv node 'cv': the attribute strides has 2 values, 1 expected"),
    ("conv-negative-pads", model([make_node("Conv", ["x", "w"], ["y"], pads=[-1, 0], name="cv")],
                                 inputs={"x": [1, 1, 4]}, inits={"w": np.ones((1, 1, 1), np.float32)}),
     r"Conv node 'cv': the attribute pads is \[-1, 0\], non-negative ints expected"),
    ("conv-huge-pads", model([make_node("Conv", ["x", "w"], ["y"], pads=[2 ** 40, 2 ** 40], name="cv")],
                             inputs={"x": [1, 1, 4]}, inits={"w": np.ones((1, 1, 1), np.float32)}),
     r"Conv node 'cv': the attribute pads .* more than max_elements"),
    ("auto-pad-bogus", model([make_node("MaxPool", ["x"], ["y"], kernel_shape=[2], auto_pad="MIDDLE", name="mp")],
                             inputs={"x": [1, 1, 4]}),
     r"MaxPool node 'mp': the attribute auto_pad is 'MIDDLE', one of"),
    ("pad-mode-bogus", model([make_node("Pad", ["x", "p"], ["y"], mode="bogus", name="pd")],
                             inits={"p": np.zeros(4, np.int64)}),
     r"Pad node 'pd': the attribute mode is 'bogus', one of"),
    ("mode-not-utf8", model([node_with("Pad", ["x", "p"], ["y"], [attribute("mode", AttributeProto.STRING,
                                                                            s=b"\xff\xfe")], "pd")],
                            inits={"p": np.zeros(4, np.int64)}),
     r"Pad node 'pd': the attribute mode is not UTF-8 text"),
    ("lstm-direction", model([make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=1, direction="sideways",
                                        name="rnn")],
                             inputs={"x": [2, 1, 1]}, inits={"W": np.ones((1, 4, 1), np.float32),
                                                             "R": np.ones((1, 4, 1), np.float32)}),
     r"LSTM node 'rnn': the attribute direction is 'sideways', one of"),
    ("split-negative", model([make_node("Split", ["x"], ["y", "z"], split=[3, -1], axis=1, name="sp")], opset=11),
     r"Split node 'sp': the attribute split is \[3, -1\], non-negative sizes expected"),
    ("ref-attr-outside-function", model([node_with("LeakyRelu", ["x"], ["y"],
                                                   [attribute("alpha", AttributeProto.FLOAT, ref_attr_name="a")],
                                                   "lr")]),
     r"LeakyRelu node 'lr': the attribute alpha refers to a function attribute"),
    # -- inputs and outputs -------------------------------------------------------------------------------------
    ("undefined-input", model([make_node("Relu", ["nowhere"], ["y"], name="r")]),
     r"Relu node 'r': its input 'nowhere' is produced by no earlier node"),
    ("input-defined-later", model([make_node("Relu", ["t"], ["y"], name="late"),
                                   make_node("Neg", ["x"], ["t"], name="first")]),
     r"Relu node 'late': its input 't' is produced by no earlier node"),
    ("duplicate-node-output", model([make_node("Relu", ["x"], ["y"], name="a"),
                                     make_node("Neg", ["x"], ["y"], name="b")]),
     r"Neg node 'b' \(output 0\): the value name 'y' is already defined by Relu node 'a'"),
    ("output-shadows-input", model([make_node("Relu", ["x"], ["x"], name="r")], outputs=("x",)),
     r"Relu node 'r' \(output 0\): the value name 'x' is already defined"),
    ("duplicate-initializer", model([make_node("Add", ["x", "w"], ["y"], name="add")],
                                    inits={"w": tensor("w", [1], float_data=[1.0]),
                                           "w2": tensor("w", [1], float_data=[2.0])}),
     r"initializer 'w': the value name 'w' is already defined by initializer 'w'"),
    ("too-many-inputs", model([make_node("Relu", ["x", "x"], ["y"], name="r")]),
     r"Relu node 'r': Relu \(opset 17\) takes 1 input\(s\), the node lists 2"),
    ("too-few-inputs", model([make_node("Gemm", ["x"], ["y"], name="fc")]),
     r"Gemm node 'fc': Gemm \(opset 17\) takes 2 to 3 input\(s\), the node lists 1"),
    ("too-many-outputs", model([make_node("Relu", ["x"], ["y", "z"], name="r")]),
     r"Relu node 'r': Relu \(opset 17\) has 1 output\(s\), the node lists 2"),
    ("required-input-empty", model([make_node("Gemm", ["", "w"], ["y"], name="fc")], inits={"w": W}),
     r"Gemm node 'fc': its required input 0 \(A\) is empty"),
    ("op-not-in-opset", model([make_node("Gelu", ["x"], ["y"], name="g")]),
     r"Gelu node 'g': the op Gelu does not exist in opset 17"),
    ("custom-domain", model([make_node("Fused", ["x"], ["y"], domain="com.example", name="f")]),
     r"Fused node 'f': ember.onnx.load supports only the default ONNX domain"),
    ("unknown-op", model([make_node("Hardmax", ["x"], ["y"], name="h")]),
     r"Hardmax node 'h': ember.onnx.load does not support the ONNX op 'Hardmax'"),
    # -- graph -------------------------------------------------------------------------------------------------
    ("output-not-produced", model([make_node("Relu", ["x"], ["y"], name="r")], outputs=("y", "z")),
     r"the graph: output 'z' is produced by no node, initializer or graph input"),
    ("output-listed-twice", model([make_node("Relu", ["x"], ["y"], name="r")], outputs=("y", "y")),
     r"the graph: output 'y' is listed twice"),
    ("no-outputs", model([make_node("Relu", ["x"], ["y"], name="r")], outputs=()),
     r"the graph declares no outputs"),
    ("input-element-type-999", model([make_node("Relu", ["x"], ["y"], name="r")], elem=999),
     r"the graph: input 'x': the element type 999 is not an ONNX tensor type"),
    ("sequence-input", _sequence_input(), r"the graph: input 'x': a sequence value is not supported"),
    ("no-graph", _no_graph(), r"the ONNX model has no graph"),
    ("no-default-opset", _no_default_opset(), r"imports no version of the default opset"),
    # -- constants and initializers ----------------------------------------------------------------------------
    ("negative-initializer-dim", model([make_node("Add", ["x", "w"], ["y"], name="add")],
                                       inits={"w": tensor("w", [-1], float_data=[1.0])}),
     r"initializer 'w': its dims \[-1\] include a negative size"),
    ("initializer-type-999", model([make_node("Add", ["x", "w"], ["y"], name="add")],
                                   inits={"w": tensor("w", [1], data_type=999, raw_data=b"\0" * 4)}),
     r"initializer 'w': the element type 999 is not an ONNX tensor type"),
    ("initializer-raw-too-short", model([make_node("Add", ["x", "w"], ["y"], name="add")],
                                        inits={"w": tensor("w", [2, 3], raw_data=b"\0" * 8)}),
     r"initializer 'w': its dims \[2, 3\] need 24 bytes of FLOAT, its data has 8"),
    ("initializer-float-data-short", model([make_node("Add", ["x", "w"], ["y"], name="add")],
                                           inits={"w": tensor("w", [2, 3], float_data=[1.0, 2.0])}),
     r"initializer 'w': its data does not match its dims \[2, 3\]"),
    ("initializer-huge", model([make_node("Add", ["x", "w"], ["y"], name="add")],
                               inits={"w": tensor("w", [2 ** 20, 2 ** 20])}),
     r"initializer 'w': its dims \[1048576, 1048576\] declare 1099511627776 elements, more than max_elements"),
    ("initializer-empty-name", model([make_node("Relu", ["x"], ["y"], name="r")],
                                     inits={"": tensor("", [1], float_data=[1.0])}),
     r"the graph: an initializer has an empty name"),
    ("constant-two-values", model([node_with("Constant", [], ["y"], [helper.make_attribute("value_int", 1),
                                                                      helper.make_attribute("value_float", 1.0)],
                                             "k")], inputs={}),
     r"Constant node 'k': a Constant has exactly one value attribute, the node has 2"),
    ("constant-wrong-type", model([node_with("Constant", [], ["y"],
                                             [attribute("value_int", AttributeProto.INTS, ints=[1, 2])], "k")],
                                  inputs={}),
     r"Constant node 'k': the attribute value_int is INTS, INT expected"),
    ("constant-negative-dim", model([node_with("Constant", [], ["y"], [attribute(
        "value", AttributeProto.TENSOR, t=tensor("v", [-4], float_data=[1.0]))], "k")], inputs={}),
     r"Constant node 'k': the attribute value: its dims \[-4\] include a negative size"),
    ("external-data-without-base-dir", _external("w.bin").SerializeToString(),
     r"initializer 'w': its data is in the external file 'w.bin'.*pass base_dir="),
    # -- declared sizes ------------------------------------------------------------------------------------------
    ("constant-of-shape-huge", model([make_node("ConstantOfShape", ["s"], ["y"], name="fill")], inputs={},
                                     inits={"s": np.array([2 ** 20, 2 ** 20], np.int64)}),
     r"ConstantOfShape node 'fill': its output would have shape \[1048576, 1048576\]"),
    ("constant-of-shape-negative", model([make_node("ConstantOfShape", ["s"], ["y"], name="fill")], inputs={},
                                         inits={"s": np.array([-3], np.int64)}),
     r"ConstantOfShape node 'fill': its shape \[-3\] has a negative size"),
    ("expand-huge", model([make_node("Expand", ["x", "s"], ["y"], name="ex")],
                          inits={"s": np.array([2 ** 18, 2 ** 18, 3], np.int64)}),
     r"Expand node 'ex': its output \(at least\) would have shape"),
    ("tile-huge", model([make_node("Tile", ["x", "r"], ["y"], name="tl")],
                        inits={"r": np.array([2 ** 20, 2 ** 20], np.int64)}),
     r"Tile node 'tl': its output \(at least, repeats alone\) would have shape"),
    ("resize-huge", model([make_node("Resize", ["x", "", "", "s"], ["y"], name="rs")], inputs={"x": [1, 1, 2, 2]},
                          inits={"s": np.array([1, 1, 2 ** 20, 2 ** 20], np.int64)}),
     r"Resize node 'rs': its output would have shape \[1, 1, 1048576, 1048576\]"),
    ("pad-huge", model([make_node("Pad", ["c", "p"], ["y"], name="pd")], inputs={},
                       inits={"c": np.ones((2, 2), np.float32), "p": np.array([0, 0, 2 ** 20, 2 ** 20], np.int64)}),
     r"Pad node 'pd': its output would have shape \[1048578, 1048578\]"),
    # -- Scan --------------------------------------------------------------------------------------------------
    ("scan-too-many-scan-inputs", model([make_node("Scan", ["x"], ["y"], body=scan_body(), num_scan_inputs=3,
                                                   name="sc")]),
     r"Scan node 'sc': num_scan_inputs is 3, the node has 1 input\(s\)"),
    ("scan-body-arity", model([make_node("Scan", ["x"], ["y"], body=scan_body(2), num_scan_inputs=1, name="sc")]),
     r"Scan node 'sc': its body takes 2 input\(s\), the Scan passes 1"),
    ("scan-axes-length", model([make_node("Scan", ["x"], ["y"], body=scan_body(), num_scan_inputs=1,
                                          scan_input_axes=[0, 1], name="sc")]),
     r"Scan node 'sc': the attribute scan_input_axes has 2 value\(s\), 1 expected"),
    ("scan-body-undefined", model([make_node("Scan", ["x"], ["y"], num_scan_inputs=1, name="sc", body=scan_body(
        inner=[make_node("Relu", ["ghost"], ["o"], name="inner")]))]),
     r"Relu node 'inner': its input 'ghost' is produced by no earlier node"),
    ("nested-scans", nested_scan_model(),
     r"Scan node 'scan4': 40 steps, run 64000 times by the enclosing Scans, make 2560000 body runs, more than "
     r"max_scan_iterations"),
    # -- bytes ---------------------------------------------------------------------------------------------------
    ("garbage-bytes", b"\xff\xff\xff\xff not a model", r"the bytes given is not an ONNX model \(protobuf"),
    ("truncated-bytes", _VALID[:len(_VALID) // 2], r"the bytes given is not an ONNX model \(protobuf"),
]
