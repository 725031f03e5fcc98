"""``ember.onnx.load``: import an ONNX model as an ember module whose parameters can be fine-tuned.

The model's graph is interpreted node by node with ember ops, so autograd
runs through it. Float initializers become :class:`ember.nn.Parameter` s, the
rest (integer initializers, batch-norm running statistics) buffers. Shapes
are computed on the tensors a call gets, so a dynamic batch axis just works.
The module class is an ``ember.nn.Module`` (ember-onnx depends on ember-nn).
"""
from __future__ import annotations

import os

from google.protobuf import json_format, text_format
from google.protobuf.message import Error as ProtobufError

import onnx

from ._import_limits import DEFAULT_MAX_ELEMENTS, DEFAULT_MAX_SCAN_ITERATIONS, ImportLimits
from ._import_module import OnnxModule
from .errors import OnnxImportError, UnsupportedImportError

__all__ = ["load", "UnsupportedImportError", "OnnxImportError"]


def _parsed(source: str, read):
    """``read()``'s ModelProto; what is no ONNX model (binary, text or JSON) is an OnnxImportError naming ``source``."""
    try:
        return read()
    except (ProtobufError, text_format.ParseError, json_format.ParseError) as error:
        raise OnnxImportError(f"{source} is not an ONNX model (protobuf: {error})") from None


def _read_model(f):
    """The ``ModelProto`` and the folder its external data lies in by default (``None`` when it has none).
    External data is left unread here: ember reads it, from inside ``base_dir`` only."""
    if isinstance(f, onnx.ModelProto):
        return f, None
    if isinstance(f, (bytes, bytearray, memoryview)):
        return _parsed("the bytes given", lambda: onnx.load_from_string(bytes(f))), None
    if isinstance(f, (str, os.PathLike)):
        return (_parsed(repr(os.fspath(f)), lambda: onnx.load(f, load_external_data=False)),
                os.path.dirname(os.path.abspath(f)))
    if hasattr(f, "read"):
        name = getattr(f, "name", None)
        named = isinstance(name, str) and os.path.isfile(name)
        model = _parsed(f"the file {name!r}" if named else "the file object given",
                        lambda: onnx.load(f, load_external_data=False))
        return model, os.path.dirname(os.path.abspath(name)) if named else None
    raise TypeError(f"ember.onnx.load expects a path, bytes, a file object or an onnx.ModelProto, "
                    f"got {type(f).__name__}")


def load(f, *, base_dir=None, max_elements: int = DEFAULT_MAX_ELEMENTS,
         max_scan_iterations: int = DEFAULT_MAX_SCAN_ITERATIONS):
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

    A malformed model raises :class:`OnnxImportError` here, naming the node, op
    or value and what is wrong (:class:`UnsupportedImportError`, a subclass, for
    what is valid ONNX but not supported), never at the first call.

    ``base_dir``: the folder that tensors stored as external data are read
    from; it defaults to the model file's folder when ``f`` is a path (or a
    file with a name) and must be given for ``bytes`` or a ``ModelProto``
    with external data. A location that resolves outside it (absolute,
    ``..``, a symlink leading out) is refused.

    ``max_elements`` (default ``2**31``) bounds the elements of each tensor
    the graph creates or declares (initializers, ``ConstantOfShape``,
    ``Expand``, ``Tile``, ``Pad``, ``Resize``, padded convolution inputs...):
    checked at load where the size is constant, otherwise when called, before
    allocating. ``max_scan_iterations`` (default ``10**6``) bounds the ``Scan``
    body runs of one call, all Scans together (nested ones multiply): at load
    where the trip counts are constant, otherwise before a Scan's first step.
    Past either limit, :class:`OnnxImportError`.

    >>> big = helper.make_graph(
    ...     [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill")], "g", [],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    ...     [numpy_helper.from_array(np.array([1000, 1000], np.int64), "shape")])
    >>> load(helper.make_model(big), max_elements=10**5)
    Traceback (most recent call last):
    ember.onnx.errors.OnnxImportError: ConstantOfShape node 'fill': its output would have shape [1000, 1000], ...
    """
    model, folder = _read_model(f)
    limits = ImportLimits(folder if base_dir is None else os.fspath(base_dir), max_elements, max_scan_iterations)
    return OnnxModule(model, limits)
