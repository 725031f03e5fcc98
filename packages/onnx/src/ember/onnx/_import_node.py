"""One ONNX node ready to run, and the registry mapping ONNX op types to ember implementations.

A handler is ``fn(node, *inputs)``: ``inputs`` are ember tensors (``None``
for an absent optional input); it returns a tensor or a tuple of tensors,
one per output the node may have. ``node`` gives the attributes, the opset
and errors that name the node. A handler registered with ``scoped=True``
(an op with a subgraph) also gets ``scope=``, the values visible at the node.
A check registered with :func:`checked_at_load` is ``fn(node)``: it raises,
when the model is loaded, for what the node's attributes alone show unsupported.
"""
from __future__ import annotations

from collections import ChainMap

import numpy as np

import ember
from onnx import AttributeProto, helper

from ._import_limits import ImportLimits
from ._import_tensors import tensor_array
from .errors import OnnxImportError, UnsupportedImportError

HANDLERS = {}
LOAD_CHECKS: dict = {}


def handles(*op_types, scoped=False):
    """Register the decorated function as the implementation of ``op_types``."""
    def register(fn):
        fn.scoped = scoped
        for op_type in op_types:
            HANDLERS[op_type] = fn
        return fn
    return register


def checked_at_load(*op_types):
    """Register the decorated ``fn(node)`` to run when a node of ``op_types`` is loaded."""
    def register(fn):
        for op_type in op_types:
            LOAD_CHECKS.setdefault(op_type, []).append(fn)
        return fn
    return register


def node_label(proto) -> str:
    """How errors name a node: ``Gemm node 'fc'`` or ``Gemm node (unnamed)``."""
    return f"{proto.op_type} node '{proto.name}'" if proto.name else f"{proto.op_type} node (unnamed)"


def handler_for(proto):
    """The handler of a node's op; :class:`UnsupportedImportError` for other domains and unknown ops."""
    if proto.domain not in ("", "ai.onnx"):
        raise UnsupportedImportError(f"{node_label(proto)}: ember.onnx.load supports only the default ONNX domain, "
                                     f"not '{proto.domain}'")
    handler = HANDLERS.get(proto.op_type)
    if handler is None:
        raise UnsupportedImportError(f"{node_label(proto)}: ember.onnx.load does not support the ONNX op "
                                     f"'{proto.op_type}'")
    return handler


def attribute_value(attribute, limits: ImportLimits, where: str):
    """An attribute's Python value; tensors become NumPy arrays."""
    value = helper.get_attribute_value(attribute)
    if attribute.type == AttributeProto.TENSOR:
        return tensor_array(value, limits.base_dir, f"{where}: its attribute {attribute.name}")
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode() for v in value]
    return value


class ImportNode:
    """An ONNX node: op type, name, input/output names, attributes, the opset it runs under, its handler."""

    __slots__ = ("op_type", "name", "inputs", "outputs", "attrs", "opset", "handler", "limits")

    def __init__(self, proto, opset: int, limits: ImportLimits):
        self.op_type = proto.op_type
        self.name = proto.name
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.opset = opset
        self.limits = limits
        self.handler = handler_for(proto)
        self.attrs = {}
        for attribute in proto.attribute:
            if attribute.type == AttributeProto.GRAPHS:
                raise self.unsupported(f"the graph-list attribute {attribute.name}")
            if attribute.type == AttributeProto.GRAPH:  # compiled now, so its unsupported ops fail at load time
                self.attrs[attribute.name] = Subgraph(attribute.g, opset, limits)
            else:
                self.attrs[attribute.name] = attribute_value(attribute, limits, str(self))
        for check in LOAD_CHECKS.get(self.op_type, ()):
            check(self)

    def __str__(self):
        return node_label(self)

    def attr(self, key, default=None):
        return self.attrs.get(key, default)

    def wants_output(self, index: int) -> bool:
        """Whether the graph uses this node's output ``index``."""
        return index < len(self.outputs) and self.outputs[index] != ""

    def unsupported(self, what: str) -> UnsupportedImportError:
        return UnsupportedImportError(f"{self}: {what} is not supported by ember.onnx.load")

    def invalid(self, what: str) -> OnnxImportError:
        return OnnxImportError(f"{self}: {what}")

    def check_elements(self, shape, what: str = "its output") -> None:
        """Refuse, before allocating, a tensor of ``shape`` past the load's ``max_elements``."""
        self.limits.check_elements(self, shape, what)

    def run(self, inputs, scope):
        result = self.handler(self, *inputs, scope=scope) if self.handler.scoped else self.handler(self, *inputs)
        return result if isinstance(result, (tuple, list)) else (result,)


def constant_value(proto, limits: ImportLimits):
    """The NumPy value of a Constant node."""
    (attribute,) = proto.attribute
    value = helper.get_attribute_value(attribute)
    if attribute.name == "value":
        return tensor_array(value, limits.base_dir, f"{node_label(proto)}: its attribute value")
    if attribute.name in ("value_float", "value_floats"):
        return np.array(value, dtype=np.float32)
    if attribute.name in ("value_int", "value_ints"):
        return np.array(value, dtype=np.int64)
    raise UnsupportedImportError(f"Constant node '{proto.name}': the attribute {attribute.name} is not "
                                 "supported by ember.onnx.load")


def compile_nodes(graph, opset, limits: ImportLimits):
    """A graph's Constant values (name -> array) and its other nodes as :class:`ImportNode` s."""
    constants, nodes = {}, []
    for proto in graph.node:
        try:
            if proto.op_type == "Constant" and proto.domain in ("", "ai.onnx"):
                constants[proto.output[0]] = constant_value(proto, limits)
            else:
                nodes.append(ImportNode(proto, opset, limits))
        except OnnxImportError:
            raise
        except (TypeError, ValueError, IndexError, KeyError, AttributeError, OverflowError) as error:
            # what the validation pass missed still names the node, as an OnnxImportError
            raise OnnxImportError(f"{node_label(proto)}: {type(error).__name__}: {error}") from error
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

    def __init__(self, graph, opset, limits: ImportLimits):
        self.input_names = [v.name for v in graph.input]
        self.output_names = [v.name for v in graph.output]
        self.limits = limits
        self.constants, self.nodes = compile_nodes(graph, opset, limits)
        self.constants.update({t.name: tensor_array(t, limits.base_dir, f"initializer '{t.name}' of subgraph "
                                                    f"'{graph.name}'") for t in graph.initializer})

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
