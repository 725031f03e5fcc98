"""The checks ``ember.onnx.load`` makes before it builds anything, so that a malformed model fails at load time
with an :class:`OnnxImportError` naming the node, op, initializer or value and what was wrong.

Graph: every value defined once (SSA, across nested subgraphs too), every node input defined by an
earlier node, an initializer, a graph input or an enclosing graph, the graph outputs produced.
Nodes: the op exists in the model's opset, input and output counts within the op's schema, required inputs
present, attributes known, of the schema's type and with valid values, required attributes present.
Tensors: a known element type ember has, no negative dims, at most ``max_elements`` elements, external
data inside ``base_dir``. Sizes: where a shape is constant (initializers, Constant nodes and what
ConstantOfShape, Expand, Tile, Pad, Resize and Scan make of them), tensors past ``max_elements`` and nested
Scans past ``max_scan_iterations`` body runs are refused.
"""
from __future__ import annotations

import math
from collections import ChainMap

import numpy as np

from onnx import AttributeProto, TensorProto, defs, helper

from ._import_limits import ImportLimits
from ._import_node import ember_dtype, handler_for, node_label
from ._import_tensors import element_count, external_file, tensor_array
from .errors import OnnxImportError, UnsupportedImportError

_SINGLE = defs.OpSchema.FormalParameterOption.Single
_WINDOW_OPS = {"Conv", "ConvTranspose", "MaxPool", "AveragePool"}
_FLAGS = {"transA", "transB", "keepdims", "ceil_mode", "count_include_pad", "allowzero", "noop_with_empty_axes",
          "select_last_index", "exclusive", "reverse", "upper", "detect_negative", "detect_positive",
          "linear_before_reset", "input_forget", "fmod", "layout", "training_mode", "antialias", "exclude_outside"}
_POSITIVE = {"group", "hidden_size", "num_scan_inputs", "num_outputs"}
_POSITIVE_LISTS = {"kernel_shape", "strides", "dilations"}
_CHOICES = {"auto_pad": {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"},
            "direction": {"forward", "reverse", "bidirectional"}}
_OP_CHOICES = {("Pad", "mode"): {"constant", "reflect", "edge", "wrap"},
               ("Resize", "mode"): {"nearest", "linear", "cubic"}}
_DTYPE_ATTRIBUTES = {("Cast", "to")}
_SMALL = 4096  # integer constants up to this many elements are kept, to follow constant shapes


def _type_name(attribute_type) -> str:
    try:
        return AttributeProto.AttributeType.Name(int(attribute_type))
    except ValueError:
        return f"type {int(attribute_type)}"


def _element_type_name(data_type: int) -> str:
    try:
        return helper.tensor_dtype_to_string(data_type).replace("TensorProto.", "")
    except (KeyError, ValueError):
        return str(data_type)


class _Graph:
    """The names a graph (and its enclosing graphs) define, and the constant values and shapes known there."""

    def __init__(self, outer: _Graph | None = None, trips: int = 1):
        self.names = ChainMap() if outer is None else outer.names.new_child()
        self.shapes = ChainMap() if outer is None else outer.shapes.new_child()
        self.values = ChainMap() if outer is None else outer.values.new_child()
        self.trips = trips  # body runs per call of the graph's enclosing Scans, multiplied (1 at the top)

    def define(self, name: str, where: str) -> None:
        if name in self.names:
            raise OnnxImportError(f"{where}: the value name '{name}' is already defined by {self.names[name]}; "
                                  "every value of an ONNX graph and its subgraphs is defined once")
        self.names[name] = where


class ModelValidator:
    """``ModelValidator(limits).model(model_proto)`` raises :class:`OnnxImportError` on the first problem."""

    def __init__(self, limits: ImportLimits):
        self.limits = limits
        self.opset = 0
        self.scan_runs = 0  # the body runs of the Scans seen so far whose trip counts are constant

    def model(self, model) -> None:
        if not model.HasField("graph"):
            raise OnnxImportError("the ONNX model has no graph")
        self.opset = default_opset(model)
        self.graph(model.graph, _Graph(), top=True)

    # -- graphs ----------------------------------------------------------------------------------------------
    def graph(self, graph, scope: _Graph, top: bool = False) -> None:
        label = "the graph" if top else f"subgraph '{graph.name}'"
        input_names = {v.name for v in graph.input}
        for value in graph.input:
            where = f"{label}: input '{value.name}'"
            if not value.name:
                raise OnnxImportError(f"{label}: an input has an empty name")
            self.value_type(value, where)
            scope.define(value.name, where)
        for tensor in graph.initializer:
            where = f"initializer '{tensor.name}'"
            if not tensor.name:
                raise OnnxImportError(f"{label}: an initializer has an empty name")
            shape = self.tensor(tensor, where)
            if tensor.name in input_names:  # IR < 4 lists initializers among the inputs too
                input_names.discard(tensor.name)
                scope.names.maps[0][tensor.name] = where
            else:
                scope.define(tensor.name, where)
            self.remember(scope, tensor.name, shape, tensor, where=where)
        for proto in graph.node:
            self.node(proto, scope)
        if top and not graph.output:
            raise OnnxImportError("the graph declares no outputs")
        seen = set()
        for value in graph.output:
            where = f"{label}: output '{value.name}'"
            if not value.name:
                raise OnnxImportError(f"{label}: an output has an empty name")
            if value.name in seen:
                raise OnnxImportError(f"{where} is listed twice among the graph outputs")
            seen.add(value.name)
            if value.name not in scope.names:
                raise OnnxImportError(f"{where} is produced by no node, initializer or graph input")
            self.value_type(value, where)

    def value_type(self, value, where: str) -> None:
        kind = value.type.WhichOneof("value")
        if kind is None:
            return  # no type given: nothing to check
        if kind != "tensor_type":
            raise UnsupportedImportError(f"{where}: a {kind.replace('_type', '')} value is not supported by "
                                         "ember.onnx.load (tensors only)")
        elem_type = value.type.tensor_type.elem_type
        if elem_type != TensorProto.UNDEFINED:
            self.element_type(elem_type, where)

    def element_type(self, data_type: int, where: str):
        if data_type not in TensorProto.DataType.values() or data_type == TensorProto.UNDEFINED:
            raise OnnxImportError(f"{where}: the element type {data_type} is not an ONNX tensor type")
        try:
            return ember_dtype(data_type)
        except (UnsupportedImportError, KeyError, TypeError, ValueError):
            raise UnsupportedImportError(f"{where}: the element type {_element_type_name(data_type)} is not "
                                         "supported by ember.onnx.load") from None

    def tensor(self, tensor, where: str) -> tuple:
        """Checks a TensorProto's type, dims, size and external data location; returns its shape."""
        self.element_type(tensor.data_type, where)
        count = element_count(tensor, where)
        if count > self.limits.max_elements:
            raise OnnxImportError(f"{where}: its dims {list(tensor.dims)} declare {count} elements, more than "
                                  f"max_elements={self.limits.max_elements}")
        if tensor.data_location == TensorProto.EXTERNAL:
            external_file(tensor, self.limits.base_dir, where)
        elif tensor.data_location != TensorProto.DEFAULT:
            raise OnnxImportError(f"{where}: its data_location {tensor.data_location} is neither DEFAULT nor "
                                  "EXTERNAL")
        return tuple(tensor.dims)

    def remember(self, scope: _Graph, name: str, shape, tensor=None, value=None, where: str = "") -> None:
        """Record a constant's shape and, for a small integer one, its value (to follow constant shapes)."""
        scope.shapes[name] = tuple(int(d) for d in shape)
        if value is None and tensor is not None and tensor.data_location == TensorProto.DEFAULT \
                and math.prod(shape) <= _SMALL and tensor.data_type in (TensorProto.INT64, TensorProto.INT32):
            value = tensor_array(tensor, None, where or name)
        if value is not None:
            scope.values[name] = np.asarray(value)

    # -- nodes -----------------------------------------------------------------------------------------------
    def node(self, proto, scope: _Graph) -> None:
        where = node_label(proto)
        try:
            if proto.op_type == "Constant" and proto.domain in ("", "ai.onnx"):
                self.constant(proto, scope, where)
            else:
                handler_for(proto)
                schema = self.schema(proto, where)
                self.inputs(proto, schema, scope, where)
                self.attributes(proto, schema, scope, where)
                self.sizes(proto, scope, where)
        except OnnxImportError:
            raise
        except (TypeError, ValueError, IndexError, KeyError, AttributeError, OverflowError) as error:
            # a check tripped on something stranger than it expects: still an OnnxImportError naming the node
            raise OnnxImportError(f"{where}: {type(error).__name__}: {error}") from error
        for index, name in enumerate(proto.output):
            if name:
                scope.define(name, f"{where} (output {index})")

    def schema(self, proto, where: str):
        try:
            schema = defs.get_schema(proto.op_type, self.opset, "")
        except defs.SchemaError:
            raise OnnxImportError(f"{where}: the op {proto.op_type} does not exist in opset {self.opset} "
                                  "of the default domain") from None
        outputs = len(proto.output)
        if not schema.min_output <= outputs <= schema.max_output:
            raise OnnxImportError(f"{where}: {proto.op_type} (opset {self.opset}) has "
                                  f"{_count_range(schema.min_output, schema.max_output)} output(s), the node "
                                  f"lists {outputs}")
        return schema

    def inputs(self, proto, schema, scope: _Graph, where: str) -> None:
        count = len(proto.input)
        if not schema.min_input <= count <= schema.max_input:
            raise OnnxImportError(f"{where}: {proto.op_type} (opset {self.opset}) takes "
                                  f"{_count_range(schema.min_input, schema.max_input)} input(s), the node "
                                  f"lists {count}")
        formals = schema.inputs
        for index, name in enumerate(proto.input):
            formal = formals[min(index, len(formals) - 1)] if formals else None
            if not name:
                if formal is not None and formal.option == _SINGLE:
                    raise OnnxImportError(f"{where}: its required input {index} ({formal.name}) is empty")
            elif name not in scope.names:
                raise OnnxImportError(f"{where}: its input {name!r} is produced by no earlier node, initializer "
                                      "or graph input")

    def attributes(self, proto, schema, scope: _Graph, where: str) -> None:
        seen = set()
        for attribute in proto.attribute:
            name = attribute.name
            if not name:
                raise OnnxImportError(f"{where}: an attribute has an empty name")
            if name in seen:
                raise OnnxImportError(f"{where}: the attribute {name} is given twice")
            seen.add(name)
            if attribute.ref_attr_name:
                raise OnnxImportError(f"{where}: the attribute {name} refers to a function attribute "
                                      f"({attribute.ref_attr_name}), outside any function")
            expected = schema.attributes.get(name)
            if expected is None:
                raise OnnxImportError(f"{where}: {proto.op_type} (opset {self.opset}) has no attribute {name}; "
                                      f"it has {sorted(schema.attributes) or 'none'}")
            if int(attribute.type) != int(expected.type):
                raise OnnxImportError(f"{where}: the attribute {name} is {_type_name(attribute.type)}, "
                                      f"{_type_name(expected.type)} expected")
            self.attribute_value(proto, attribute, where)
        missing = [n for n, a in schema.attributes.items() if a.required and n not in seen]
        if missing:
            raise OnnxImportError(f"{where}: {proto.op_type} requires the attribute(s) {missing}")
        if proto.op_type in _WINDOW_OPS:
            self.window_lengths(proto, where)
        if proto.op_type == "Scan":
            self.scan(proto, scope, where)
        else:
            for attribute in proto.attribute:
                if attribute.type == AttributeProto.GRAPH:
                    self.graph(attribute.g, _Graph(scope, scope.trips))

    def attribute_value(self, proto, attribute, where: str) -> None:
        name = attribute.name
        what = f"{where}: the attribute {name}"
        if attribute.type == AttributeProto.TENSOR:
            self.tensor(attribute.t, what)
            return
        if attribute.type == AttributeProto.SPARSE_TENSOR:
            raise UnsupportedImportError(f"{what}: sparse tensors are not supported by ember.onnx.load")
        value = helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            try:
                value = value.decode()
            except UnicodeDecodeError:
                raise OnnxImportError(f"{what} is not UTF-8 text") from None
        if name in _FLAGS and attribute.type == AttributeProto.INT and value not in (0, 1):
            raise OnnxImportError(f"{what} is {value}, 0 or 1 expected")
        if name in _POSITIVE and attribute.type == AttributeProto.INT and value < 1:
            raise OnnxImportError(f"{what} is {value}, a positive int expected")
        if name in _POSITIVE_LISTS and proto.op_type in _WINDOW_OPS and any(v < 1 for v in value):
            raise OnnxImportError(f"{what} is {list(value)}, positive ints expected")
        if name in ("pads", "output_padding") and proto.op_type in _WINDOW_OPS and any(v < 0 for v in value):
            raise OnnxImportError(f"{what} is {list(value)}, non-negative ints expected")
        if name == "pads" and proto.op_type in _WINDOW_OPS and any(v > self.limits.max_elements for v in value):
            raise OnnxImportError(f"{what} is {list(value)}: a padded input would have more than "
                                  f"max_elements={self.limits.max_elements} elements")
        choices = _OP_CHOICES.get((proto.op_type, name)) or (_CHOICES.get(name) if isinstance(value, str) else None)
        if choices is not None and value not in choices:
            raise OnnxImportError(f"{what} is {value!r}, one of {sorted(choices)} expected")
        if name == "perm" and proto.op_type == "Transpose" and sorted(value) != list(range(len(value))):
            raise OnnxImportError(f"{what} is {list(value)}, a permutation of 0..{len(value) - 1} expected")
        if name == "split" and any(v < 0 for v in value):
            raise OnnxImportError(f"{what} is {list(value)}, non-negative sizes expected")
        if (proto.op_type, name) in _DTYPE_ATTRIBUTES:
            self.element_type(value, what)

    def window_lengths(self, proto, where: str) -> None:
        """Conv and pooling: strides, dilations, pads and output_padding match kernel_shape's length."""
        attrs = {a.name: list(a.ints) for a in proto.attribute if a.type == AttributeProto.INTS}
        kernel = attrs.get("kernel_shape")
        if kernel is None:
            return
        for name, factor in (("strides", 1), ("dilations", 1), ("pads", 2), ("output_padding", 1)):
            if name in attrs and len(attrs[name]) != factor * len(kernel):
                raise OnnxImportError(f"{where}: the attribute {name} has {len(attrs[name])} values, "
                                      f"{factor * len(kernel)} expected for kernel_shape {kernel}")

    # -- constants and constant sizes ----------------------------------------------------------------------------
    def constant(self, proto, scope: _Graph, where: str) -> None:
        if len(proto.input) or len(proto.output) != 1 or not proto.output[0]:
            raise OnnxImportError(f"{where}: a Constant takes no inputs and has one output, the node lists "
                                  f"{len(proto.input)} and {len(proto.output)}")
        if len(proto.attribute) != 1:
            raise OnnxImportError(f"{where}: a Constant has exactly one value attribute, the node has "
                                  f"{len(proto.attribute)}")
        (attribute,) = proto.attribute
        expected = {"value": AttributeProto.TENSOR, "value_float": AttributeProto.FLOAT,
                    "value_floats": AttributeProto.FLOATS, "value_int": AttributeProto.INT,
                    "value_ints": AttributeProto.INTS}.get(attribute.name)
        if expected is None:
            raise UnsupportedImportError(f"{where}: the attribute {attribute.name} is not supported by "
                                         "ember.onnx.load")
        if attribute.type != expected:
            raise OnnxImportError(f"{where}: the attribute {attribute.name} is {_type_name(attribute.type)}, "
                                  f"{_type_name(expected)} expected")
        if attribute.type == AttributeProto.TENSOR:
            shape = self.tensor(attribute.t, f"{where}: the attribute value")
            self.remember(scope, proto.output[0], shape, attribute.t, where=f"{where}: the attribute value")
        else:
            value = np.asarray(helper.get_attribute_value(attribute))
            self.remember(scope, proto.output[0], value.shape, value=value if value.dtype.kind == "i" else None)

    def sizes(self, proto, scope: _Graph, where: str) -> None:
        """Follow constant shapes through the ops that make them, refusing those past ``max_elements``."""
        inputs = list(proto.input)
        values = [scope.values.get(name) if name else None for name in inputs]
        shapes = [scope.shapes.get(name) if name else None for name in inputs]
        shape = None
        if proto.op_type == "ConstantOfShape" and values[0] is not None:
            shape = tuple(int(d) for d in values[0].reshape(-1))
            if any(d < 0 for d in shape):
                raise OnnxImportError(f"{where}: its shape {list(shape)} has a negative size")
        elif proto.op_type == "Expand" and values[1] is not None:
            requested = [int(d) for d in values[1].reshape(-1)]
            if any(d < 0 for d in requested):
                raise OnnxImportError(f"{where}: its shape {requested} has a negative size")
            if shapes[0] is not None:
                try:
                    shape = tuple(np.broadcast_shapes(shapes[0], tuple(requested)))
                except ValueError:
                    raise OnnxImportError(f"{where}: its input of shape {list(shapes[0])} does not broadcast "
                                          f"to {requested}") from None
            else:
                self.limits.check_elements(where, [d for d in requested if d > 1], "its output (at least)")
        elif proto.op_type == "Tile" and values[1] is not None:
            repeats = [int(d) for d in values[1].reshape(-1)]
            if any(d < 0 for d in repeats):
                raise OnnxImportError(f"{where}: its repeats {repeats} include a negative count")
            if shapes[0] is not None and len(shapes[0]) == len(repeats):
                shape = tuple(d * r for d, r in zip(shapes[0], repeats))
            else:
                self.limits.check_elements(where, repeats, "its output (at least, repeats alone)")
        elif proto.op_type == "Pad" and len(values) > 1 and values[1] is not None and shapes[0] is not None \
                and len(inputs) < 4 and values[1].size == 2 * len(shapes[0]):
            pads = [int(p) for p in values[1].reshape(-1)]
            rank = len(shapes[0])
            shape = tuple(d + b + e for d, b, e in zip(shapes[0], pads[:rank], pads[rank:]))
        elif proto.op_type == "Resize" and len(values) > 3 and values[3] is not None and values[3].size:
            shape = tuple(int(d) for d in values[3].reshape(-1))
        if shape is not None:
            self.limits.check_elements(where, shape)
            if proto.output and proto.output[0]:
                self.remember(scope, proto.output[0], shape)

    # -- Scan ----------------------------------------------------------------------------------------------------
    def scan(self, proto, scope: _Graph, where: str) -> None:
        if self.opset < 9:
            raise UnsupportedImportError(f"{where}: Scan before opset 9 (with sequence_lens) is not supported by "
                                         "ember.onnx.load")
        attrs = {a.name: a for a in proto.attribute}
        count = attrs["num_scan_inputs"].i
        inputs = list(proto.input)
        if count > len(inputs):
            raise OnnxImportError(f"{where}: num_scan_inputs is {count}, the node has {len(inputs)} input(s)")
        if any(not name for name in inputs):
            raise OnnxImportError(f"{where}: a Scan input is empty")
        body = attrs["body"].g
        states = len(inputs) - count
        if len(body.input) != len(inputs):
            raise OnnxImportError(f"{where}: its body takes {len(body.input)} input(s), the Scan passes "
                                  f"{len(inputs)} ({states} state(s), {count} scan input(s))")
        scan_outputs = len(body.output) - states
        if scan_outputs < 0 or len(proto.output) > len(body.output):
            raise OnnxImportError(f"{where}: its body returns {len(body.output)} value(s) for {states} state(s) "
                                  f"and the node's {len(proto.output)} output(s)")
        if scan_outputs == 0 and states == 0:
            raise OnnxImportError(f"{where}: its body returns nothing")
        axes = list(attrs["scan_input_axes"].ints) if "scan_input_axes" in attrs else [0] * count
        for name, expected in (("scan_input_axes", count), ("scan_input_directions", count),
                               ("scan_output_axes", scan_outputs), ("scan_output_directions", scan_outputs)):
            if name in attrs and len(attrs[name].ints) != expected:
                raise OnnxImportError(f"{where}: the attribute {name} has {len(attrs[name].ints)} value(s), "
                                      f"{expected} expected")
            if name.endswith("directions") and name in attrs and any(v not in (0, 1) for v in attrs[name].ints):
                raise OnnxImportError(f"{where}: the attribute {name} is {list(attrs[name].ints)}, 0s and 1s "
                                      "expected")
        trips = None
        inner = _Graph(scope, scope.trips)
        for position, (name, axis) in enumerate(zip(inputs[states:], axes)):
            shape = scope.shapes.get(name)
            if shape is None:
                continue
            if not -len(shape) <= axis < len(shape):
                raise OnnxImportError(f"{where}: scan input {name!r} of shape {list(shape)} has no axis {axis}")
            axis %= len(shape)
            if trips is not None and shape[axis] != trips:
                raise OnnxImportError(f"{where}: scan inputs of different lengths {sorted({trips, shape[axis]})} "
                                      "along the scan axes")
            trips = shape[axis]
            inner.shapes[body.input[states + position].name] = shape[:axis] + shape[axis + 1:]
        if trips is not None:
            inner.trips = self.limits.check_trips(where, scope.trips, trips)
            self.scan_runs = self.limits.check_runs(where, self.scan_runs, inner.trips)
        self.graph(body, inner)


def default_opset(model) -> int:
    """The model's version of the default ONNX domain."""
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    raise OnnxImportError("the ONNX model imports no version of the default opset")


def _count_range(low: int, high: int) -> str:
    if low == high:
        return str(low)
    return f"at least {low}" if high >= 2 ** 31 - 1 else f"{low} to {high}"


def validate_model(model, limits: ImportLimits) -> None:
    """Raise :class:`OnnxImportError` (naming the node, op or value) on the first problem in ``model``."""
    ModelValidator(limits).model(model)
