"""ember.onnx (distribution ember-onnx): export models to ONNX, check them in onnxruntime, load ONNX models back.

:func:`export` runs the model once under a trace: every op call (``Op.apply``)
is recorded, then written as ONNX nodes by the op's *lowering*, found by the
op's ``name_`` through the ``ember_onnx_lowerings`` plugin hook (ember's own
lowerings are the built-in plugin ``ember.onnx.lowerings``, registered when
this module is imported; ``import ember`` alone never imports onnx).

A lowering is ``lowering(g, node) -> list of output value names``:

- ``node.op`` (the ctx the op ran with), ``node.name``, ``node.attrs`` (keyword
  attributes of ``Op.apply``), ``node.inputs`` (value names; a Python scalar
  becomes a constant of the first tensor input's dtype; ``None`` stays
  ``None``), ``node.input_shapes``/``input_dtypes``, ``node.output_shapes``/
  ``output_dtypes``, ``node.dynamic`` ({(input index, axis)} that follow a
  dynamic axis) and ``node.output_dynamic`` ({(output index, axis)}).
- ``g.op(op_type, *inputs, outputs=1, domain="", **attributes)``,
  ``g.const(value, dtype=None)``, ``g.opset``, ``g.unsupported(node, why)``.

What the trace cannot see is baked in, as with PyTorch's tracer: Python
control flow (including any that reads ``tensor.shape``) runs as it did for the
example ``args``, and tensors created during forward (``ember.zeros(...)``,
``ember.arange(n)``) become constants. With ``dynamic_axes`` the model is
traced a second time with those axes one longer, to learn which other axes
follow them; ops whose recorded sizes follow them are written with ``0``/``-1``
or ``Shape`` instead of fixed sizes.

:func:`load` imports an ONNX model as an ``ember.nn.Module`` whose float
initializers are parameters under their ONNX names, so it can be fine-tuned.

>>> import ember
>>> _ = ember.manual_seed(0)
>>> w = ember.randn(3, 4)
>>> diffs = ember.onnx.verify(lambda x: (x @ w).relu().softmax(-1), ember.randn(2, 3))
>>> max(diffs) < 1e-5
True
"""
from ._compiled import CompiledModel, compile_onnxruntime, compile_openvino
from ._export import build_model, export, registered_lowerings
from ._import import load
from ._verify import verify
from .errors import OnnxImportError, UnsupportedExportError, UnsupportedImportError, VerificationError

__all__ = ["export", "verify", "build_model", "registered_lowerings", "load", "compile_onnxruntime", "compile_openvino",
           "CompiledModel", "UnsupportedExportError", "VerificationError", "OnnxImportError", "UnsupportedImportError"]

registered_lowerings()  # registers ember's own lowerings as a plugin
