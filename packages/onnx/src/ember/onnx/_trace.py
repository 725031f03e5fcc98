"""Tracing: run a model once and record every op call (``Op.apply``) it makes.

While a :class:`Trace` is active (in the thread, or asyncio task, that entered it: the active trace is the
context variable ``ember.autograd.function.TRACE``), ``Op.apply`` hands each call to :meth:`Trace.run`,
which runs the op as usual and records the op's ctx (the instance that ran),
its positional inputs (tensors, Python scalars or None), its keyword
attributes and its outputs. Python control flow, including any that reads
``tensor.shape``, runs once and is baked into the record (as in PyTorch's
tracer); export traces twice when there are dynamic axes, to learn which
output axes follow them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ember import Tensor, no_grad
from ember import _sibling_api as core

from .errors import UnsupportedExportError


@dataclass
class Record:
    """One op call: the Op ctx, its positional inputs, keyword attributes and output tensors.

    An input tensor that an earlier in-place op changed is recorded as the op
    output whose value was copied into it (so the graph reads the new value).
    """

    op: object
    inputs: tuple
    attrs: dict
    outputs: tuple


class Trace:
    """Records the op calls made while it is active (use as a context manager around the model call)."""

    def __init__(self, args=()):
        self.records: list[Record] = []
        #: true while the trace runs one op call (ops that call makes are not recorded)
        self.running = False
        self._ctxs: list = []
        self._seen: dict = {}    # id(tensor) -> (version, tensor, number of records when seen)
        self._alias: dict = {}   # id(tensor changed in place) -> the op output holding its value
        self._token = None
        for a in args:
            self._see(a)

    def __enter__(self):
        if core.TRACE.get() is not None:
            raise RuntimeError("ember.onnx: an export trace is already running (exports cannot nest)")
        # only in this thread's context; it also turns off in-place arithmetic's fast path, which no op records
        self._token = core.start_trace(self)
        return self

    def __exit__(self, *exc):
        core.end_trace(self._token)

    def new_ctx(self, cls):
        """The ctx of an op call made while the trace runs one (``Op.apply`` asks); the first is the call's own."""
        ctx = object.__new__(cls)
        self._ctxs.append(ctx)
        return ctx

    def _see(self, t):
        if isinstance(t, Tensor):
            self._seen[id(t)] = (core.version(t), t, len(self.records))

    def current(self, t):
        """The tensor whose recorded value ``t`` holds now (``t`` itself unless it was changed in place)."""
        if not isinstance(t, Tensor):
            return t
        seen = self._seen.get(id(t))
        if seen is None or seen[0] == core.version(t):
            return self._alias.get(id(t), t)
        data = t.detach().cpu().numpy()
        for rec in reversed(self.records[seen[2]:]):
            for o in rec.outputs:
                if o is not t and o.shape == t.shape and o.dtype == t.dtype and \
                        np.array_equal(o.detach().cpu().numpy(), data, equal_nan=True):
                    self._alias[id(t)] = o
                    self._seen[id(t)] = (core.version(t), t, len(self.records))
                    return o
        raise UnsupportedExportError("ember.onnx.export: a tensor was modified in place in a way the trace cannot "
                                     "follow (e.g. assignment into a slice); write the model without it")

    def run(self, cls, inputs, attrs):
        """Run ``cls.apply(*inputs, **attrs)`` untraced and record it."""
        recorded = tuple(self.current(x) for x in inputs)
        for x in inputs:
            if isinstance(x, Tensor) and id(x) not in self._seen:
                self._see(x)
        self.running = True
        start = len(self._ctxs)
        try:
            out = cls.apply(*inputs, **attrs)
        finally:
            self.running = False
        outputs = out if isinstance(out, tuple) else (out,)
        ctx = self._ctxs[start] if len(self._ctxs) > start else None
        del self._ctxs[start:]
        self.records.append(Record(ctx, recorded, dict(attrs), outputs))
        for o in outputs:
            self._see(o)
            self._alias.pop(id(o), None)
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
    with no_grad(), Trace(args) as tr:
        out = model(*args)
        outputs = [tr.current(t) for t in flatten_outputs(out)]
    return tr, outputs
