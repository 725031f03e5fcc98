"""ember-onnx's compiler plugin (entry point ``onnxruntime`` in the ``ember`` group): gives ``ember.compile`` its
``"onnxruntime"`` backend, and its ``"openvino"`` backend where OpenVINO is installed (``ember-onnx[openvino]``).

This module is kept apart from ``ember.onnx`` so that loading the plugin, which every ember program does at its
first op, does not import onnx (a second or more) or OpenVINO; ``ember.onnx`` is imported when a model is
compiled.

>>> import ember
>>> "onnxruntime" in ember.list_compilers()
True
"""
import importlib.util

import ember


def compile_with_onnxruntime(model, example_inputs, options):
    """The ``"onnxruntime"`` compiler: :func:`ember.onnx.compile_onnxruntime`."""
    return ember.onnx.compile_onnxruntime(model, example_inputs, options)


def compile_with_openvino(model, example_inputs, options):
    """The ``"openvino"`` compiler: :func:`ember.onnx.compile_openvino`."""
    return ember.onnx.compile_openvino(model, example_inputs, options)


@ember.hookimpl
def ember_compilers():
    compilers = {"onnxruntime": compile_with_onnxruntime}
    if importlib.util.find_spec("openvino") is not None:
        compilers["openvino"] = compile_with_openvino
    return compilers
