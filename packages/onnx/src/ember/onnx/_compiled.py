"""``ember.compile(model, example_inputs, backend="onnxruntime")``: the model exported to ONNX and run, for inference,
in one onnxruntime session, where onnxruntime fuses what ember runs op by op (a convolution with its batch norm and
ReLU, say). ``backend="openvino"`` (the extra ``ember-onnx[openvino]``) runs the same graph compiled by OpenVINO
for this machine's CPU instead (:mod:`ember.onnx._runtimes` holds both runtimes).

The compiled model follows the eager one: a call with inputs of another shape or dtype exports the model again for
them (as ``torch.compile`` recompiles; up to :data:`MAX_SIGNATURES` kept), and a call after the model's parameters
or buffers changed in place (an optimizer step, ``load_state_dict``) exports it again with the new values (it
watches their version counters). Outputs equal the eager model's in eval mode up to float rounding: the runtimes
sum in another order and fuse ops, so float32 outputs differ by about 1e-6 relative (the tests hold them to
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
from ._runtimes import OnnxRuntime, OpenVino
from ._trace import flatten_outputs
from .errors import UnsupportedExportError

#: input signatures (shapes and dtypes) whose sessions a compiled model keeps; the oldest goes first
MAX_SIGNATURES = 8


def compile_onnxruntime(model, example_inputs, options=None) -> CompiledModel:
    """``model`` (an ``ember.nn.Module`` or a function of tensors) compiled for onnxruntime, checked on
    ``example_inputs`` (a tuple of tensors): the compiler that ``ember.compile(..., backend="onnxruntime")`` calls.

    ``options``: onnxruntime session options by name: ``intra_op_num_threads``, ``inter_op_num_threads``,
    ``graph_optimization_level`` (``"disable"``, ``"basic"``, ``"extended"`` or ``"all"``, the default),
    ``enable_mem_pattern``, ``enable_cpu_mem_arena``. A model with an op ONNX cannot express raises
    :class:`~ember.onnx.UnsupportedExportError` naming the op, here rather than at the first call.
    """
    return _compile(model, example_inputs, OnnxRuntime(options or {}))


def compile_openvino(model, example_inputs, options=None) -> CompiledModel:
    """``model`` compiled by OpenVINO for this machine's CPU, checked on ``example_inputs``: the compiler that
    ``ember.compile(..., backend="openvino")`` calls (needs the extra ``ember-onnx[openvino]``).

    ``options``: ``inference_num_threads``, ``inference_precision`` (``"f32"``, the default, ``"bf16"`` or
    ``"f16"``) and ``enable_cpu_pinning``. Otherwise as :func:`compile_onnxruntime`.
    """
    return _compile(model, example_inputs, OpenVino(options or {}))


def _compile(model, example_inputs, runtime) -> CompiledModel:
    backend = runtime.backend
    if example_inputs is None:
        raise TypeError(f"ember.compile(backend={backend!r}) needs example_inputs (a tensor or a tuple of them): "
                        "the model is traced with them, as torch.export does")
    if getattr(model, "training", False):
        warnings.warn(f"ember.compile(backend={backend!r}): the model is in training mode; the compiled model runs "
                      "it in eval mode (dropout off, batch norm with running statistics). Call model.eval() first",
                      UserWarning, stacklevel=5)
    compiled = CompiledModel(model, runtime)
    compiled._session_for(as_args(tuple(example_inputs)))
    return compiled


class CompiledModel:
    """A model running in sessions of an inference runtime (onnxruntime or OpenVINO), one per input signature;
    call it as the model.

    Inference only: the outputs carry no autograd graph, and an input that requires grad is an error (train the
    eager model). The model runs as in eval mode (dropout off, batch norm with its running statistics).
    """

    def __init__(self, model, runtime):
        self.model = model
        self._runtime = runtime
        self._sessions: collections.OrderedDict = collections.OrderedDict()
        self._state = _state_tensors(model)

    def __call__(self, *inputs):
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"compiled model: input {i} is a {type(t).__name__}; expected tensors, as in "
                                "example_inputs")
            if t.requires_grad and ember.is_grad_enabled():
                raise RuntimeError(f"compiled model: input {i} requires grad, but a model compiled for "
                                   f"{self._runtime.backend} runs inference only (its outputs carry no autograd "
                                   "graph); train the eager model, or call it under ember.no_grad()")
        run, single = self._session_for(inputs)
        outputs = [ember.from_numpy(o) for o in run([np.ascontiguousarray(t.detach().cpu().numpy())
                                                      for t in inputs])]
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
        backend = self._runtime.backend
        cpu_inputs = tuple(t.detach().cpu() for t in inputs)
        try:
            with warnings.catch_warnings():  # export's warning on training mode: _compile gave its own
                warnings.filterwarnings("ignore", "ember.onnx.export: the model is in training mode", UserWarning)
                proto = build_model(self.model, cpu_inputs)
        except UnsupportedExportError as exc:
            raise UnsupportedExportError(f"ember.compile(backend={backend!r}): the model cannot be exported: "
                                         f"{exc}") from exc
        run = self._runtime.load(proto.SerializeToString())
        with ember.no_grad():
            single = isinstance(_eval_call(self.model, cpu_inputs), Tensor)
        return run, single


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
