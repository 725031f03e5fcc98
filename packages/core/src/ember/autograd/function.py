"""Ops and user-defined autograd functions.

An :class:`Op` is one differentiable operation, defined in one place: its
forward on backend arrays (``xp`` is the array-API namespace), its backward
(the vector-Jacobian product) written with ember tensor ops so that
``create_graph=True`` gives correct higher derivatives, optionally the same
backward on the arrays (``backward_arrays``, for the usual first-order
``backward()``, which needs no graph of its own), and its name for kernels and
ONNX. Calling ``Op.apply`` runs the forward and, when gradients
are needed, records the op instance itself as the output's ``grad_fn``.

Every op class names itself with the class attribute ``name_``, unique among
all ops (an op defined outside ember should start it with its package's name,
as ``"mypkg.cube"``): backend kernels (the ``ember_op_kernels`` hook) and ONNX
lowerings (``ember_onnx_lowerings``) are keyed by it, so renaming a class
changes nothing. A class that only shares code with the ops derived from it is
declared ``class Base(Op, abstract=True)`` and has no name.

>>> import ember
>>> from ember.autograd.function import Op
>>> class Cube(Op):
...     name_ = "example.cube"  # unique among all ops: kernels and ONNX lowerings find the op by it
...     saves_inputs = True
...     @staticmethod
...     def forward(ctx, xp, a):
...         return a * a * a
...     @staticmethod
...     def backward(ctx, g):
...         a, = ctx.saved_tensors
...         return (g * 3 * a * a,)
>>> Cube.apply(ember.tensor([2.0])).item()
8.0
"""
from __future__ import annotations

import weakref
from contextvars import ContextVar
from typing import Any

from .. import _alloc, _plugins
from .._tensor import Tensor
from ..backends.backend import on_device
from ..errors import DeviceMismatchError, UnsupportedOpError
from . import anomaly
from .grad_mode import DETOURS, GRAD_OFF, STATE, detour, no_grad
from .node import FREED_MSG, Node, _new_object, _seq, _version_error

__all__ = ["Op", "Function", "FunctionCtx"]

#: every op class by its name (``Op.name_``), the key of its backend kernels and ONNX lowering
OPS: dict[str, Any] = {}

#: the ONNX export trace running in this thread (or asyncio task), set by ``ember.onnx``; default None. While
#: one is set, ``Op.apply`` hands each call to its ``run``, which runs the op with ``running`` true, making each
#: ctx through its ``new_ctx``. A context variable, so that an export records only the ops of its own thread.
TRACE: ContextVar = ContextVar("ember_onnx_trace", default=None)
_active_trace = TRACE.get


def start_trace(trace):
    """Make ``trace`` this thread's export trace (``Op.apply`` hands it each call); the token for :func:`end_trace`."""
    token = TRACE.set(trace)
    detour(1)
    return token


def end_trace(token) -> None:
    """End the export trace that :func:`start_trace` started."""
    TRACE.reset(token)
    detour(-1)


_make, _make_view = Tensor._make, Tensor._make_view


@_plugins.on_registry_change
def clear_kernel_cache() -> None:
    for cls in OPS.values():  # abstract bases are never applied: they cache no kernel
        cls._kernels, cls._direct = {}, {}


_NO_EDGE = (None, 0)


def _edge(t):
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (t, 0)  # a leaf: the graph holds it, and makes its AccumulateGrad node only if asked (Node._next)
    return _NO_EDGE


_NEED_1, _NEED_1_0, _NEED_1_1 = (True,), (True, False), (True, True)


def _edges(inputs):
    """The edges to the inputs' nodes, which inputs need a gradient, and the inputs' versions."""
    edges = []
    needs = []
    versions = []
    for t in inputs:
        tensor = isinstance(t, Tensor)
        versions.append(t._vc[0] if tensor else None)
        edges.append(_edge(t) if tensor else _NO_EDGE)
        needs.append(tensor and t._requires_grad)
    return tuple(edges), tuple(needs), tuple(versions)


def _gather(name, inputs):
    """The device, whether any input requires grad, the arrays (or scalars) of an op's inputs, and whether any
    is float16/bfloat16."""
    device = None
    requires = reduced = False
    arrays = []
    for t in inputs:
        if isinstance(t, Tensor):
            d = t._device
            if device is None:
                device = d
            elif d is not device and d.key != device.key:
                raise device_mismatch(name, device, d)
            arrays.append(t._data)
            if t._base is not None and t._vc[0] != t._vv:
                _refresh_view(t)
            if t._requires_grad:
                requires = True
            if t._dtype.is_reduced_float:
                reduced = True
        else:
            arrays.append(t)
    if device is None:
        raise TypeError(f"{name}: expected at least one tensor among the inputs, got only "
                        f"{', '.join(type(t).__name__ for t in inputs) or 'nothing'}")
    return device, requires, arrays, reduced


def _refresh_view(t):
    """Give a view whose base changed in place since its history was set the base's new history."""
    if not STATE.enabled:
        return  # refreshed when it is next used with grad mode on
    t._vv = t._vc[0]
    base = t._base
    if t._view_of is not None and base._requires_grad:
        fresh = replay_view(base, t._view_of)
        t.grad_fn, t._requires_grad, t._output_nr = fresh.grad_fn, True, 0


def _record(ctx, inputs, versions, shapes) -> None:
    """Number the node ``ctx`` and keep what its backward asks for: the inputs and their versions, their shapes."""
    ctx.seq = next(_seq)
    if ctx.saves_inputs:
        ctx._saved = inputs
        ctx._saved_versions = versions
    if ctx.wants_shapes:
        ctx.in_shapes = shapes


def _attach(ctx, res, device):
    """Make the recorded ``ctx`` the ``grad_fn`` of its one output ``res`` (keeping the output if it asks)."""
    if anomaly.ENABLED:
        anomaly.record_forward(ctx)
    res._requires_grad = True
    res.grad_fn = ctx
    if ctx.saves_output:
        # the array, not the tensor: no reference cycle through grad_fn
        ctx._out = ((res._data, res._dtype, res._vc, 0),)
        ctx._out_device = device
        ctx._hold_memory((res,))
    return res


def replay_view(t, view_of):
    """Apply the view recorded in ``view_of`` (a tensor's ``_view_of``) to ``t``, which has the base's shape."""
    if len(view_of) == 3:
        t = replay_view(t, view_of[2])
    return view_of[0].apply(t, **view_of[1])


def device_mismatch(op_name, a, b) -> DeviceMismatchError:
    return DeviceMismatchError(
        f"{op_name}: expected all tensors to be on the same device, but found at least two devices, "
        f"{a} and {b}; move one with .to(device) first")


def broadcast_mismatch(arrays) -> RuntimeError | None:
    """PyTorch's error for array shapes that do not broadcast together (None if they do)."""
    shapes = [a.shape for a in arrays if hasattr(a, "shape")]
    if len(shapes) < 2:
        return None
    a, b = shapes[0], shapes[1]
    for i in range(1, min(len(a), len(b)) + 1):
        if a[-i] != b[-i] and a[-i] != 1 and b[-i] != 1:
            return RuntimeError(f"The size of tensor a ({a[-i]}) must match the size of tensor b ({b[-i]}) at "
                                f"non-singleton dimension {max(len(a), len(b)) - i}")
    return None


class Op(Node):
    """A built-in differentiable op (subclass it; see the module docstring)."""

    #: the op's name, unique among ops, by which backend kernels and ONNX lowerings find it (required)
    name_: str = ""
    #: keep the input tensors for backward (read through ``ctx.saved_tensors``)
    saves_inputs = False
    #: keep the output for backward (read through ``ctx.saved_output``)
    saves_output = False
    #: forward returns a tuple of arrays
    multi_output = False
    #: forward sets ``ctx.out_device`` (the output lives elsewhere than the inputs)
    moves_device = False
    #: the output is a view of the first input: it shares its storage and version counter
    is_view = False
    #: backward reads ``ctx.in_shapes`` (the inputs' shapes; ``None`` for Python scalars)
    wants_shapes = False
    #: on float16/bfloat16 inputs, run forward in float32 and round its floating results back (the backend's
    #: ``run_reduced_float``); always False for views and device moves; an op exact in any dtype may set False
    upcasts_reduced_floats = True
    #: optional, for a one-output op: ``backward_arrays(ctx, xp, g)``, the backward on the backend's arrays
    #: (``g`` an array; an array or a tuple of arrays or ``None``, one per input, each a new array). When no graph
    #: of the backward is being built (``create_graph`` false) and ``g`` is float32 or float64, the engine calls
    #: it instead of ``backward`` and skips the bookkeeping a tensor op does for a double backward.
    backward_arrays: Any = None
    #: optional: the name of the backend function (``xp.<name>(a, b)``) that forward is when called without
    #: attributes, setting nothing on ``ctx``; :meth:`apply2` then calls it directly (unless a plugin's kernel
    #: replaces the op)
    array_function: str | None = None
    _kernels: dict = {}
    _direct: dict = {}
    #: set per class: the output is one plain result (not a view, not on another device, not several)
    _plain: bool
    #: set per class: one output (a view or not) on the input's device
    _lean: bool
    #: set per call on ops that keep their output for backward: the device of the kept arrays
    _out_device: object

    def __init_subclass__(cls, abstract: bool = False, **kw):
        super().__init_subclass__(**kw)
        if "backward_name" not in cls.__dict__:
            cls.backward_name = f"{cls.__name__}Backward0"
        cls._kernels, cls._direct = {}, {}
        if "forward" in cls.__dict__ and "array_function" not in cls.__dict__:
            cls.array_function = None  # a forward of its own: not the base's backend function
        cls._plain = not (cls.moves_device or cls.is_view or cls.multi_output)
        cls._lean = not (cls.moves_device or cls.multi_output)  # what apply1 serves: one output, here
        if cls.moves_device or cls.is_view:
            cls.upcasts_reduced_floats = False
        if abstract:
            if "name_" in cls.__dict__:
                raise TypeError(f"{_qualified(cls)} is declared abstract (a base of ops, never applied) but sets "
                                f"name_ = {cls.name_!r}; drop one of the two")
            cls.name_ = ""
        else:
            _register(cls)
            # a call's graph node is an instance of its op: type(t.grad_fn).__name__ is PyTorch's node name
            # ("AddBackward0"); the class keeps its own __qualname__ ("Add"), by which its code is found
            cls.__name__ = cls.backward_name

    @staticmethod
    def forward(ctx, xp, *arrays, **attrs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError

    @classmethod
    def _resolve_kernel(cls, backend):
        kernel = _plugins.op_kernels(backend.name).get(cls.name_, cls.forward)
        cls._kernels[backend.name] = kernel
        if cls.array_function is not None and kernel is cls.forward and cls._plain and backend.device_guard is None:
            cls._direct[backend.name] = getattr(backend.xp, cls.array_function)
        return kernel

    @classmethod
    def apply1(cls, a, attrs=None):
        """``apply(a, **attrs)`` for one tensor, on a path without the general case's checks (``attrs`` a dict,
        not keywords: a call without them then makes no empty dict).

        Hot ops and backward rules call it (``sum()``, ``relu``, ``expand`` ...); anything unusual (a view whose
        base changed since, float16, an autocast region or export trace somewhere, a backend with a device guard,
        an op with several outputs or one on another device, an error) goes the general way, through
        :meth:`apply`.
        """
        device = a._device
        backend = device._backend
        if (DETOURS[0] or backend is None or backend.device_guard is not None or not cls._lean
                or a._base is not None and a._vc[0] != a._vv
                or a._dtype.is_reduced_float and cls.upcasts_reduced_floats):
            return cls.apply(a, **(attrs or {}))
        ctx = _new_object(cls)
        x = a._data
        kernel = cls._kernels.get(backend.name) or cls._resolve_kernel(backend)
        try:
            out = kernel(ctx, backend.xp, x, **attrs) if attrs else kernel(ctx, backend.xp, x)
        except (AttributeError, ValueError, MemoryError):
            return cls.apply(a, **(attrs or {}))  # again, for the general path's error
        if cls.is_view:
            res = _make_view(a, out, (cls, attrs or {}))
        else:
            res = _make(out, device, a._dtype if out.dtype is x.dtype else None)
        if not a._requires_grad or GRAD_OFF and not STATE.enabled or not res._dtype.is_floating_point:
            return res
        fn = a.grad_fn
        ctx._next = ((fn, a._output_nr) if fn is not None else (a, 0),)
        ctx.needs_input_grad = _NEED_1
        _record(ctx, (a,), (a._vc[0],), (x.shape,))
        return _attach(ctx, res, device)

    @classmethod
    def apply2(cls, a, b, attrs=None):
        """``apply(a, b, **attrs)`` for two tensors of one dtype, or a tensor and a Python number, on a path
        without the general case's checks (see :meth:`apply1`); the arithmetic operators call it."""
        device = a._device
        backend = device._backend
        if b.__class__ is Tensor or isinstance(b, Tensor):
            if b._device is not device or b._base is not None and b._vc[0] != b._vv:
                return cls.apply(a, b, **(attrs or {}))
            y = b._data
            rb = b._requires_grad
        else:
            y = b
            rb = False
        direct = None if attrs or backend is None else cls._direct.get(backend.name)
        if direct is not None:  # a plain op on a backend without a device guard (see _resolve_kernel)
            if DETOURS[0] or a._base is not None and a._vc[0] != a._vv or a._dtype.is_reduced_float:
                return cls.apply(a, b)
            ctx = None  # made below if a graph is recorded
        elif (DETOURS[0] or backend is None or backend.device_guard is not None or not cls._plain
                or a._base is not None and a._vc[0] != a._vv
                or a._dtype.is_reduced_float and cls.upcasts_reduced_floats):
            return cls.apply(a, b, **(attrs or {}))
        else:
            ctx = _new_object(cls)
        x = a._data
        try:
            if direct is not None:
                out = direct(x, y)
            else:
                kernel = cls._kernels.get(backend.name) or cls._resolve_kernel(backend)
                out = kernel(ctx, backend.xp, x, y, **attrs) if attrs else kernel(ctx, backend.xp, x, y)
        except (AttributeError, ValueError, MemoryError):
            return cls.apply(a, b, **(attrs or {}))  # again, for the general path's error
        # Tensor._make's work inline (keep the two alike): the call took 5% of a + b
        if out.dtype is x.dtype and out.__class__ is x.__class__:
            res = _new_object(Tensor)
            res._data = out
            res._device = device
            res._dtype = a._dtype
            res._vc = [0]
            n = res._nbytes = out.size * a._dtype.itemsize
            mem = device.mem
            now = mem[0] = mem[0] + n
            if now > mem[2]:
                _alloc.grew(res, n, device)
        else:
            res = _make(out, device, a._dtype if out.dtype is x.dtype else None)
        ra = a._requires_grad
        if not (ra or rb) or GRAD_OFF and not STATE.enabled or not res._dtype.is_floating_point:
            return res
        if ctx is None:
            ctx = _new_object(cls)
        fn = a.grad_fn
        e1 = (fn, a._output_nr) if fn is not None else (a, 0) if ra else _NO_EDGE
        ctx.seq = next(_seq)  # _record's work, inline
        if y is b:
            ctx._next = (e1, _NO_EDGE)
            ctx.needs_input_grad = _NEED_1_0
            if cls.saves_inputs:
                ctx._saved, ctx._saved_versions = (a, b), (a._vc[0], None)
            if cls.wants_shapes:
                ctx.in_shapes = (x.shape, None)
        else:
            fn = b.grad_fn
            ctx._next = (e1, (fn, b._output_nr) if fn is not None else (b, 0) if rb else _NO_EDGE)
            ctx.needs_input_grad = _NEED_1_1 if ra and rb else (ra, rb)
            if cls.saves_inputs:
                ctx._saved, ctx._saved_versions = (a, b), (a._vc[0], b._vc[0])
            if cls.wants_shapes:
                ctx.in_shapes = (x.shape, y.shape)
        if cls.saves_output or anomaly.ENABLED:
            return _attach(ctx, res, device)
        res._requires_grad = True
        res.grad_fn = ctx
        return res

    @classmethod
    def apply(cls, *inputs, **attrs):
        """Run the op on tensors (and Python scalars) and record it for backward if needed."""
        if DETOURS[0]:  # some thread has an ember.autocast region on (or a trace runs): cast if this one does
            caster = STATE.autocast
            if caster is not None:
                inputs = caster.cast(cls, inputs, attrs)
        trace = _active_trace()
        if trace is None:
            ctx = object.__new__(cls)
        elif trace.running:  # inside the one op call the trace runs: an op of its kernel or of a view's replay
            ctx = trace.new_ctx(cls)
        else:
            return trace.run(cls, inputs, attrs)
        first = inputs[0]
        n = len(inputs)
        # The common cases, one or two inputs with a tensor first, unrolled here rather than through _gather and
        # _edges (or per-input helpers): on 4x4 float32 with requires_grad, one path through the general helpers
        # made ``a + b`` 26% slower and ``(a*a).sum().backward()`` 6% slower; sharing helper calls, 5% on ``a + b``.
        if n <= 2 and isinstance(first, Tensor):
            device = first._device
            a0 = first._data
            like = a0.dtype  # an output of this dtype has first's ember dtype
            if first._base is not None and first._vc[0] != first._vv:
                _refresh_view(first)
            requires = first._requires_grad
            reduced = first._dtype.is_reduced_float
            if n == 1:
                arrays = None
            else:
                second = inputs[1]
                if isinstance(second, Tensor):
                    d = second._device
                    if d is not device and d.key != device.key:
                        raise device_mismatch(cls.name_, device, d)
                    if second._base is not None and second._vc[0] != second._vv:
                        _refresh_view(second)
                    requires = requires or second._requires_grad
                    reduced = reduced or second._dtype.is_reduced_float
                    a1 = second._data
                else:
                    a1 = second
                arrays = None
        else:
            second = None
            device, requires, arrays, reduced = _gather(cls.name_, inputs)
            like = None
        backend = device._backend or device.backend
        kernel = cls._kernels.get(backend.name) or cls._resolve_kernel(backend)
        xp = backend.xp
        guard = backend.device_guard  # None but on a backend that allocates on a current device (CuPy, 2+ GPUs)
        if guard is not None:
            guard = guard(device)
            guard.__enter__()
        try:
            # a call with the arrays spelled out costs a third of one through *arrays, **attrs
            if arrays is None and not attrs and not (reduced and cls.upcasts_reduced_floats):
                out = kernel(ctx, xp, a0) if n == 1 else kernel(ctx, xp, a0, a1)
            else:
                if arrays is None:
                    arrays = (a0,) if n == 1 else (a0, a1)
                if reduced and cls.upcasts_reduced_floats:
                    out = backend.run_reduced_float(kernel, ctx, xp, arrays, attrs)
                else:
                    out = kernel(ctx, xp, *arrays, **attrs)
        except AttributeError as exc:
            if getattr(exc, "obj", None) is xp:
                raise UnsupportedOpError(
                    f"op {cls.name_!r} is not supported by backend {backend.name!r} "
                    f"(its array namespace has no {exc.name!r})") from None
            raise
        except ValueError:
            mismatch = broadcast_mismatch([t._data if isinstance(t, Tensor) else t for t in inputs])
            if mismatch is not None:
                raise mismatch from None
            raise
        except MemoryError as exc:  # the backend's allocator failed: an OutOfMemoryError with the report
            raise _alloc.from_memory_error(exc, device) from exc
        finally:
            if guard is not None:
                guard.__exit__(None, None, None)
        if cls._plain:
            res = Tensor._make(out, device, first._dtype if out.dtype is like else None)
            if not requires or GRAD_OFF and not STATE.enabled or not res._dtype.is_floating_point:
                return res  # nothing to record (bool and integer results never require grad)
        else:
            if cls.moves_device:
                device = ctx.out_device
            if cls.is_view:
                res = Tensor._make_view(inputs[0], out, (cls, attrs))
            elif not cls.multi_output:
                res = Tensor._make(out, device)
            if not (requires and (not GRAD_OFF or STATE.enabled)):
                if cls.multi_output:
                    return tuple(Tensor._make(o, device) for o in out)
                return res
            if not cls.multi_output and not res._dtype.is_floating_point:
                return res
        if like is not None:  # one or two inputs, the first a tensor: the edges without the general loop
            fn = first.grad_fn  # _edge(first), inlined
            e1 = (fn, first._output_nr) if fn is not None else (first, 0) if first._requires_grad else _NO_EDGE
            if n == 1:
                ctx._next, ctx.needs_input_grad = (e1,), _NEED_1
                versions = (first._vc[0],)
            elif isinstance(second, Tensor):
                fn = second.grad_fn
                ctx._next = (e1, (fn, second._output_nr) if fn is not None else (second, 0)
                             if second._requires_grad else _NO_EDGE)
                ctx.needs_input_grad = (first._requires_grad, second._requires_grad)
                versions = (first._vc[0], second._vc[0])
            else:
                ctx._next, ctx.needs_input_grad = (e1, _NO_EDGE), _NEED_1_0
                versions = (first._vc[0], None)
        else:
            ctx._next, ctx.needs_input_grad, versions = _edges(inputs)
        shapes = None
        if cls.wants_shapes:
            if like is not None and n == 2:
                shapes = (first._data.shape, second._data.shape if isinstance(second, Tensor) else None)
            else:
                shapes = tuple(t._data.shape if isinstance(t, Tensor) else None for t in inputs)
        _record(ctx, inputs, versions, shapes)
        if cls.multi_output:
            if anomaly.ENABLED:
                anomaly.record_forward(ctx)
            outs = tuple(Tensor._make(o, device) for o in out)
            ctx._out_meta = tuple((o.shape, o.dtype, o.device) for o in outs)
            for i, o in enumerate(outs):
                if o._dtype.is_floating_point:
                    o._requires_grad = True
                    o.grad_fn = ctx
                    o._output_nr = i
            if cls.saves_output:
                ctx._out = tuple((o._data, o._dtype, o._vc, o._vc[0]) for o in outs)
                ctx._out_device = device
                ctx._hold_memory(outs)
            return outs
        return _attach(ctx, res, device)

    @property
    def saved_output(self):
        """The forward's output (a fresh tensor object with this node as grad_fn), version-checked."""
        if self._freed:
            raise RuntimeError(FREED_MSG)
        outs = []
        device = self._out_device
        for i, (data, dtype, vc, version) in enumerate(self._out):
            t = Tensor._sharing(data, device, dtype, vc)
            if STATE.enabled:
                t._requires_grad, t.grad_fn, t._output_nr = True, self, i
            if vc[0] != version:
                raise RuntimeError(_version_error(self, t, version))
            outs.append(t)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def release(self) -> None:
        self._freed = True
        if self.saves_inputs:
            self._saved = ()
        if self.saves_output:
            self._out = ()
            self._give_back_memory()

    def _hold_memory(self, outs) -> None:
        """Count the saved outputs' bytes on this node rather than on the output tensors, which may die first
        while the node keeps their arrays for backward (``ember.memory_allocated`` then still counts them)."""
        self._out_held = _HeldOutputs(outs, self._out_device)

    def _give_back_memory(self) -> None:
        held = self.__dict__.pop("_out_held", None)
        if held is not None:
            held.give_back()

    def apply_backward(self, grads):
        # a freed node fails only when its backward reads what it saved (as in PyTorch)
        if self._out_meta is not None:
            grads = [g if g is not None else _zeros(meta) for g, meta in zip(grads, self._out_meta)]
        elif self.backward_arrays is not None and not STATE.enabled and not grads[0]._dtype.is_reduced_float:
            return _backward_on_arrays(self, grads[0])
        res = self.backward(self, *grads)
        return res if isinstance(res, tuple) else (res,)


def _backward_on_arrays(ctx, g) -> tuple:
    """``ctx.backward_arrays`` run on ``g``'s array, its results made tensors on ``g``'s device."""
    device = g._device
    backend = device._backend or device.backend
    try:
        if backend.device_guard is None:
            res = ctx.backward_arrays(ctx, backend.xp, g._data)
        else:
            with backend.device_guard(device):
                res = ctx.backward_arrays(ctx, backend.xp, g._data)
    except MemoryError as exc:
        raise _alloc.from_memory_error(exc, device) from exc
    dtype, native = g._dtype, g._data.dtype  # the usual dtype of the results: no lookup for them in _make
    if type(res) is not tuple:
        return (_make(res, device, dtype if res.dtype is native else None),)
    return tuple([None if r is None else _make(r, device, dtype if r.dtype is native else None) for r in res])


def _qualified(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _register(cls) -> None:
    """Enter an op class into :data:`OPS` under its own ``name_``, which must be set and unique."""
    name = cls.__dict__.get("name_")
    if not isinstance(name, str) or not name:
        raise TypeError(f"op class {_qualified(cls)} must name itself: set the class attribute name_ to a string "
                        f"unique among ops (e.g. name_ = \"mypkg.{cls.__name__.lower()}\"; kernels and ONNX lowerings "
                        f"find the op by it), got {name!r}; a base class for other ops is declared "
                        f"`class {cls.__name__}(Op, abstract=True)` instead")
    taken = OPS.get(name)
    if taken is not None and _qualified(taken) != _qualified(cls):  # the same class statement run again may replace
        raise TypeError(f"op name {name!r} of {_qualified(cls)} is already taken by {_qualified(taken)}; "
                        "give one of them another name_ (op names must be unique)")
    OPS[name] = cls


class _HeldOutputs:
    """The byte count of outputs a node saved for backward, moved from the output tensors to the node.

    When the node lets them go (after backward, or when it dies), a tensor still holding its array counts it
    again; the bytes of arrays nobody holds any more are freed from the device's count.
    """

    __slots__ = ("held", "device")

    def __init__(self, outs, device):
        self.held = [(weakref.ref(o), o._nbytes, o._data) for o in outs]
        self.device = device
        for o in outs:
            o._nbytes = 0

    def give_back(self) -> None:
        held, self.held = self.held, ()
        mem = self.device.mem
        for ref, nbytes, data in held:
            t = ref()
            if t is not None and t._data is data:
                t._nbytes += nbytes
            else:
                mem[0] -= nbytes
                _alloc.freed(None, nbytes, self.device)

    def __del__(self):
        try:
            self.give_back()
        except Exception:  # interpreter teardown
            pass


def _zeros(meta):
    shape, dtype, device = meta
    backend = device.backend
    with on_device(device):
        return Tensor._make(backend.xp.zeros(shape, dtype=backend.native_dtype(dtype)), device, dtype)


class FunctionCtx(Node):
    """The ``ctx`` of a user-defined :class:`Function`; it becomes the output's ``grad_fn``."""

    materialize_grads = True

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = value

    def apply_backward(self, grads):
        if self.materialize_grads:
            grads = [g if g is not None else _zeros(meta) for g, meta in zip(grads, self._out_meta)]
        res = self._fn_cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self._next)
        if len(res) < n or any(g is not None for g in res[n:]):
            raise RuntimeError(f"function {self.backward_name} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(res)})")
        res = res[:n]
        for i, (g, meta) in enumerate(zip(res, self._in_meta)):
            if g is not None and meta is not None and tuple(g.shape) != tuple(meta):
                raise RuntimeError(f"function {self.backward_name} returned an invalid gradient at index {i} - "
                                   f"got {list(g.shape)} but expected shape compatible with {list(meta)}")
        return res


class Function:
    """A user-defined differentiable function: static ``forward(ctx, ...)`` and ``backward(ctx, *grads)``.

    ``forward`` gets tensors and runs without recording; ``backward`` gets one
    gradient per output and returns one per input of ``forward`` (``None`` for
    inputs that are not tensors or need no gradient).

    >>> import ember
    >>> class Square(ember.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         x, = ctx.saved_tensors
    ...         return 2 * x * g
    >>> x = ember.tensor([3.0], requires_grad=True)
    >>> Square.apply(x).backward()
    >>> x.grad
    tensor([6.])
    """

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls._ctx_cls = type(f"{cls.__name__}Backward", (FunctionCtx,),
                            {"backward_name": f"{cls.__name__}Backward", "_fn_cls": cls})

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("a Function subclass must define backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._ctx_cls()
        tensors = [a for a in args if isinstance(a, Tensor)]
        requires = STATE.enabled and any(t._requires_grad for t in tensors)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not requires:
            return out
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        ctx._next = tuple(_edge(a) if isinstance(a, Tensor) else _NO_EDGE for a in args)
        ctx._in_meta = tuple(tuple(a.shape) if isinstance(a, Tensor) else None for a in args)
        ctx.seq = next(_seq)
        if anomaly.ENABLED:
            anomaly.record_forward(ctx)
        non_diff = getattr(ctx, "_non_diff", ())
        result = []
        for i, o in enumerate(outs):
            if isinstance(o, Tensor):
                if o.grad_fn is not None or any(o is a for a in args):
                    o = o._alias_for_output()
                if id(o) not in non_diff and id(outs[i]) not in non_diff and o._dtype.is_floating_point:
                    o._requires_grad, o.grad_fn, o._output_nr = True, ctx, i
            result.append(o)
        ctx._out_meta = tuple((o.shape, o.dtype, o.device) if isinstance(o, Tensor) else None for o in result)
        return result[0] if single else tuple(result)
