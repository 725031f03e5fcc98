"""The backward engine: runs graph nodes in reverse creation order, summing gradients.

``run_backward`` serves both ``tensor.backward()`` (accumulate into leaves'
``.grad``) and ``ember.autograd.grad`` (return gradients for ``inputs``, leave
``.grad`` alone). A leaf's gradient goes to its ``AccumulateGrad`` node as the
engine's last reference, so a first ``.grad`` can be the gradient itself.

Once any leaf has a post-accumulate-grad hook (what DistributedDataParallel's buckets wait on), a backward
also counts the edges into each ``AccumulateGrad`` node first and runs the node as soon as all of them have
delivered, as PyTorch's engine does, rather than at its place in creation order: a leaf's node outlives a
graph that a name keeps (the last step's ``loss``), and then its place is before every node of the new graph.

:func:`queue_callback` (PyTorch's ``Variable._execution_engine.queue_callback``) lets a hook that runs during a
backward ask for a function to run once that backward has finished: DistributedDataParallel waits for its
buckets' all-reduces there.
"""
from __future__ import annotations

import heapq
import threading

from .._tensor import Tensor
from . import anomaly
from .grad_mode import STATE
from .node import AccumulateGrad, grad_accumulator


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
    return grad_accumulator(t), 0


#: heap key of an AccumulateGrad node all of whose inputs have delivered: it runs next
_READY = float("-inf")


def _accumulation_deps(roots) -> dict:
    """``{AccumulateGrad node: number of edges into it}`` over the graph below ``roots``."""
    deps: dict = {}
    stack = [node for node, _ in roots]
    seen = set(stack)
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if type(nxt) is AccumulateGrad:
                deps[nxt] = deps.get(nxt, 0) + 1
            elif nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps


def _delivered(node, deps, buffers, heap) -> None:
    """``node`` has run (or had no gradient to pass on): queue the AccumulateGrad nodes it was the last input of."""
    for nxt, _ in node.next_functions:
        left = deps.get(nxt)
        if left is not None:
            deps[nxt] = left - 1
            if left == 1 and nxt in buffers:
                heapq.heappush(heap, (_READY, -nxt.seq, nxt))


def _needed_nodes(roots, targets):
    """Nodes from which some target node can be reached (the only ones ``grad`` must run)."""
    needed = {}

    def visit(node):
        stack = [(node, iter(node.next_functions))]
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
                stack.append((nxt, iter(nxt.next_functions)))
                break
            else:
                stack.pop()
                path.discard(cur)
                needed[cur] = needed.get(cur, False) or cur in targets
                if needed[cur] and stack:
                    needed[stack[-1][0]] = True
    for r, _ in roots:
        visit(r)
    return needed


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None, allow_unused=False):
    """Run the graph backward from ``tensors`` seeded with ``grad_tensors``.

    Nodes run in descending creation order (``seq``): every consumer of a
    node was created after it, so when a node runs, all gradients for it have
    arrived. That order needs no dependency count, only a heap of the nodes
    reached so far (but see the module's note on post-accumulate-grad hooks).
    """
    roots = [_root_edge(tensors[0], 0)] if len(tensors) == 1 else [_root_edge(t, i) for i, t in enumerate(tensors)]
    capture = None
    if inputs is not None:
        capture = {}
        for i, t in enumerate(inputs):
            if not t._requires_grad:
                raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
            edge = (t.grad_fn, t._output_nr) if t.grad_fn is not None else (grad_accumulator(t), 0)
            capture.setdefault(edge, []).append(i)
        needed = _needed_nodes(roots, {n for n, _ in capture})
    buffers: dict = {}
    heap = []
    for (node, nr), g in zip(roots, grad_tensors):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * _n_outputs(node)
            heapq.heappush(heap, (-node.seq, id(node), node))
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    results = [None] * len(inputs) if inputs is not None else None
    deps = _accumulation_deps(roots) if capture is None and Tensor._post_acc_hooks_in_use else None

    prev_enabled, outer_callbacks, outer_capturing = STATE.enabled, _CALLBACKS.queue, _CALLBACKS.capturing
    STATE.enabled = create_graph
    _CALLBACKS.queue = callbacks = []
    _CALLBACKS.capturing = capture is not None
    try:
        while heap:
            node = heapq.heappop(heap)[2]
            grads = buffers.pop(node, None)
            if grads is None:
                continue  # an AccumulateGrad node queued when ready that has run already
            if node._tensor_hooks or node._pre_hooks or node._retained:
                grads = _run_pre_hooks(node, grads)
            if capture is not None:
                for nr, g in enumerate(grads):
                    for i in capture.get((node, nr), ()):
                        results[i] = g
                if not needed.get(node, False) or type(node) is AccumulateGrad:
                    continue  # nothing below it leads to an input asked for
            if type(node) is AccumulateGrad:
                g = grads[0]
                if g is not None:
                    grads[0] = None
                    node.accumulate(g, create_graph)
                continue
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
            for (nxt, nr), g in zip(node.next_functions, grad_inputs):
                if nxt is None or g is None:
                    continue
                if type(nxt) is AccumulateGrad:
                    leaf_dtype = nxt.variable._dtype
                    if g._dtype is not leaf_dtype:
                        g = g.to(leaf_dtype)  # as PyTorch's engine: grads match their input's dtype
                buf = buffers.get(nxt)
                if buf is None:
                    meta = nxt._out_meta
                    buf = buffers[nxt] = [None] * (1 if meta is None else len(meta))
                    heapq.heappush(heap, (-nxt.seq, id(nxt), nxt))
                buf[nr] = g if buf[nr] is None else buf[nr] + g
            if deps is not None:
                _delivered(node, deps, buffers, heap)
            grad_inputs = g = None  # the buffers alone hold the gradients now (see AccumulateGrad.accumulate)
        STATE.enabled = prev_enabled
        _run_callbacks(callbacks)
    finally:
        STATE.enabled, _CALLBACKS.queue, _CALLBACKS.capturing = prev_enabled, outer_callbacks, outer_capturing
    if inputs is not None:
        for i, r in enumerate(results):
            if r is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        return tuple(results)
    return None


def _n_outputs(node):
    meta = node._out_meta
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
