"""Errors of ember.onnx."""
from ..errors import EmberError


class UnsupportedExportError(EmberError):
    """The model uses an op (or a feature of one) that ember cannot write as ONNX; the message names it."""


class VerificationError(EmberError, AssertionError):
    """onnxruntime's outputs of an exported model differ from ember's beyond the tolerance."""


class OnnxImportError(EmberError, ValueError):
    """An ONNX model could not be imported (malformed graph, unsafe external data, sizes past the limits), or an
    imported one was called with inputs that make it exceed its limits."""


class UnsupportedImportError(OnnxImportError, NotImplementedError):
    """An ONNX model uses an op, an attribute value or an op domain that ``ember.onnx.load`` does not support."""
