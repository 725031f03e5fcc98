"""``ember.compile(model, example_inputs, backend="onnxruntime")``: the model exported to ONNX and run, for inference,
in one onnxruntime session, where onnxruntime fuses what ember runs op by op (a convolution with its batch norm and
ReLU, say).

The compiled model follows the eager one: a call with inputs of another shape or dtype exports the model again for
them (as ``torch.compile`` recompiles; up to :data:`MAX_SIGNATURES` kept), and a call after the model's parameters
or buffers changed in place (an optimizer step, ``load_state_dict``) exports it again with the new values (it
watches their version counters). Outputs equal the eager model's in eval mode up to float rounding: onnxruntime
sums in another order and fuses ops, so float32 outputs differ by about 1e-6 relative (the tests hold them to
``rtol=1e-4, atol=1e-5``).

>>> import ember
>>> net = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2)).eval()
>>> fast = ember.compile(net, ember.randn(3, 4))
>>> x = ember.randn(3, 4)
>>> ember.allclose(fast(x), net(x).detach(), rtol=1e-4, atol=1e-5)
True
"""
from __future__ import annotations

import collections
import warnings

import numpy as np

import ember
from ember import Tensor
from ember import _sibling_api as core

from ._export import as_args, build_model
from ._trace import flatten_outputs
from .errors import UnsupportedExportError

#: input signatures (shapes and dtypes) whose sessions a compiled model keeps; the oldest goes first
MAX_SIGNATURES = 8
#: session options a caller may set through ``options``, with their types
_SESSION_OPTIONS = {"intra_op_num_threads": int, "inter_op_num_threads": int, "graph_optimization_level": str,
                    "enable_mem_pattern": bool, "enable_cpu_mem_arena": bool}


def compile_onnxruntime(model, example_inputs, options=None) -> CompiledModel:
    """``model`` (an ``ember.nn.Module`` or a function of tensors) compiled for onnxruntime, checked on
    ``example_inputs`` (a tuple of tensors): the compiler that ``ember.compile(..., backend="onnxruntime")`` calls.

    ``options``: onnxruntime session options by name: ``intra_op_num_threads``, ``inter_op_num_threads``,
    ``graph_optimization_level`` (``"disable"``, ``"basic"``, ``"extended"`` or ``"all"``, the default),
    ``enable_mem_pattern``, ``enable_cpu_mem_arena``. A model with an op ONNX cannot express raises
    :class:`~ember.onnx.UnsupportedExportError` naming the op, here rather than at the first call.
    """
    if example_inputs is None:
        raise TypeError("ember.compile(backend='onnxruntime') needs example_inputs (a tensor or a tuple of them): "
                        "the model is traced with them, as torch.export does")
    if getattr(model, "training", False):
        warnings.warn("ember.compile(backend='onnxruntime'): the model is in training mode; the compiled model runs "
                      "it in eval mode (dropout off, batch norm with running statistics). Call model.eval() first",
                      UserWarning, stacklevel=3)
    compiled = CompiledModel(model, _session_options(options or {}))
    compiled._session_for(as_args(tuple(example_inputs)))
    return compiled


class CompiledModel:
    """A model running in onnxruntime sessions, one per input signature; call it as the model.

    Inference only: the outputs carry no autograd graph, and an input that requires grad is an error (train the
    eager model). The model runs as in eval mode (dropout off, batch norm with its running statistics).
    """

    def __init__(self, model, session_options: dict):
        self.model = model
        self._options = session_options
        self._sessions: collections.OrderedDict = collections.OrderedDict()
        self._state = _state_tensors(model)

    def __call__(self, *inputs):
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"compiled model: input {i} is a {type(t).__name__}; expected tensors, as in "
                                "example_inputs")
            if t.requires_grad and ember.is_grad_enabled():
                raise RuntimeError(f"compiled model: input {i} requires grad, but a model compiled for onnxruntime "
                                   "runs inference only (its outputs carry no autograd graph); train the eager "
                                   "model, or call it under ember.no_grad()")
        session, names, single = self._session_for(inputs)
        feed = {name: np.ascontiguousarray(t.detach().cpu().numpy()) for name, t in zip(names, inputs)}
        outputs = [ember.from_numpy(o) for o in session.run(None, feed)]
        device = inputs[0].device if inputs else None
        if device is not None and device.type != "cpu":
            outputs = [o.to(device) for o in outputs]
        return outputs[0] if single else tuple(outputs)

    def _session_for(self, inputs: tuple):
        versions = tuple(core.version(t) for t in self._state)
        signature = tuple((tuple(t.shape), t.dtype) for t in inputs)
        hit = self._sessions.get(signature)
        if hit is not None and hit[0] == versions:
            self._sessions.move_to_end(signature)
            return hit[1]
        built = self._build(inputs)
        self._sessions[signature] = (versions, built)
        self._sessions.move_to_end(signature)
        while len(self._sessions) > MAX_SIGNATURES:
            self._sessions.popitem(last=False)
        return built

    def _build(self, inputs: tuple):
        import onnxruntime

        cpu_inputs = tuple(t.detach().cpu() for t in inputs)
        try:
            with warnings.catch_warnings():  # export's warning on training mode: compile_onnxruntime gave its own
                warnings.filterwarnings("ignore", "ember.onnx.export: the model is in training mode", UserWarning)
                proto = build_model(self.model, cpu_inputs)
        except UnsupportedExportError as exc:
            raise UnsupportedExportError(f"ember.compile(backend='onnxruntime'): the model cannot be exported: "
                                         f"{exc}") from exc
        options = onnxruntime.SessionOptions()
        for name, value in self._options.items():
            setattr(options, name, value)
        session = onnxruntime.InferenceSession(proto.SerializeToString(), options,
                                               providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        with ember.no_grad():
            single = isinstance(_eval_call(self.model, cpu_inputs), Tensor)
        return session, names, single


def _eval_call(model, inputs):
    """``model(*inputs)`` in eval mode (restored after), to learn the shape of its output."""
    modules = list(model.modules()) if hasattr(model, "modules") and hasattr(model, "train") else []
    modes = [(m, m.training) for m in modules]
    try:
        for m in modules:
            m.training = False
        out = model(*inputs)
        flatten_outputs(out)  # the same refusal export gives for outputs that are not tensors
        return out
    finally:
        for m, mode in modes:
            m.training = mode


def _state_tensors(model) -> list:
    """The parameters and buffers whose in-place changes make the compiled sessions stale."""
    if hasattr(model, "parameters") and hasattr(model, "buffers"):
        return [*model.parameters(), *model.buffers()]
    return []


def _session_options(options: dict) -> dict:
    import onnxruntime

    levels = {"disable": onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL,
              "basic": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC,
              "extended": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
              "all": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL}
    if not isinstance(options, dict):
        raise TypeError(f"ember.compile: options must be a dict of onnxruntime session options, got "
                        f"{type(options).__name__}")
    checked = {}
    for name, value in options.items():
        kind = _SESSION_OPTIONS.get(name)
        if kind is None:
            raise ValueError(f"ember.compile(backend='onnxruntime'): unknown option {name!r}; known: "
                             f"{sorted(_SESSION_OPTIONS)}")
        if kind is str:
            if value not in levels:
                raise ValueError(f"ember.compile: graph_optimization_level must be one of {sorted(levels)}, got "
                                 f"{value!r}")
            value = levels[value]
        elif isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
            raise TypeError(f"ember.compile: option {name} must be {kind.__name__}, got {value!r}")
        checked[name] = value
    return checked
