"""The ONNX graph under construction (``g`` of a lowering) and the traced op call it lowers (``node``).

See ``ONNX_API.md``/the :mod:`ember.onnx` docstring for the lowering contract:
``lowering(g, node) -> list of output value names``.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

import onnx
from onnx import helper, numpy_helper

from .errors import UnsupportedExportError


def onnx_dtype(dtype) -> int:
    """The ``onnx.TensorProto`` element type of an ember or NumPy dtype."""
    name = getattr(dtype, "name", None) or np.dtype(dtype).name
    if name == "bfloat16":
        return onnx.TensorProto.BFLOAT16
    return helper.np_dtype_to_tensor_dtype(np.dtype(name))


def numpy_dtype(dtype):
    """The NumPy dtype of an ember dtype (or a NumPy dtype)."""
    return np.dtype(getattr(dtype, "name", dtype))


@dataclass
class Node:
    """A traced op call, as a lowering sees it (see the module docstring of :mod:`ember.onnx`)."""

    op: object
    name: str
    attrs: dict
    inputs: list
    input_shapes: list
    input_dtypes: list
    output_shapes: list
    output_dtypes: list
    dynamic: set = field(default_factory=set)
    output_dynamic: set = field(default_factory=set)
    input_shapes_alt: list | None = None   # the shapes in the second trace (dynamic axes one longer), if any
    output_shapes_alt: list | None = None
    attrs_alt: dict | None = None          # the attributes in the second trace, if any

    def __repr__(self):
        return f"<traced op {self.name!r} inputs={self.inputs} attrs={self.attrs}>"


class Graph:
    """Collects ONNX nodes and initializers; lowerings call :meth:`op` and :meth:`const`."""

    def __init__(self, opset: int = 17):
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.domains: set = set()
        self._used: set = set()
        self._counts: dict = {}
        self._consts: dict = {}
        #: the dynamic axes of the graph inputs: (input name, axis, size in the trace, size in the second trace)
        self.symbols: list = []
        #: lowerings may cache values here (e.g. a graph input's size along an axis)
        self.memo: dict = {}
        #: id(backend array) -> value name, for ops that take an array attribute (an index) made by the model
        self.arrays: dict = {}

    def fresh(self, hint: str) -> str:
        """A value name starting with ``hint`` that no other value has."""
        n = self._counts.get(hint, 0)
        name = hint if n == 0 and hint not in self._used else f"{hint}_{n}"
        while name in self._used:
            n += 1
            name = f"{hint}_{n}"
        self._counts[hint] = n + 1
        self._used.add(name)
        return name

    def claim(self, name: str) -> str:
        """Reserve an exact value name (graph inputs, initializers named by state-dict keys)."""
        if name in self._used:
            raise ValueError(f"ember.onnx: the value name {name!r} is used twice")
        self._used.add(name)
        return name

    def op(self, op_type: str, *inputs, outputs: int = 1, domain: str = "", **attributes):
        """Append a node; the new output name (a list of names when ``outputs > 1``)."""
        outs = [self.fresh(f"{op_type}_out") for _ in range(outputs)]
        attrs = {k: _attribute(v) for k, v in attributes.items() if v is not None}
        ins = ["" if i is None else i for i in inputs]
        while ins and ins[-1] == "":
            ins.pop()
        node = helper.make_node(op_type, ins, outs, name=self.fresh(f"/{op_type}"), domain=domain or None, **attrs)
        self.nodes.append(node)
        if domain:
            self.domains.add(domain)
        return outs[0] if outputs == 1 else outs

    def initializer(self, name: str, array: np.ndarray) -> str:
        """Add ``array`` as an initializer under the exact ``name``."""
        self.claim(name)
        self.initializers.append(_tensor_proto(np.asarray(array), name))
        return name

    def const(self, value, dtype=None) -> str:
        """A constant (array, Python scalar or list) as an initializer; its value name."""
        arr = np.asarray(value, dtype=None if dtype is None else numpy_dtype(dtype))
        if arr.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
            arr = arr.astype(np.float32)  # Python floats default to float32, like ember's default dtype
        key = None
        if arr.size <= 16:
            key = (arr.dtype.str, arr.shape, arr.tobytes())
            if key in self._consts:
                return self._consts[key]
        name = self.fresh("const")
        self.initializers.append(_tensor_proto(arr, name))
        if key is not None:
            self._consts[key] = name
        return name

    def value_of(self, array) -> str | None:
        """The value name of a tensor whose backend array is ``array`` (an attribute such as ``index=``), or None
        if the model did not make it (then the lowering writes it as a constant)."""
        return self.arrays.get(id(array))

    def symbolic_size(self, size: int, size_alt: int, node=None) -> str:
        """A ``[1]`` int64 value: a size that was ``size`` in the trace and ``size_alt`` in the second trace,
        written as a constant times a product of the graph inputs' dynamic sizes (read with ``Shape``)."""
        for r in range(1, min(3, len(self.symbols)) + 1):
            for combo in itertools.combinations(self.symbols, r):
                a, b = math.prod(s[2] for s in combo), math.prod(s[3] for s in combo)
                if size % a == 0 and size // a * b == size_alt:
                    out = None
                    for name, axis, _, _ in combo:
                        key = ("size", name, axis)
                        if key not in self.memo:
                            index = self.const(np.asarray([axis], dtype=np.int64))
                            self.memo[key] = self.op("Gather", self.op("Shape", name), index, axis=0)
                        out = self.memo[key] if out is None else self.op("Mul", out, self.memo[key])
                    if size == a:
                        return out
                    return self.op("Mul", out, self.const(np.asarray([size // a], dtype=np.int64)))
        why = f"cannot write a size that was {size} (then {size_alt}) from the dynamic input sizes"
        if node is not None:
            self.unsupported(node, why)
        raise UnsupportedExportError(f"ember.onnx.export: {why}")

    def unsupported(self, node, why: str):
        """Raise the error for an op that this lowering cannot express."""
        raise UnsupportedExportError(f"ember.onnx.export: cannot lower op {node.name!r}: {why}")


def _tensor_proto(arr: np.ndarray, name: str):
    if arr.dtype.name == "bfloat16":  # ml_dtypes' bfloat16: onnx stores its raw bits
        proto = helper.make_tensor(name, onnx.TensorProto.BFLOAT16, arr.shape,
                                   np.ascontiguousarray(arr).view(np.uint16).tobytes(), raw=True)
        return proto
    return numpy_helper.from_array(np.ascontiguousarray(arr), name)


def _attribute(value):
    if isinstance(value, np.ndarray):
        return _tensor_proto(value, "")
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list):
        value = [int(v) if isinstance(v, (bool, np.integer)) else v for v in value]
    elif isinstance(value, (bool, np.integer)):
        value = int(value)
    elif isinstance(value, np.floating):
        value = float(value)
    return value
