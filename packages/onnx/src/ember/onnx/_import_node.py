"""One ONNX node ready to run, and the registry mapping ONNX op types to ember implementations.

A handler is ``fn(node, *inputs)``: ``inputs`` are ember tensors (``None``
for an absent optional input); it returns a tensor or a tuple of tensors,
one per output the node may have. ``node`` gives the attributes, the opset
and errors that name the node. A handler registered with ``scoped=True``
(an op with a subgraph) also gets ``scope=``, the values visible at the node.
"""
from __future__ import annotations

from collections import ChainMap

import numpy as np

import ember
from onnx import AttributeProto, helper, numpy_helper

from .errors import OnnxImportError, UnsupportedImportError

HANDLERS = {}


def handles(*op_types, scoped=False):
    """Register the decorated function as the implementation of ``op_types``."""
    def register(fn):
        fn.scoped = scoped
        for op_type in op_types:
            HANDLERS[op_type] = fn
        return fn
    return register


def attribute_value(attribute):
    """An attribute's Python value; tensors become NumPy arrays."""
    value = helper.get_attribute_value(attribute)
    if attribute.type == AttributeProto.TENSOR:
        return numpy_helper.to_array(value)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode() for v in value]
    return value


class ImportNode:
    """An ONNX node: op type, name, input/output names, attributes, the opset it runs under, its handler."""

    __slots__ = ("op_type", "name", "inputs", "outputs", "attrs", "opset", "handler")

    def __init__(self, proto, opset: int):
        self.op_type = proto.op_type
        self.name = proto.name
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.opset = opset
        if proto.domain not in ("", "ai.onnx"):
            raise UnsupportedImportError(f"{self}: ember.onnx.load supports only the default ONNX domain, "
                                         f"not '{proto.domain}'")
        self.handler = HANDLERS.get(self.op_type)
        if self.handler is None:
            raise UnsupportedImportError(f"{self}: ember.onnx.load does not support the ONNX op "
                                         f"'{self.op_type}'")
        self.attrs = {}
        for attribute in proto.attribute:
            if attribute.type == AttributeProto.GRAPHS:
                raise self.unsupported(f"the graph-list attribute {attribute.name}")
            if attribute.type == AttributeProto.GRAPH:  # compiled now, so its unsupported ops fail at load time
                self.attrs[attribute.name] = Subgraph(attribute.g, opset)
            else:
                self.attrs[attribute.name] = attribute_value(attribute)

    def __str__(self):
        return f"{self.op_type} node '{self.name}'" if self.name else f"{self.op_type} node (unnamed)"

    def attr(self, key, default=None):
        return self.attrs.get(key, default)

    def wants_output(self, index: int) -> bool:
        """Whether the graph uses this node's output ``index``."""
        return index < len(self.outputs) and self.outputs[index] != ""

    def unsupported(self, what: str) -> UnsupportedImportError:
        return UnsupportedImportError(f"{self}: {what} is not supported by ember.onnx.load")

    def invalid(self, what: str) -> OnnxImportError:
        return OnnxImportError(f"{self}: {what}")

    def run(self, inputs, scope):
        result = self.handler(self, *inputs, scope=scope) if self.handler.scoped else self.handler(self, *inputs)
        return result if isinstance(result, (tuple, list)) else (result,)


def constant_value(proto):
    """The NumPy value of a Constant node."""
    (attribute,) = proto.attribute
    value = helper.get_attribute_value(attribute)
    if attribute.name == "value":
        return numpy_helper.to_array(value)
    if attribute.name in ("value_float", "value_floats"):
        return np.array(value, dtype=np.float32)
    if attribute.name in ("value_int", "value_ints"):
        return np.array(value, dtype=np.int64)
    raise UnsupportedImportError(f"Constant node '{proto.name}': the attribute {attribute.name} is not "
                                 "supported by ember.onnx.load")


def compile_nodes(graph, opset):
    """A graph's Constant values (name -> array) and its other nodes as :class:`ImportNode` s."""
    constants, nodes = {}, []
    for proto in graph.node:
        if proto.op_type == "Constant" and proto.domain in ("", "ai.onnx"):
            constants[proto.output[0]] = constant_value(proto)
        else:
            nodes.append(ImportNode(proto, opset))
    return constants, nodes


def run_nodes(nodes, env):
    """Run ``nodes`` in order, reading their inputs from and writing their outputs to ``env``."""
    for node in nodes:
        try:
            args = [env[name] if name else None for name in node.inputs]
        except KeyError as error:
            raise OnnxImportError(f"{node}: its input {error.args[0]!r} is produced by no earlier node, "
                                  "initializer or graph input") from None
        while args and args[-1] is None:
            args.pop()
        try:
            results = node.run(args, env)
        except Exception as error:
            error.add_note(f"while running {node} of the imported ONNX graph")
            raise
        for name, value in zip(node.outputs, results):
            if name:
                env[name] = value


class Subgraph:
    """A node's subgraph (Scan's body): it sees the enclosing graph's values; its initializers are constants."""

    def __init__(self, graph, opset):
        self.input_names = [v.name for v in graph.input]
        self.output_names = [v.name for v in graph.output]
        self.constants, self.nodes = compile_nodes(graph, opset)
        self.constants.update({t.name: numpy_helper.to_array(t) for t in graph.initializer})

    def __call__(self, scope, inputs, device):
        env = ChainMap({name: from_numpy(a, device) for name, a in self.constants.items()}, scope)
        env.maps[0].update(zip(self.input_names, inputs))
        run_nodes(self.nodes, env)
        return [env[name] for name in self.output_names]


# -- helpers for handlers ----------------------------------------------------------------------------------
def ints(t) -> list:
    """A 0-d or 1-d integer tensor (a shape, axes, pads) as a list of Python ints."""
    if t is None:
        return None
    values = t.tolist()
    return [int(v) for v in values] if isinstance(values, list) else [int(values)]


def axis_list(node, inputs_axes, attr_name="axes"):
    """Axes given as an input (newer opsets) or as an attribute (older ones); ``None`` when neither."""
    if inputs_axes is not None:
        return ints(inputs_axes)
    value = node.attr(attr_name)
    return None if value is None else list(value)


def normalize_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def from_numpy(array, device=None):
    """A fresh ember tensor holding a copy of ``array`` (dtype kept)."""
    tensor = ember.from_numpy(np.array(array, copy=True))
    return tensor if device is None else tensor.to(device)


def ember_dtype(onnx_type: int):
    """The ember dtype of an ONNX ``TensorProto`` element type."""
    name = np.dtype(helper.tensor_dtype_to_np_dtype(onnx_type)).name
    dtype = getattr(ember, "bool" if name == "bool" else name, None)
    if not isinstance(dtype, ember.dtype):
        raise UnsupportedImportError(f"the ONNX element type {name} is not supported by ember.onnx.load")
    return dtype
