"""The backward engine: runs graph nodes in reverse creation order, summing gradients.

``run_backward`` serves both ``tensor.backward()`` (accumulate into leaves'
``.grad``) and ``ember.autograd.grad`` (return gradients for ``inputs``, leave
``.grad`` alone). The engine accumulates into each leaf once, after every node has run, passing its
last reference to the gradient, so a first ``.grad`` can be the gradient itself; no ``AccumulateGrad`` node
is made for that (one exists only where someone asked for it through ``next_functions``, and its hooks run).

Once any leaf has a post-accumulate-grad hook (what DistributedDataParallel's buckets wait on), a backward
also counts the edges into each leaf first and accumulates into it as soon as all of them have delivered, as
PyTorch's engine does, so that the hook runs while the rest of the backward is still under way.

:func:`queue_callback` (PyTorch's ``Variable._execution_engine.queue_callback``) lets a hook that runs during a
backward ask for a function to run once that backward has finished: DistributedDataParallel waits for its
buckets' all-reduces there.
"""
from __future__ import annotations

import heapq
import itertools
import threading

from .._tensor import Tensor
from . import anomaly
from .grad_mode import STATE, set_enabled
from .node import AccumulateGrad, accumulate


class _Callbacks(threading.local):
    queue = None  # the final callbacks of this thread's backward in progress; None outside a backward
    capturing = False  # whether that backward returns the gradients of given inputs (grad(), backward(inputs=))


_CALLBACKS = _Callbacks()


def queue_callback(callback) -> None:
    """Run ``callback()`` (no arguments) when the backward in progress has finished, after every other node and
    hook of it; callbacks run in the order queued, and one may queue more. Only a hook running during a backward
    may call it (PyTorch's ``Variable._execution_engine.queue_callback``, reached by ember's siblings through
    ``ember._sibling_api.queue_callback``).

    >>> import ember
    >>> from ember.autograd.engine import queue_callback
    >>> w, seen = ember.ones(2, requires_grad=True), []
    >>> _ = w.register_hook(lambda g: queue_callback(lambda: seen.append(w.grad.tolist())))
    >>> (w * 3).sum().backward(); seen
    [[3.0, 3.0]]
    """
    queue = _CALLBACKS.queue
    if queue is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    queue.append(callback)


def capturing_inputs() -> bool:
    """Whether the backward running in this thread was asked for the gradients of given inputs (``grad()`` or
    ``backward(inputs=...)``) rather than to accumulate into every leaf: a reentrant checkpoint refuses that."""
    return _CALLBACKS.capturing


def _run_callbacks(queue) -> None:
    i = 0
    while i < len(queue):
        queue[i]()
        i += 1


def _root_edge(t, i):
    if not t._requires_grad:
        raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    return t, 0


#: The engine accumulates into a leaf tensor itself (an edge to a leaf holds the leaf, or its AccumulateGrad
#: node once someone looked at ``next_functions``: both lead to the leaf). A leaf is queued with the heap key
#: _LAST, after every node, so that it gets its whole gradient at once; or with _READY, to run next, once all
#: the edges into it have delivered (what post-accumulate-grad hooks need, see the module docstring). Leaves
#: queued with the same key run in the order their first gradient arrived (_arrival).
_LAST = float("inf")
_READY = float("-inf")
_arrival = itertools.count()


def _push(heap, target) -> None:
    """Queue ``target`` (a node, or a leaf tensor) for its turn."""
    if isinstance(target, Tensor):
        heapq.heappush(heap, (_LAST, next(_arrival), target))
    else:
        heapq.heappush(heap, (-target.seq, id(target), target))


def _key(target):
    """``target``'s key in the engine's gradient buffers: the node itself, or a leaf tensor's id (a tensor's
    own ``__hash__`` is a Python call)."""
    return id(target) if isinstance(target, Tensor) else target


def _accumulation_deps(roots) -> dict:
    """``{id(leaf): number of edges into it}`` over the graph below ``roots``."""
    deps: dict = {}
    stack = [node for node, _ in roots if not isinstance(node, Tensor)]
    seen = set(stack)
    while stack:
        for nxt, _ in stack.pop()._next:
            if type(nxt) is AccumulateGrad:
                nxt = nxt.variable
            if isinstance(nxt, Tensor):
                deps[id(nxt)] = deps.get(id(nxt), 0) + 1
            elif nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps


def _delivered(node, deps, buffers, heap) -> None:
    """``node`` has run (or had no gradient to pass on): queue the leaves it was the last input of."""
    for nxt, _ in node._next:
        if type(nxt) is AccumulateGrad:
            nxt = nxt.variable
        if isinstance(nxt, Tensor):
            left = deps.get(id(nxt))
            if left is not None:
                deps[id(nxt)] = left - 1
                if left == 1 and id(nxt) in buffers:
                    heapq.heappush(heap, (_READY, next(_arrival), nxt))


def _needed_nodes(roots, targets):
    """Nodes from which some target (a node, or a leaf tensor's id) can be reached (the only ones ``grad`` must
    run); ``{node or id(leaf): needed}``."""
    needed = {}

    def edges(node):
        return iter(()) if isinstance(node, Tensor) else (
            (None if nxt is None else id(nxt.variable) if type(nxt) is AccumulateGrad else
             id(nxt) if isinstance(nxt, Tensor) else nxt, nr) for nxt, nr in node._next)

    def visit(node):
        stack = [(node, edges(node))]
        path = {node}
        while stack:
            cur, it = stack[-1]
            for nxt, _ in it:
                if nxt is None:
                    continue
                if nxt in needed:
                    if needed[nxt]:
                        needed[cur] = True
                    continue
                if nxt in path:
                    continue
                path.add(nxt)
                stack.append((nxt, iter(()) if isinstance(nxt, int) else edges(nxt)))
                break
            else:
                stack.pop()
                path.discard(cur)
                needed[cur] = needed.get(cur, False) or cur in targets
                if needed[cur] and stack:
                    needed[stack[-1][0]] = True
    for r, _ in roots:
        if isinstance(r, Tensor):
            needed[id(r)] = id(r) in targets
        else:
            visit(r)
    return needed


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None, allow_unused=False):
    """Run the graph backward from ``tensors`` seeded with ``grad_tensors``.

    Nodes run in descending creation order (``seq``): every consumer of a
    node was created after it, so when a node runs, all gradients for it have
    arrived. That order needs no dependency count, only a heap of the nodes
    reached so far; the leaves come last (but see the module's note on
    post-accumulate-grad hooks).
    """
    roots = [_root_edge(tensors[0], 0)] if len(tensors) == 1 else [_root_edge(t, i) for i, t in enumerate(tensors)]
    capture = None
    if inputs is not None:
        capture = {}
        for i, t in enumerate(inputs):
            if not t._requires_grad:
                raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
            edge = (t.grad_fn, t._output_nr) if t.grad_fn is not None else (id(t), 0)
            capture.setdefault(edge, []).append(i)
        needed = _needed_nodes(roots, {n for n, _ in capture})
    if len(roots) == 1 and not isinstance(roots[0][0], Tensor):  # one node to start from: the common case
        target, nr = roots[0]
        buf = [None] * _n_outputs(target)
        buf[nr] = grad_tensors[0]
        buffers: dict = {target: buf}
        heap: list = [(-target.seq, id(target), target)]
    else:
        buffers, heap = {}, []
        for (target, nr), g in zip(roots, grad_tensors):
            key = _key(target)
            buf = buffers.get(key)
            if buf is None:
                buf = buffers[key] = [None] * _n_outputs(target)
                _push(heap, target)
            buf[nr] = g if buf[nr] is None else buf[nr] + g
    results = [None] * len(inputs) if inputs is not None else None
    deps = _accumulation_deps(roots) if capture is None and Tensor._post_acc_hooks_in_use else None

    prev_enabled, outer_callbacks, outer_capturing = STATE.enabled, _CALLBACKS.queue, _CALLBACKS.capturing
    set_enabled(create_graph, prev_enabled)
    _CALLBACKS.queue = callbacks = []
    _CALLBACKS.capturing = capture is not None
    try:
        while heap:
            node = heapq.heappop(heap)[2]
            if isinstance(node, Tensor):  # a leaf: its gradient goes into .grad
                grads = buffers.pop(id(node), None)
                if grads is None:
                    continue  # queued twice (when ready, and at the end): it has run already
                ref = node._grad_acc
                acc = None if ref is None else ref()
                if acc is not None and (acc._tensor_hooks or acc._pre_hooks):
                    grads = _run_pre_hooks(acc, grads)
                g = grads[0]
                if capture is not None:
                    for i in capture.get((id(node), 0), ()):
                        results[i] = g
                elif g is not None:
                    grads[0] = None
                    accumulate(node, g, create_graph)  # gets the last reference: a first .grad may be g itself
                g = None
                continue
            grads = buffers.pop(node)
            if node._tensor_hooks or node._pre_hooks or node._retained:
                grads = _run_pre_hooks(node, grads)
            if capture is not None:
                for nr, g in enumerate(grads):
                    for i in capture.get((node, nr), ()):
                        results[i] = g
                if not needed.get(node, False):
                    continue  # nothing below it leads to an input asked for
            for g in grads:
                if g is not None:
                    break
            else:
                if deps is not None:
                    _delivered(node, deps, buffers, heap)
                continue  # no gradient reached this node: nothing flows on from it
            grad_inputs = node.apply_backward(grads)
            if anomaly.ENABLED:
                anomaly.check_backward(node, grad_inputs)
            if node._post_hooks:
                for hook in tuple(node._post_hooks.values()):
                    new = hook(grad_inputs, tuple(grads))
                    if new is not None:
                        grad_inputs = tuple(new)
            if not retain_graph:
                node.release()
            for (nxt, nr), g in zip(node._next, grad_inputs):
                if nxt is None or g is None:
                    continue
                if type(nxt) is AccumulateGrad:
                    nxt = nxt.variable
                if isinstance(nxt, Tensor):
                    if g._dtype is not nxt._dtype:
                        g = g.to(nxt._dtype)  # as PyTorch's engine: grads match their input's dtype
                    buf = buffers.get(id(nxt))
                    if buf is None:
                        buf = buffers[id(nxt)] = [None]
                        heapq.heappush(heap, (_LAST, next(_arrival), nxt))
                else:
                    buf = buffers.get(nxt)
                    if buf is None:
                        meta = nxt._out_meta
                        buf = buffers[nxt] = [None] * (1 if meta is None else len(meta))
                        heapq.heappush(heap, (-nxt.seq, id(nxt), nxt))
                buf[nr] = g if buf[nr] is None else buf[nr] + g
            if deps is not None:
                _delivered(node, deps, buffers, heap)
            grad_inputs = g = None  # the buffers alone hold the gradients now (see node.accumulate)
        set_enabled(prev_enabled)
        if callbacks:
            _run_callbacks(callbacks)
    finally:
        set_enabled(prev_enabled)
        _CALLBACKS.queue, _CALLBACKS.capturing = outer_callbacks, outer_capturing
    if inputs is not None:
        for i, r in enumerate(results):
            if r is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        return tuple(results)
    return None


def _n_outputs(node):
    meta = None if isinstance(node, Tensor) else node._out_meta
    return len(meta) if meta is not None else 1


def _run_pre_hooks(node, grads):
    th = node._tensor_hooks
    if th:
        for nr, hooks in th.items():
            if grads[nr] is not None:
                for hook in tuple(hooks.values()):
                    new = hook(grads[nr])
                    if new is not None:
                        grads[nr] = new
    if node._pre_hooks:
        for hook in tuple(node._pre_hooks.values()):
            new = hook(tuple(grads))
            if new is not None:
                grads = list(new)
    if node._retained:
        for nr, ref in node._retained.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr] if STATE.enabled else grads[nr].detach()
                t._grad = g if t._grad is None else t._grad + g
    return grads
