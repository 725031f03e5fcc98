"""``OnnxModule``: an ONNX graph as an ``ember.nn.Module``; the one module that imports every op handler module."""
from __future__ import annotations

import ember
from ember import nn

from . import _import_nn_ops, _import_ops, _import_rnn, _import_scan  # noqa: F401  (register the op handlers)
from ._import_limits import ImportLimits
from ._import_node import compile_nodes, from_numpy, run_nodes
from ._import_tensors import tensor_array
from ._import_validate import default_opset, validate_model

# input slots that hold statistics or constants, never trained: a float initializer used only there is a buffer
_STATE_SLOTS = {("BatchNormalization", 3), ("BatchNormalization", 4), ("Resize", 1), ("Resize", 2),
                ("Upsample", 1), ("Clip", 1), ("Clip", 2), ("Pad", 2)}


def _uses(graph) -> dict:
    """Value name -> the ``(op type, input index)`` slots that read it."""
    uses = {}
    for node in graph.node:
        for index, name in enumerate(node.input):
            uses.setdefault(name, []).append((node.op_type, index))
    return uses


def _trainable(array, uses) -> bool:
    """Float initializers are parameters, unless every use is a statistics/constant slot."""
    if array.dtype.kind != "f" and array.dtype.name != "bfloat16":
        return False
    return not uses or any(use not in _STATE_SLOTS for use in uses)


class OnnxModule(nn.Module):
    """An imported ONNX graph, run with ember ops: ``forward(*inputs)`` takes the graph inputs in order.

    ``input_names`` and ``output_names`` list the graph's inputs and outputs;
    ``initializer_keys`` maps each ONNX initializer name to its ``state_dict()`` key.
    The graph runs with ONNX's inference semantics in both ``train()`` and
    ``eval()`` mode (Dropout is the identity, BatchNormalization uses its
    running statistics, which are buffers); every float initializer used as
    a weight is a trainable :class:`~ember.nn.Parameter`.

    The model is validated first (``_import_validate``): a malformed one raises
    :class:`~ember.onnx.OnnxImportError` here, not at the first call. ``limits``
    (:class:`ImportLimits`) bound what the graph may allocate and where external data is read from.
    """

    def __init__(self, model, limits: ImportLimits | None = None):
        super().__init__()
        limits = ImportLimits() if limits is None else limits
        validate_model(model, limits)
        graph = model.graph
        opset = default_opset(model)
        initializers = {t.name: tensor_array(t, limits.base_dir, f"initializer '{t.name}'")
                        for t in graph.initializer}
        self.input_names = [v.name for v in graph.input if v.name not in initializers]
        self.output_names = [v.name for v in graph.output]
        self.initializer_keys = {}
        self._limits = limits
        self._constants, self._nodes = {}, []  # set before the initializers, which must not take these names
        uses = _uses(graph)
        for name, array in initializers.items():
            value = from_numpy(array)
            if _trainable(array, uses.get(name)):
                value = nn.Parameter(value)
            self.initializer_keys[name] = self._place(name, value)
        self._constants, self._nodes = compile_nodes(graph, opset, limits)

    def _place(self, name: str, value) -> str:
        """Register ``value`` under the dotted path ``name`` (child modules for the prefixes) or, where that
        is not a valid path, under ``name`` with ``.`` replaced by ``_``; returns the ``state_dict`` key."""
        parts = name.split(".")
        owner = self
        for part in parts[:-1]:
            child = owner._modules.get(part) if part else None
            if child is None and part and not hasattr(owner, part):
                child = nn.Module()
                owner.add_module(part, child)
            if child is None:
                return self._place_flat(name, value)
            owner = child
        if not parts[-1] or hasattr(owner, parts[-1]):
            return self._place_flat(name, value)
        self._register(owner, parts[-1], value)
        return name

    def _place_flat(self, name: str, value) -> str:
        base = name.replace(".", "_") or "_"
        key, count = base, 0
        while hasattr(self, key):
            count += 1
            key = f"{base}_{count}"
        self._register(self, key, value)
        return key

    @staticmethod
    def _register(owner, name, value):
        if isinstance(value, nn.Parameter):
            owner.register_parameter(name, value)
        else:
            owner.register_buffer(name, value)

    def _initializer_values(self):
        found = dict(self.named_parameters())
        found.update(self.named_buffers())
        return {name: found[key] for name, key in self.initializer_keys.items()}

    def extra_repr(self) -> str:
        return f"inputs={self.input_names}, outputs={self.output_names}, nodes={len(self._nodes)}"

    def forward(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"the ONNX graph takes {len(self.input_names)} input(s) {self.input_names}, "
                            f"got {len(inputs)}")
        inputs = [x if isinstance(x, ember.Tensor) else ember.as_tensor(x) for x in inputs]
        device = inputs[0].device if inputs else None
        env = self._initializer_values()
        env.update({name: from_numpy(array, device) for name, array in self._constants.items()})
        env.update(zip(self.input_names, inputs))
        with self._limits.call():  # the call's Scans share one budget of body runs
            run_nodes(self._nodes, env)
        outputs = tuple(env[name] for name in self.output_names)
        return outputs[0] if len(outputs) == 1 else outputs
