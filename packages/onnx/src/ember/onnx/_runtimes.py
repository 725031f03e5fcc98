"""The inference runtimes a :class:`~ember.onnx.CompiledModel` runs its exported graph in: onnxruntime
(``backend="onnxruntime"``) and OpenVINO (``backend="openvino"``, the extra ``ember-onnx[openvino]``).

A runtime checks its ``options`` when it is made (unknown names and wrong types are errors that name the
option) and :meth:`load` turns a serialized ONNX model into a function from the input arrays, in the graph's
input order, to the output arrays, in its output order, freshly allocated at each call.

>>> runtime = OnnxRuntime({"intra_op_num_threads": 1})
>>> runtime.backend
'onnxruntime'
"""
from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

Run = Callable[[list], list]


def _checked(backend: str, options: dict, known: dict, choices: dict) -> dict:
    """``options`` checked against ``known`` (name -> type); a str option's value must be a key of
    ``choices[name]`` and becomes its value."""
    if not isinstance(options, dict):
        raise TypeError(f"ember.compile: options must be a dict of {backend} options, got {type(options).__name__}")
    checked = {}
    for name, value in options.items():
        kind = known.get(name)
        if kind is None:
            raise ValueError(f"ember.compile(backend={backend!r}): unknown option {name!r}; known: {sorted(known)}")
        if kind is str:
            if value not in choices[name]:
                raise ValueError(f"ember.compile: {name} must be one of {sorted(choices[name])}, got {value!r}")
            value = choices[name][value]
        elif isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
            raise TypeError(f"ember.compile: option {name} must be {kind.__name__}, got {value!r}")
        checked[name] = value
    return checked


class OnnxRuntime:
    """onnxruntime's CPU execution provider, one ``InferenceSession`` per loaded model.

    Options (``onnxruntime.SessionOptions`` attributes): ``intra_op_num_threads``, ``inter_op_num_threads``,
    ``graph_optimization_level`` (``"disable"``, ``"basic"``, ``"extended"`` or ``"all"``, the default),
    ``enable_mem_pattern``, ``enable_cpu_mem_arena``.
    """

    backend = "onnxruntime"
    OPTIONS = {"intra_op_num_threads": int, "inter_op_num_threads": int, "graph_optimization_level": str,
               "enable_mem_pattern": bool, "enable_cpu_mem_arena": bool}

    def __init__(self, options: dict):
        import onnxruntime

        levels = {"disable": onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL,
                  "basic": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                  "extended": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                  "all": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL}
        self.options = _checked(self.backend, options, self.OPTIONS, {"graph_optimization_level": levels})

    def load(self, model: bytes) -> Run:
        """``model`` in an ``InferenceSession`` (thread-safe, as ``session.run`` is)."""
        import onnxruntime

        options = onnxruntime.SessionOptions()
        for name, value in self.options.items():
            setattr(options, name, value)
        session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return lambda arrays: session.run(None, dict(zip(names, arrays)))


class OpenVino:
    """OpenVINO's CPU plugin: the ONNX model read by its ONNX frontend and compiled for this machine's CPU, one
    infer request per loaded model, calls serialized by a lock.

    Options: ``inference_num_threads`` (default: every core), ``inference_precision``: ``"f32"`` (the default
    here, so that outputs follow the eager model's float32; OpenVINO's own default on some CPUs is bfloat16),
    ``"bf16"`` or ``"f16"``, and ``enable_cpu_pinning``.
    """

    backend = "openvino"
    OPTIONS = {"inference_num_threads": int, "inference_precision": str, "enable_cpu_pinning": bool}
    #: OpenVINO's property for each option
    PROPERTIES = {"inference_num_threads": "INFERENCE_NUM_THREADS", "inference_precision": "INFERENCE_PRECISION_HINT",
                  "enable_cpu_pinning": "ENABLE_CPU_PINNING"}

    def __init__(self, options: dict):
        import openvino

        precisions = {"f32": openvino.Type.f32, "bf16": openvino.Type.bf16, "f16": openvino.Type.f16}
        checked = _checked(self.backend, options, self.OPTIONS, {"inference_precision": precisions})
        self.options = {"INFERENCE_PRECISION_HINT": openvino.Type.f32, "PERFORMANCE_HINT": "LATENCY",
                        **{self.PROPERTIES[name]: value for name, value in checked.items()}}

    def load(self, model: bytes) -> Run:
        """``model`` compiled for the CPU device."""
        import openvino

        core = openvino.Core()
        compiled = core.compile_model(core.read_model(model), "CPU", self.options)
        request = compiled.create_infer_request()
        lock = threading.Lock()

        def run(arrays: list) -> list:
            with lock:  # an infer request runs one inference at a time
                results = request.infer(dict(enumerate(arrays)), share_inputs=True, share_outputs=False)
                return [np.asarray(a) for a in results.to_tuple()]
        return run

