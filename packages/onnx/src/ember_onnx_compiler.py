"""ember-onnx's compiler plugin (entry point ``onnxruntime`` in the ``ember`` group): gives ``ember.compile`` its
``"onnxruntime"`` backend.

This module is kept apart from ``ember.onnx`` so that loading the plugin, which every ember program does at its
first op, does not import onnx (a second or more); ``ember.onnx`` is imported when a model is compiled.

>>> import ember
>>> "onnxruntime" in ember.list_compilers()
True
"""
import ember


def compile_with_onnxruntime(model, example_inputs, options):
    """The ``"onnxruntime"`` compiler: :func:`ember.onnx.compile_onnxruntime`."""
    return ember.onnx.compile_onnxruntime(model, example_inputs, options)


@ember.hookimpl
def ember_compilers():
    return {"onnxruntime": compile_with_onnxruntime}
