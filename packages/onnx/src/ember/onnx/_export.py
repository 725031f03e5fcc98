"""``ember.onnx.export``: trace a model, lower each recorded op through its lowering, write the ONNX model."""
from __future__ import annotations

import warnings

import numpy as np

import ember
import onnx
from ember import Tensor
from ember import _sibling_api as core
from onnx import helper

from . import lowerings
from ._graph import Graph, Node, _tensor_proto, onnx_dtype
from ._trace import trace
from .errors import UnsupportedExportError
from .lowerings.not_exportable import NOT_EXPORTABLE

BUILTIN_LOWERINGS = "ember.onnx.lowerings"


def registered_lowerings() -> dict:
    """``{op_name: lowering}`` from every plugin, ember's own included (registered here on first use)."""
    if not ember.get_plugin_manager().has_plugin(BUILTIN_LOWERINGS):
        ember.register_plugin(lowerings, BUILTIN_LOWERINGS)
    return core.onnx_lowerings()


def export(model, args, f, input_names=None, output_names=None, dynamic_axes=None, opset_version: int = 17,
           do_constant_folding: bool = True, export_params: bool = True, verbose: bool = False) -> None:
    """Trace ``model(*args)`` and write it to ``f`` (a path or a binary file object) as an ONNX model.

    ``model`` is an :class:`ember.nn.Module` (exported in eval mode; a model in
    training mode gets a ``UserWarning`` and its mode back afterwards) or a plain
    function of tensors; ``args`` a tensor or a tuple of them. Parameters and
    buffers become initializers named by their state-dict keys (graph inputs
    with ``export_params=False``); other tensors the model creates while it runs
    become constants. ``dynamic_axes`` (``{name: {axis: label}}`` or
    ``{name: [axes]}``, names from ``input_names``/``output_names``) leaves
    those axes free in the graph. Python control flow, including any that reads
    ``tensor.shape``, is recorded as it ran for ``args`` (as PyTorch's tracer does).
    Only the ops this thread runs are recorded (the trace is a context variable): a model that runs parts of
    itself in other threads (``DataParallel``, ``Pipe``) cannot be exported as it is; export its module.

    >>> import io, ember, onnx
    >>> buf = io.BytesIO()
    >>> ember.onnx.export(lambda x: (x * 2).relu(), ember.ones(2, 3), buf, input_names=["x"])
    >>> [n.op_type for n in onnx.load_from_string(buf.getvalue()).graph.node]
    ['Mul', 'Relu']
    """
    proto = build_model(model, args, input_names, output_names, dynamic_axes, opset_version,
                        do_constant_folding, export_params)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    data = proto.SerializeToString()
    if hasattr(f, "write"):
        f.write(data)
    else:
        with open(f, "wb") as fh:
            fh.write(data)


def as_args(args) -> tuple:
    if isinstance(args, Tensor):
        return (args,)
    if isinstance(args, list):
        return tuple(args)
    if not isinstance(args, tuple):
        raise TypeError(f"ember.onnx.export: args must be a tensor or a tuple of tensors, not {type(args).__name__}")
    return args


def build_model(model, args, input_names=None, output_names=None, dynamic_axes=None, opset_version=17,
                do_constant_folding=True, export_params=True) -> onnx.ModelProto:
    """The ``onnx.ModelProto`` that :func:`export` writes."""
    args = as_args(args)
    modules = list(model.modules()) if hasattr(model, "modules") and hasattr(model, "train") else []
    modes = [(m, m.training) for m in modules]
    if modules and model.training:
        warnings.warn("ember.onnx.export: the model is in training mode; it is exported in eval mode (dropout off, "
                      "batch norm with running statistics) and put back in training mode afterwards", UserWarning,
                      stacklevel=3)
    try:
        for m in modules:
            m.training = False
        return _Exporter(model, args, input_names, output_names, dynamic_axes, opset_version,
                         do_constant_folding, export_params).run()
    finally:
        for m, mode in modes:
            m.training = mode


def _axes(spec, name) -> dict:
    if isinstance(spec, dict):
        return {int(k): str(v) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(spec)}
    raise TypeError(f"ember.onnx.export: dynamic_axes[{name!r}] must be a dict {{axis: name}} or a list of axes")


def _array(t: Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


class _Exporter:
    def __init__(self, model, args, input_names, output_names, dynamic_axes, opset, fold, export_params):
        self.model, self.args, self.opset = model, args, opset
        self.fold, self.export_params = fold, export_params
        self.tensor_args = [a for a in args if isinstance(a, Tensor)]
        self.input_names = _names(input_names, len(self.tensor_args), "input")
        self.output_names = list(output_names or [])
        self.dynamic_axes = dict(dynamic_axes or {})
        self.g = Graph(opset)
        self.values: dict = {}    # id(tensor) -> value name
        self.dyn: dict = {}       # value name -> {axis: label or None}
        self.consts: set = set()  # ids of tensors that are constants (folded or created during forward)
        self.missing: dict = {}   # id(op output a lowering left out) -> (op name, output index)
        self._param_inputs: list = []  # parameters as graph inputs (export_params=False)
        self._renamed: set = set()     # values renamed to an output name
        self._grown: list = []         # the tensor args of the second trace
        self.params = {}
        if hasattr(model, "named_parameters"):
            for key, p in list(model.named_parameters()) + list(model.named_buffers()):
                self.params.setdefault(id(p), (key, p))

    # -- driving ----------------------------------------------------------------------------------------------
    def run(self) -> onnx.ModelProto:
        known = set(self.input_names) | set(self.output_names)
        for name in self.dynamic_axes:
            if name not in known:
                raise ValueError(f"ember.onnx.export: dynamic_axes names {name!r}, which is not among the input "
                                 f"names {self.input_names} or output names {self.output_names}")
        in_axes = {i: _axes(self.dynamic_axes[n], n) for i, n in enumerate(self.input_names) if n in self.dynamic_axes}
        tr, outs = trace(self.model, self.args)
        out_dyn, records_b = self._second_trace(tr, outs, in_axes) if in_axes else (None, None)
        lower = registered_lowerings()
        inputs = []
        for i, (t, name) in enumerate(zip(self.tensor_args, self.input_names)):
            self.g.claim(name)
            self._bind(t, name)
            self.dyn[name] = dict(in_axes.get(i, {}))
            for a in self.dyn[name]:
                self.g.symbols.append((name, a, t.shape[a], self._grown[i].shape[a] if self._grown else t.shape[a]))
            inputs.append(self._value_info(name, t, self.dyn[name]))
        for k, rec in enumerate(tr.records):
            self._lower(rec, lower, out_dyn[k] if out_dyn else None, records_b[k] if records_b else None)
        if len(self.output_names) < len(outs):
            defaults = _names(None, len(outs), "output")
            self.output_names += defaults[len(self.output_names):]
        outputs = [self._output(t, name) for t, name in zip(outs, self.output_names)]
        graph = helper.make_graph(self.g.nodes, "ember", inputs, outputs, self.g.initializers)
        if not self.export_params:
            graph.input.extend(self._param_inputs)
        opsets = [helper.make_opsetid("", self.opset)] + [helper.make_opsetid(d, 1) for d in sorted(self.g.domains)]
        return helper.make_model(graph, opset_imports=opsets, producer_name="ember",
                                 producer_version=getattr(ember, "__version__", ""),
                                 ir_version=helper.find_min_ir_version_for(opsets[:1]))

    def _second_trace(self, tr, outs, in_axes) -> tuple:
        """Per record, ``{output index: {axis: label}}`` of the axes that follow the dynamic input axes, and the
        records of the second trace (None, None when it ran other ops)."""
        grown = list(self.args)
        tensor_pos = [i for i, a in enumerate(self.args) if isinstance(a, Tensor)]
        step = 1
        for i, axes in in_axes.items():
            grown[tensor_pos[i]] = _cat_grow(self.args[tensor_pos[i]], axes, step)
            step += len(axes)
        self._grown = [grown[p] for p in tensor_pos]
        tr2, _ = trace(self.model, tuple(grown))
        same = len(tr2.records) == len(tr.records) and all(
            type(a.op) is type(b.op) and len(a.outputs) == len(b.outputs) for a, b in zip(tr.records, tr2.records))
        if not same:
            warnings.warn("ember.onnx.export: the model runs different ops for another size of its dynamic axes "
                          "(Python control flow on shapes); the graph is exported as traced and may only work "
                          "for the traced sizes", UserWarning, stacklevel=4)
            return None, None
        labels = {}
        for i, axes in in_axes.items():
            t, t2 = self.args[tensor_pos[i]], grown[tensor_pos[i]]
            for a, label in axes.items():
                labels.setdefault((t.shape[a], t2.shape[a]), label)
        result = []
        for a, b in zip(tr.records, tr2.records):
            per = {}
            for j, (o1, o2) in enumerate(zip(a.outputs, b.outputs)):
                per[j] = {ax: labels.get((s1, s2)) for ax, (s1, s2) in enumerate(zip(o1.shape, o2.shape))
                          if s1 != s2} if o1.ndim == o2.ndim else {}
            result.append(per)
        return result, tr2.records

    # -- values -----------------------------------------------------------------------------------------------
    def _bind(self, t, name):
        self.values[id(t)] = name
        self.g.arrays[id(core.array(t))] = name

    def _resolve(self, t: Tensor) -> str:
        entry = self.values.get(id(t))
        if entry is not None:
            return entry
        if id(t) in self.missing:
            op, j = self.missing[id(t)]
            raise UnsupportedExportError(f"ember.onnx.export: the model uses output {j} of op {op!r}, which its "
                                         "ONNX lowering does not give")
        if id(t) in self.params:
            key, _ = self.params[id(t)]
            if self.export_params:
                self.g.initializer(key, _array(t))
            else:
                self.g.claim(key)
                self._param_inputs.append(self._value_info(key, t, {}))
            self._bind(t, key)
            return key
        name = self.g.fresh("const")
        self.g.initializers.append(_const_proto(t, name))
        self._bind(t, name)
        return name

    def _dynamic_const(self, t, alt, op_name) -> str:
        """A tensor made during forward whose size follows a dynamic axis (``zeros(batch, n)``): a filled one
        becomes ``Expand`` of its value to a shape computed from the inputs' sizes."""
        if id(t) in self.values:
            return self.values[id(t)]
        data = _array(t)
        first = data.reshape(-1)[:1]
        if data.size == 0 or not np.array_equal(data, np.broadcast_to(first, data.shape), equal_nan=True):
            raise UnsupportedExportError(
                f"ember.onnx.export: op {op_name!r} uses a tensor created during forward whose size follows a "
                f"dynamic axis ({list(t.shape)}, then {list(alt.shape)}) and whose values are not all equal; "
                "ember cannot rebuild it in the graph (export without dynamic_axes, or pass it as an input)")
        dims = [self.g.const(np.asarray([s], np.int64)) if s == sa else self.g.symbolic_size(s, sa)
                for s, sa in zip(t.shape, alt.shape)]
        shape = dims[0] if len(dims) == 1 else self.g.op("Concat", *dims, axis=0)
        name = self.g.op("Expand", self.g.const(first.reshape(())), shape)
        self._bind(t, name)
        self.dyn[name] = {a: None for a, (s, sa) in enumerate(zip(t.shape, alt.shape)) if s != sa}
        return name

    def _is_const(self, t) -> bool:
        i = id(t)
        return i in self.consts or (i not in self.values and i not in self.params and i not in self.missing)

    # -- lowering one op call ------------------------------------------------------------------------------------
    def _lower(self, rec, lower, out_dyn, rec_b):
        tensors = [x for x in rec.inputs if isinstance(x, Tensor)]
        if self.fold and tensors and all(self._is_const(x) for x in tensors):
            self.consts.update(id(o) for o in rec.outputs)
            return
        name = type(rec.op).name_ if rec.op is not None else "?"
        fn = lower.get(name)
        if fn is None:
            why = NOT_EXPORTABLE.get(name, "register one with the ember_onnx_lowerings hook")
            raise UnsupportedExportError(f"ember.onnx.export: no ONNX lowering for op {name!r} ({why})")
        scalar_dtype = rec.outputs[0].dtype if rec.outputs and rec.outputs[0].dtype.name != "bool" else \
            next((x.dtype for x in tensors), None)
        in_names, dynamic = [], set()
        for i, x in enumerate(rec.inputs):
            if isinstance(x, Tensor):
                alt = rec_b.inputs[i] if rec_b is not None else None
                if isinstance(alt, Tensor) and alt.shape != x.shape and self._is_const(x):
                    n = self._dynamic_const(x, alt, name)
                else:
                    n = self._resolve(x)
                in_names.append(n)
                dynamic.update((i, a) for a in self.dyn.get(n, {}))
            elif x is None:
                in_names.append(None)
            elif isinstance(x, (bool, int, float)):
                in_names.append(self.g.const(x, scalar_dtype))
            else:
                in_names.append(x)
        node = Node(op=rec.op, name=name, attrs=rec.attrs, inputs=in_names,
                    input_shapes=[tuple(x.shape) if isinstance(x, Tensor) else None for x in rec.inputs],
                    input_dtypes=[x.dtype if isinstance(x, Tensor) else None for x in rec.inputs],
                    output_shapes=[tuple(o.shape) for o in rec.outputs],
                    output_dtypes=[o.dtype for o in rec.outputs],
                    dynamic=dynamic,
                    output_dynamic={(j, a) for j, axes in (out_dyn or {}).items() for a in axes},
                    input_shapes_alt=None if rec_b is None else [
                        tuple(x.shape) if isinstance(x, Tensor) else None for x in rec_b.inputs],
                    output_shapes_alt=None if rec_b is None else [tuple(o.shape) for o in rec_b.outputs],
                    attrs_alt=None if rec_b is None else rec_b.attrs)
        outs = fn(self.g, node)
        if isinstance(outs, str):
            outs = [outs]
        if len(outs) != len(rec.outputs):
            raise UnsupportedExportError(f"ember.onnx.export: the lowering of op {name!r} returned {len(outs)} "
                                         f"outputs, but the op has {len(rec.outputs)}")
        for j, (o, n) in enumerate(zip(rec.outputs, outs)):
            if n is None:  # the lowering leaves this output out: fine as long as nothing uses it
                self.missing[id(o)] = (name, j)
                continue
            self._bind(o, n)
            if out_dyn:
                self.dyn[n] = out_dyn.get(j, {})

    # -- graph inputs and outputs --------------------------------------------------------------------------------
    def _value_info(self, name, t, axes):
        dims = [axes[a] if a in axes and axes[a] else (f"{name}_dim_{a}" if a in axes else int(s))
                for a, s in enumerate(t.shape)]
        return helper.make_tensor_value_info(name, onnx_dtype(t.dtype), dims)

    def _output(self, t, name):
        value = self._resolve(t)
        axes = dict(self.dyn.get(value, {}))
        axes.update(_axes(self.dynamic_axes[name], name) if name in self.dynamic_axes else {})
        self.g.claim(name)
        producers = [n for n in self.g.nodes if value in n.output]
        if producers and value not in self._renamed:
            for n in self.g.nodes:
                for lst in (n.input, n.output):
                    for k, v in enumerate(lst):
                        if v == value:
                            lst[k] = name
            self._renamed.add(value)
            self.values[id(t)] = name
        else:
            self.g.nodes.append(helper.make_node("Identity", [value], [name], name=self.g.fresh("/Identity")))
        return self._value_info(name, t, axes)


def _cat_grow(t, axes, step):
    """``t`` longer along each of ``axes`` (by ``step``, ``step + 1``, ...: distinct growths tell the axes apart),
    its first slices repeated."""
    for k, a in enumerate(axes):
        n = t.shape[a]
        if n > 0:
            t = ember.cat([t] + [t.narrow(a, 0, 1)] * (step + k), dim=a)
    return t


def _const_proto(t, name):
    return _tensor_proto(_array(t), name)


def _names(given, n, stem) -> list:
    given = list(given or [])
    if len(given) > n:
        raise ValueError(f"ember.onnx.export: {len(given)} {stem} names given for {n} {stem}s")
    default = [stem] if n == 1 else [f"{stem}_{i}" for i in range(n)]
    return given + default[len(given):]
