"""Activation checkpointing (``torch.utils.checkpoint``): keep a function's inputs, not its activations, and
recompute them during backward.

``checkpoint(function, *args, use_reentrant=False)`` returns what ``function(*args)`` returns, but the graph
built inside ``function`` is dropped as soon as the call returns; only the inputs (and the random state) are
kept. Backward reruns ``function`` on them, with the random generators of the CPU and of the inputs' devices
put back to where the forward found them (so dropout draws the same mask), and back-propagates through that
rerun. Gradients equal the plain run's; the activations of the checkpointed part live only while its
backward runs, which lowers the peak memory of a deep model (:func:`checkpoint_sequential` checkpoints
segments of a stack of layers).

The two variants of PyTorch:

- ``use_reentrant=False`` (recommended): gradients reach everything ``function`` used that requires grad,
  parameters and tensors it captured included, even when no input requires grad; keyword arguments go to
  ``function``; ``ember.autograd.grad`` and ``backward(inputs=...)`` work through it. The forward records the
  graph once, to learn where gradients must go, then drops it; the outputs' ``grad_fn`` is a
  ``CheckpointBackward`` node (PyTorch's keep the original nodes).
- ``use_reentrant=True``: the forward runs under ``no_grad``; the outputs require grad only when an input
  does (otherwise gradients are None, with a warning), and backward runs a nested ``backward`` on the rerun,
  which accumulates straight into the parameters' ``.grad``; hence it refuses ``grad()``.

Not passing ``use_reentrant`` warns and means ``True``, as in PyTorch 2.x. What the function changes besides
its outputs (BatchNorm's running statistics) changes again in the rerun: ``context_fn`` can put it back.

>>> import ember
>>> from ember.utils.checkpoint import checkpoint
>>> w = ember.tensor([[2.0]], requires_grad=True)
>>> x = ember.tensor([[3.0]])
>>> y = checkpoint(lambda a: (a @ w).tanh() * 4, x, use_reentrant=False)
>>> y.grad_fn.name()
'CheckpointBackward'
>>> y.sum().backward()
>>> round(w.grad.item(), 6)  # 4 * (1 - tanh(6)**2) * 3, as without checkpointing
0.000295
"""
from __future__ import annotations

import contextlib
import warnings

from .._device import as_device
from .._tensor import Tensor
from ..autograd.engine import capturing_inputs
from ..autograd.function import Function
from ..autograd.grad_mode import STATE, enable_grad
from ..autograd.gradients import backward
from ..autograd.node import FREED_MSG, AccumulateGrad, Node, _seq, _version_error
from ..random import fork_rng, get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn"]

_DETERMINISM_CHECKS = ("default", "none")


def noop_context_fn():
    """The default ``context_fn``: neither the forward nor the recomputation runs under an extra context."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=noop_context_fn,
               determinism_check: str = "default", preserve_rng_state: bool = True, **kwargs):
    """``function(*args, **kwargs)`` whose activations are recomputed in backward instead of kept.

    ``function`` returns a tensor or a tuple/list of tensors and other values. ``preserve_rng_state=False``
    skips saving and restoring the random state (faster, but dropout then draws another mask in the rerun).
    ``context_fn`` (``use_reentrant=False`` only) returns two context managers, entered around the forward
    and around the recomputation. ``determinism_check="default"`` checks that the recomputation gives outputs
    of the forward's shapes, dtypes and devices (``"none"`` skips it). See the module docstring for the two
    variants.

    >>> import ember
    >>> from ember.utils.checkpoint import checkpoint
    >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
    >>> y, n = checkpoint(lambda a, power=2: (a ** power, "not a tensor"), x, use_reentrant=False, power=3)
    >>> y.sum().backward(); x.grad
    tensor([ 3., 12.])
    """
    if use_reentrant is None:
        warnings.warn("ember.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                      "use_reentrant=False is recommended (gradients reach the parameters even when no input "
                      "requires grad); without it the reentrant variant runs, as in PyTorch.", stacklevel=2)
        use_reentrant = True
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type(function).__name__}")
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, but got "
                         f"{determinism_check!r}")
    if use_reentrant:
        if context_fn is not noop_context_fn:
            raise ValueError("Passing `context_fn` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError(f"Unexpected keyword arguments: {','.join(kwargs)} (use_reentrant=True passes "
                             "positional arguments only; use use_reentrant=False to pass keyword arguments)")
        if STATE.enabled and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        return _ReentrantCheckpoint.apply(function, preserve_rng_state, *args)
    forward_ctx, recompute_ctx = context_fn()
    if not STATE.enabled:
        with forward_ctx:
            return function(*args, **kwargs)
    return _checkpoint_graph(function, args, kwargs, preserve_rng_state, forward_ctx, recompute_ctx,
                             determinism_check == "default")


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` (a list of callables, or a container module such as ``nn.Sequential``) one after the
    other on ``input``, cut into ``segments`` runs of equal length (the last takes the rest), each run but the
    last checkpointed (the last one's activations are needed at once by backward). ``preserve_rng_state`` is
    the only other keyword argument.

    >>> import ember
    >>> from ember.utils.checkpoint import checkpoint_sequential
    >>> layers = [ember.sin, ember.exp, ember.sin, ember.exp]
    >>> x = ember.tensor([0.5], requires_grad=True)
    >>> checkpoint_sequential(layers, 2, x, use_reentrant=False).backward()  # layers 0-1 checkpointed
    >>> plain = x.detach().requires_grad_()
    >>> ember.exp(ember.sin(ember.exp(ember.sin(plain)))).backward()
    >>> bool(x.grad == plain.grad)
    True
    """
    if use_reentrant is None:
        warnings.warn("ember.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly; use_reentrant=False is recommended. Without it the reentrant variant runs, as "
                      "in PyTorch.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError(f"Unexpected keyword arguments: {','.join(kwargs)}")
    children = getattr(functions, "children", None)
    functions = list(children() if callable(children) else functions)
    if isinstance(segments, bool) or not isinstance(segments, int) or not 1 <= segments <= len(functions):
        raise ValueError(f"checkpoint_sequential: segments must be an int from 1 to the number of functions "
                         f"({len(functions)}), got {segments!r}")
    size = len(functions) // segments
    for start in range(0, size * (segments - 1), size):
        input = checkpoint(_run_in_turn(functions[start:start + size]), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return _run_in_turn(functions[size * (segments - 1):])(input)


def _run_in_turn(functions):
    def run(x):
        for f in functions:
            x = f(x)
        return x
    return run


class _RngState:
    """The default generators' states of the CPU and of the devices of ``args``' tensors."""

    def __init__(self, args):
        devices = {as_device("cpu").key: as_device("cpu")}
        for a in args:
            if isinstance(a, Tensor):
                devices.setdefault(a.device.key, a.device)
        self.states = [(d, get_rng_state(d)) for d in devices.values()]

    @contextlib.contextmanager
    def restored(self):
        """Within the block the generators start from the saved states; afterwards they are as before it."""
        with fork_rng(devices=[d for d, _ in self.states]):
            for device, state in self.states:
                set_rng_state(state, device)
            yield


def _outputs(out):
    """``(outputs as a tuple, rebuild)``: ``rebuild(items)`` gives back the structure ``function`` returned."""
    if isinstance(out, Tensor):
        return (out,), lambda items: items[0]
    if isinstance(out, (tuple, list)):
        return tuple(out), type(out)
    raise TypeError(f"checkpoint: the function must return a tensor or a tuple/list (of tensors and other values), "
                    f"got {type(out).__name__}")


# ---- use_reentrant=False -------------------------------------------------------------------------------------------
def _checkpoint_graph(function, args, kwargs, preserve, forward_ctx, recompute_ctx, check):
    rng = _RngState(args) if preserve else None
    start = next(_seq)  # every node the call makes comes after this number
    with forward_ctx:
        outs, rebuild = _outputs(function(*args, **kwargs))
    made = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.grad_fn is not None and o.grad_fn.seq > start]
    if not made:  # nothing made inside requires grad: there is no graph to drop
        return rebuild(outs)
    node = CheckpointBackward(function, args, kwargs, rng, recompute_ctx, check, made)
    node.next_functions = tuple(_boundary([outs[i].grad_fn for i in made], start))
    node.index = {edge: k for k, edge in enumerate(node.next_functions)}
    node._out_meta = tuple((outs[i].shape, outs[i].dtype, outs[i].device) for i in made)
    node.seq = next(_seq)
    result = list(outs)
    for nr, i in enumerate(made):
        o = outs[i]
        if o._base is not None:  # a view holds its base, and with it the graph: hand out a copy of its data
            o = Tensor._make(o._device.backend.xp.asarray(o._data, copy=True), o._device, o._dtype)
        o.grad_fn, o._requires_grad, o._output_nr = node, True, nr  # the graph made inside goes with the old grad_fn
        result[i] = o
    return rebuild(result)


def _inside(node, start) -> bool:
    return node is not None and type(node) is not AccumulateGrad and node.seq > start


def _boundary(roots, start):
    """The edges from the nodes made after ``start`` (reachable from ``roots``) to nodes outside them, in the
    order first met: where gradients leave the checkpointed part (inputs, parameters, captured tensors)."""
    found: dict = {}
    stack, seen = list(roots), set(roots)
    while stack:
        for edge in stack.pop().next_functions:
            nxt = edge[0]
            if _inside(nxt, start):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
            elif nxt is not None:
                found.setdefault(edge, None)
    return found


class _Capture(Node):
    """Where a recomputed graph's gradient for one boundary edge ends up (instead of flowing on)."""

    backward_name = "CheckpointCapture"
    grad = None

    def __init__(self):
        self.seq = next(_seq)  # before the recomputation's nodes: runs after all of them

    def apply_backward(self, grads):
        self.grad = grads[0]
        return ()


class CheckpointBackward(Node):
    """The ``grad_fn`` of a non-reentrant checkpoint's outputs: keeps the inputs; its backward recomputes the
    function and passes the gradients on to the edges where they left the checkpointed part in the forward."""

    backward_name = "CheckpointBackward"
    index: dict

    def __init__(self, function, args, kwargs, rng, recompute_ctx, check, made):
        self.function, self.args, self.kwargs, self.rng = function, args, kwargs, rng
        self.recompute_ctx, self.check, self.made = recompute_ctx, check, made
        self.versions = [(a, a._vc[0]) for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]

    def release(self) -> None:
        self._freed = True
        self.args = self.kwargs = self.versions = None

    def apply_backward(self, grads):
        if self._freed:
            raise RuntimeError(FREED_MSG)
        for t, version in self.versions:
            if t._vc[0] != version:
                raise RuntimeError(_version_error(self, t, version))
        create_graph = STATE.enabled  # the engine sets grad mode to create_graph while it runs
        captures = [_Capture() for _ in self.next_functions]
        start = next(_seq)
        with enable_grad(), self.rng.restored() if self.rng is not None else contextlib.nullcontext(), \
                self.recompute_ctx:
            outs, _ = _outputs(self.function(*self.args, **self.kwargs))
        roots, root_grads = [], []
        for nr, (i, g) in enumerate(zip(self.made, grads)):
            o = outs[i] if i < len(outs) else None
            if not isinstance(o, Tensor) or not _inside(o.grad_fn, start):
                raise RuntimeError(f"checkpoint: output {i} of the recomputation is not a tensor computed from what "
                                   f"requires grad, unlike the forward's; the function must compute the same in "
                                   f"its rerun (got {type(o).__name__})")
            if self.check and (o.shape, o.dtype, o.device) != self._out_meta[nr]:
                raise RuntimeError(f"checkpoint: output {i} of the recomputation has shape {tuple(o.shape)}, "
                                   f"{o.dtype} on {o.device}, but the forward's had {tuple(self._out_meta[nr][0])}, "
                                   f"{self._out_meta[nr][1]} on {self._out_meta[nr][2]}; the function must compute "
                                   "the same in its rerun (pass determinism_check='none' to skip this check)")
            if g is not None:
                roots.append(o)
                root_grads.append(g)
        self._route_to(captures, [o.grad_fn for o in roots], start)
        if roots:
            backward(roots, root_grads, create_graph=create_graph)
        return tuple(c.grad for c in captures)

    def _route_to(self, captures, roots, start) -> None:
        """Point the recomputed graph's edges out of the checkpointed part at ``captures`` (one per edge of this
        node), so that its backward stops there; a leaf made inside the function gets no gradient."""
        stack, seen = list(roots), set(roots)
        while stack:
            node = stack.pop()
            edges = []
            for edge in node.next_functions:
                nxt = edge[0]
                if nxt is None or _inside(nxt, start):
                    if nxt is not None and nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
                    edges.append(edge)
                elif edge in self.index:
                    edges.append((captures[self.index[edge]], 0))
                elif type(nxt) is AccumulateGrad and nxt.seq > start:
                    edges.append((None, 0))
                else:
                    raise RuntimeError("checkpoint: the recomputation used a tensor that requires grad which the "
                                       "forward did not use; the function must compute the same in its rerun")
            node.next_functions = tuple(edges)


# ---- use_reentrant=True --------------------------------------------------------------------------------------------
class _ReentrantCheckpoint(Function):
    @staticmethod
    def forward(ctx, function, preserve, *args):
        ctx.function = function
        ctx.rng = _RngState(args) if preserve else None
        ctx.positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.others = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*(args[i] for i in ctx.positions))
        ctx.set_materialize_grads(False)  # outputs that are not tensors get no gradient, not even zeros
        out = function(*args)
        return tuple(out) if isinstance(out, list) else out  # a Function gives a tuple's tensors a grad_fn

    @staticmethod
    def backward(ctx, *grads):
        if capturing_inputs():
            raise RuntimeError("When use_reentrant=True, ember.utils.checkpoint is incompatible with .grad() or "
                               "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
                               "set use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        args = list(ctx.others)
        for i, t in zip(ctx.positions, ctx.saved_tensors):
            args[i] = t.detach().requires_grad_(t.requires_grad)
        with enable_grad(), ctx.rng.restored() if ctx.rng is not None else contextlib.nullcontext():
            outs, _ = _outputs(ctx.function(*args))
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        pairs = [(o, g) for o, g in pairs if g is not None]
        if pairs:
            backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *(a.grad if isinstance(a, Tensor) else None for a in args))
