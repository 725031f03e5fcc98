"""``ember.onnx.load``: import an ONNX model as an ember module whose parameters can be fine-tuned.

The model's graph is interpreted node by node with ember ops, so autograd
runs through it. Float initializers become :class:`ember.nn.Parameter` s, the
rest (integer initializers, batch-norm running statistics) buffers. Shapes
are computed on the tensors a call gets, so a dynamic batch axis just works.
The module class is an ``ember.nn.Module`` (ember-onnx depends on ember-nn).
"""
from __future__ import annotations

import os

import onnx

from ._import_module import OnnxModule
from .errors import OnnxImportError, UnsupportedImportError

__all__ = ["load", "UnsupportedImportError", "OnnxImportError"]


def _read_model(f):
    if isinstance(f, onnx.ModelProto):
        return f
    if isinstance(f, (bytes, bytearray, memoryview)):
        return onnx.load_from_string(bytes(f))
    if isinstance(f, (str, os.PathLike)) or hasattr(f, "read"):
        return onnx.load(f)
    raise TypeError(f"ember.onnx.load expects a path, bytes, a file object or an onnx.ModelProto, "
                    f"got {type(f).__name__}")


def load(f):
    """Import the ONNX model ``f`` (a path, ``bytes``, a binary file or an ``onnx.ModelProto``) as an ember module.

    Returns an :class:`OnnxModule` (an ``ember.nn.Module``): call it with the
    graph's inputs in order; it returns the only output, or a tuple of them.
    ``state_dict()`` keys are the ONNX initializer names (a name that is not
    a valid attribute path gets ``.`` replaced by ``_``; ``module.initializer_keys``
    maps each initializer to its key).

    >>> import numpy as np, onnx, ember
    >>> from onnx import helper, numpy_helper, TensorProto
    >>> w = numpy_helper.from_array(np.ones((2, 3), np.float32), "fc.weight")
    >>> graph = helper.make_graph(
    ...     [helper.make_node("Gemm", ["x", "fc.weight"], ["y"], transB=1)], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], [w])
    >>> model = load(helper.make_model(graph))
    >>> list(model.state_dict())
    ['fc.weight']
    >>> model(ember.ones(4, 3)).shape
    ember.Size([4, 2])
    """
    return OnnxModule(_read_model(f))
