"""Errors of ember.onnx."""
from ..errors import EmberError


class UnsupportedExportError(EmberError):
    """The model uses an op (or a feature of one) that ember cannot write as ONNX; the message names it."""


class VerificationError(EmberError, AssertionError):
    """onnxruntime's outputs of an exported model differ from ember's beyond the tolerance."""
