"""Tracing: run a model once and record every op call (``Op.apply``) it makes.

While a :class:`Trace` is active, ``Op.apply`` hands each call to :meth:`Trace.run`,
which runs the op as usual and records the op's ctx (the instance that ran),
its positional inputs (tensors, Python scalars or None), its keyword
attributes and its outputs. Python control flow, including any that reads
``tensor.shape``, runs once and is baked into the record (as in PyTorch's
tracer); export traces twice when there are dynamic axes, to learn which
output axes follow them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .._tensor import Tensor
from ..autograd import function as _function
from ..autograd.grad_mode import no_grad
from .errors import UnsupportedExportError


@dataclass
class Record:
    """One op call: the Op ctx, its positional inputs, keyword attributes and output tensors."""

    op: object
    inputs: tuple
    attrs: dict
    outputs: tuple
    versions: tuple = field(default=())  # the outputs' version counters when recorded


class Trace:
    """Records the op calls made while it is active (use as a context manager)."""

    def __init__(self):
        self.records: list[Record] = []
        self._ctxs: list = []

    def __enter__(self):
        if _function.TRACE is not None:
            raise RuntimeError("ember.onnx: an export trace is already running (exports cannot nest)")
        _function.TRACE = self
        return self

    def __exit__(self, *exc):
        _function.TRACE = None
        _function.new_ctx = object.__new__

    def _new_ctx(self, cls):
        ctx = object.__new__(cls)
        self._ctxs.append(ctx)
        return ctx

    def run(self, cls, inputs, attrs):
        """Run ``cls.apply(*inputs, **attrs)`` untraced and record it."""
        _function.TRACE = None
        _function.new_ctx = self._new_ctx
        start = len(self._ctxs)
        try:
            out = cls.apply(*inputs, **attrs)
        finally:
            _function.TRACE = self
            _function.new_ctx = object.__new__
        outputs = out if isinstance(out, tuple) else (out,)
        ctx = self._ctxs[start] if len(self._ctxs) > start else None
        del self._ctxs[start:]
        self.records.append(Record(ctx, inputs, dict(attrs), outputs, tuple(o._vc[0] for o in outputs)))
        return out


def flatten_outputs(out) -> list:
    """The tensors of a model's output: a tensor, or (nested) tuples/lists of tensors."""
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten_outputs(o)]
    raise UnsupportedExportError(f"ember.onnx.export: the model returned a {type(out).__name__}; "
                                 "expected a tensor or a tuple/list of tensors")


def trace(model, args: tuple) -> tuple[Trace, list]:
    """Run ``model(*args)`` without gradients under a trace; the trace and the output tensors."""
    with no_grad(), Trace() as tr:
        out = model(*args)
    return tr, flatten_outputs(out)
