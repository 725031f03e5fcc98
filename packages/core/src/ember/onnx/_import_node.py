"""One ONNX node ready to run, and the registry mapping ONNX op types to ember implementations.

A handler is ``fn(node, *inputs)``: ``inputs`` are ember tensors (``None``
for an absent optional input); it returns a tensor or a tuple of tensors,
one per output the node may have. ``node`` gives the attributes, the opset
and errors that name the node.
"""
from __future__ import annotations

import numpy as np

import ember

from ._import import OnnxImportError, UnsupportedImportError

HANDLERS = {}


def handles(*op_types):
    """Register the decorated function as the implementation of ``op_types``."""
    def register(fn):
        for op_type in op_types:
            HANDLERS[op_type] = fn
        return fn
    return register


def attribute_value(attribute):
    """An attribute's Python value; tensors become NumPy arrays."""
    from onnx import AttributeProto, helper, numpy_helper
    value = helper.get_attribute_value(attribute)
    if attribute.type == AttributeProto.TENSOR:
        return numpy_helper.to_array(value)
    if attribute.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
        return value
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
        self.attrs = {a.name: attribute_value(a) for a in proto.attribute}

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

    def run(self, inputs):
        result = self.handler(self, *inputs)
        return result if isinstance(result, (tuple, list)) else (result,)


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
    from onnx import helper
    name = np.dtype(helper.tensor_dtype_to_np_dtype(onnx_type)).name
    dtype = getattr(ember, "bool" if name == "bool" else name, None)
    if not isinstance(dtype, ember.dtype):
        raise UnsupportedImportError(f"the ONNX element type {name} is not supported by ember.onnx.load")
    return dtype
