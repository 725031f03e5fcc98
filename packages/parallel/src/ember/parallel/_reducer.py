"""DistributedDataParallel's reducer: parameters in buckets, gradients copied into a bucket's flat buffer as each
becomes ready during backward (post-accumulate-grad hooks), a bucket's communication launched non-blocking as soon
as its last gradient arrived (buckets launch in order, so that every rank issues the same collectives in the same
order), moved on (``is_completed``: MPI moves data only while it is called) from every later gradient hook, so
that communication overlaps the rest of backward, and all of them waited for in a final callback at the end of
backward, which writes the averaged gradients back into the parameters' ``.grad``.

Without a comm hook, a gradient is divided by the number of ranks as it is copied into its bucket (one pass over
it, not a copy and then a division of the whole bucket), and a ``.grad`` that this backward created gets the
bucket's averaged part itself at the end (the bucket takes a fresh buffer for the next backward) instead of a copy
of it; a ``.grad`` that existed before backward (accumulation, ``no_sync()``) keeps its identity and gets a copy.

Buckets follow PyTorch's ``compute_bucket_assignment_by_size``: parameters in reverse registration order (the order
backward produces their gradients in), one dtype per bucket, a bucket closed once it holds ``cap`` bytes or more;
the first bucket's cap is 1 MiB (``dist._DEFAULT_FIRST_BUCKET_BYTES``) so that communication starts early, or the
cap given if that is smaller.
"""
from __future__ import annotations

import weakref

import ember
import ember.distributed as dist
from ember import _sibling_api as core

from .comm_hooks import CommFuture, GradBucket, allreduce_hook, summed

__all__ = ["Reducer", "assign_buckets", "FIRST_BUCKET_BYTES"]

#: the first bucket's cap, as PyTorch's ``dist._DEFAULT_FIRST_BUCKET_BYTES``
FIRST_BUCKET_BYTES = 1024 * 1024


def assign_buckets(params: list, cap_bytes: int, first_cap_bytes: int = FIRST_BUCKET_BYTES) -> list[list[int]]:
    """Indices of ``params`` grouped into buckets, in launch order: reverse registration order, one dtype per
    bucket, a bucket closed once it reaches its cap (the smaller of ``first_cap_bytes`` and ``cap_bytes`` for the
    first, ``cap_bytes`` after).

    >>> import ember
    >>> ps = [ember.zeros(100), ember.zeros(200), ember.zeros(50), ember.zeros(50)]  # 400, 800, 200, 200 bytes
    >>> assign_buckets(ps, cap_bytes=1000, first_cap_bytes=300)
    [[3, 2], [1, 0]]
    """
    buckets, open_buckets, cap = [], {}, min(first_cap_bytes, cap_bytes)
    for i in reversed(range(len(params))):
        p = params[i]
        entry = open_buckets.setdefault(p.dtype, [[], 0])
        entry[0].append(i)
        entry[1] += p.numel() * p.element_size()
        if entry[1] >= cap:
            buckets.append(entry[0])
            del open_buckets[p.dtype]
            cap = cap_bytes
    buckets.extend(entry[0] for entry in open_buckets.values())
    return buckets


class _Bucket:
    __slots__ = ("index", "indices", "params", "offsets", "buffer", "views", "pending", "future", "given")

    def __init__(self, index, indices, params):
        self.index, self.indices, self.params = index, indices, params
        self.offsets, total = [], 0
        for p in params:
            self.offsets.append(total)
            total += p.numel()
        self.pending, self.future = 0, None
        self.renew(ember.zeros(total, dtype=params[0].dtype, device=params[0].device))

    def renew(self, buffer) -> None:
        """Take ``buffer`` as the flat buffer (the old one's views became ``.grad`` tensors)."""
        self.buffer, self.given = buffer, False  # given: some view of it is a parameter's .grad now
        #: each parameter's part of the buffer, in its shape (its ``.grad`` with ``gradient_as_bucket_view``)
        self.views = [buffer[o:o + p.numel()].view(p.shape) for o, p in zip(self.offsets, self.params)]


class Reducer:
    """The buckets of ``params`` (named ``names``) over ``process_group``, and the state of one backward."""

    def __init__(self, params: list, names: list[str], process_group, cap_bytes: int, find_unused: bool,
                 grad_as_view: bool = False):
        self.params, self.names, self.process_group, self.find_unused = params, names, process_group, find_unused
        self.grad_as_view = grad_as_view  # gradient_as_bucket_view: the .grad are the buckets' views
        self.buckets = [_Bucket(b, idx, [params[i] for i in idx])
                        for b, idx in enumerate(assign_buckets(params, cap_bytes))]
        self.where = {i: (bucket, pos) for bucket in self.buckets for pos, i in enumerate(bucket.indices)}
        self.hook, self.hook_state = allreduce_hook, process_group
        self.group_size = dist.get_world_size(process_group)  # fixed for the group's life: once, not per bucket
        self.divisor = self.group_size
        # without a comm hook, gradients are divided as they are copied into the buckets (arrays whose ufuncs take
        # out=, NumPy's and CuPy's); with gradient_as_bucket_view backward writes into the buckets: no copy to fuse
        self.fuse_division = (not grad_as_view and
                              all(hasattr(type(core.array(b.buffer)), "__array_ufunc__") for b in self.buckets))
        self.fresh: list[bool] = []  # whether a parameter had no .grad when this backward reached the reducer
        self.active = False  # a backward that must sync gradients is expected
        self.ready: list[bool] = []
        self.used: list[bool] = []
        self.unused: list[int] = []  # parameters the outputs do not depend on (find_unused), until backward starts
        self.launched = 0
        self.completed = 0  # launched buckets known complete (the ones before this one)
        self.callback_queued = False
        # the hooks hold the reducer weakly, and go once it is collected (with its DDP module): a parameter that
        # outlives its DDP wrapper keeps neither the reducer and its buckets alive nor a hook calling into them
        me = weakref.ref(self)
        handles = [p.register_post_accumulate_grad_hook(_hook_for(me, i)) for i, p in enumerate(params)]
        weakref.finalize(self, _remove_handles, handles)

    # -- one backward --------------------------------------------------------------------------------------------
    def prepare(self, outputs, divisor: int) -> None:
        """A forward that the next backward must sync ran, giving ``outputs``; with ``find_unused``, find the
        parameters the outputs do not depend on (they count as ready, with zero gradients, once backward starts)."""
        self.active, self.launched, self.completed, self.callback_queued = True, 0, 0, False
        self.divisor = divisor
        self.ready = [False] * len(self.params)
        self.used = [False] * len(self.params)
        for bucket in self.buckets:
            bucket.pending, bucket.future = len(bucket.params), None
        self.unused = []
        if self.find_unused:
            reachable = _reachable_leaves(outputs)
            self.unused = [i for i, p in enumerate(self.params) if id(p) not in reachable]

    def on_grad(self, i: int, grad) -> None:
        """Parameter ``i``'s gradient ``grad`` is complete (its post-accumulate-grad hook). The first one of a
        backward queues the final callback and marks the unused parameters ready (as PyTorch's reducer, so that
        buckets launch during backward only, in the same place among the backward's other collectives on every
        rank)."""
        if not self.active:
            return  # no_sync(), or a backward no DDP forward prepared: gradients stay local
        if not self.callback_queued:
            core.queue_callback(self.finish)
            self.callback_queued = True
            # .grad that this backward creates may become the buckets' averaged parts (no copy back at the end);
            # parameter i's own .grad already exists here, so it is copied
            self.fresh = [p.grad is None for p in self.params]
            unused, self.unused = self.unused, []
            for j in unused:  # as PyTorch's: a .grad accumulated before (under no_sync()) still counts; zeros if None
                self.mark_ready(j, self.params[j].grad)
        self.used[i] = True  # used in this backward (not so an unused parameter carrying an older .grad)
        self.mark_ready(i, grad)

    def mark_ready(self, i: int, grad) -> None:
        """Parameter ``i``'s gradient is ``grad`` (None: none at all, zeros): into its bucket, and launch the buckets
        that are complete, in order."""
        if self.ready[i]:
            raise RuntimeError(f"DistributedDataParallel: parameter {self.names[i]!r} got its gradient twice in one "
                               "backward (a second backward through the same forward, or a reentrant backward); "
                               "run a forward through DDP before each backward")
        bucket, pos = self.where[i]
        view = bucket.views[pos]
        with ember.no_grad():
            if grad is None:
                view.zero_()
            elif self.hook is allreduce_hook and self.fuse_division:
                core.array_namespace(view).multiply(core.array(grad), 1.0 / self.divisor, out=core.array(view))
            elif grad is not view:  # with gradient_as_bucket_view, backward accumulated into the view itself
                view.copy_(grad)
                if self.grad_as_view:
                    self.params[i].grad = view
        self.ready[i] = True
        bucket.pending -= 1
        while self.launched < len(self.buckets) and self.buckets[self.launched].pending == 0:
            self._launch(self.buckets[self.launched])
            self.launched += 1
        self._progress()

    def _progress(self) -> None:
        """Move the launched buckets' communication on, oldest first, without blocking."""
        while self.completed < self.launched:
            future = self.buckets[self.completed].future
            if not isinstance(future, CommFuture) or not future._progress():
                return
            self.completed += 1

    def _launch(self, bucket: _Bucket) -> None:
        if self.hook is allreduce_hook and self.fuse_division:  # divided already, as the gradients came in
            bucket.future = summed(self.process_group, bucket.buffer)
            return
        grad_bucket = GradBucket(bucket.index, bucket.buffer, bucket.params, bucket.offsets,
                                 bucket.index == len(self.buckets) - 1)
        if self.hook is allreduce_hook and self.divisor != self.group_size:
            bucket.buffer.mul_(self.group_size / self.divisor)  # join(): fewer ranks active
        bucket.future = self.hook(self.hook_state, grad_bucket)

    def finish(self) -> None:
        """The final callback of the backward: wait for every bucket, write the averaged gradients back."""
        self.active = False
        if self.launched < len(self.buckets):
            for bucket in self.buckets[:self.launched]:
                bucket.future.wait()
            missing = [self.names[i] for i, r in enumerate(self.ready) if not r]
            raise RuntimeError(
                "DistributedDataParallel: these parameters got no gradient in this backward, so their buckets were "
                f"never reduced: {', '.join(missing)}. The forward did not use them to produce the loss. Pass "
                "find_unused_parameters=True to DistributedDataParallel if some parameters are legitimately "
                "unused, or make sure every parameter takes part in computing the loss.")
        globally_used = self._globally_used() if self.find_unused else None
        with ember.no_grad():
            for bucket in self.buckets:
                result = bucket.future.wait()
                bucket.future = None
                if self.grad_as_view and result is not bucket.buffer:
                    bucket.buffer.copy_(result)  # a comm hook's own tensor: into the buffer the .grad view
                for pos, (i, p) in enumerate(zip(bucket.indices, bucket.params)):
                    if globally_used is not None and not globally_used[i]:
                        continue  # no rank used it: its .grad stays as it was, as PyTorch's
                    if self.grad_as_view:
                        p.grad = bucket.views[pos]  # already it, unless this rank did not use p
                        continue
                    if result is bucket.buffer and self.fresh[i]:
                        p.grad = bucket.views[pos]  # created by this backward: the average itself, no copy
                        bucket.given = True
                        continue
                    avg = (bucket.views[pos] if result is bucket.buffer
                           else result[bucket.offsets[pos]:bucket.offsets[pos] + p.numel()].view(p.shape))
                    if p.grad is None:
                        p.grad = avg.clone()
                    else:
                        p.grad.copy_(avg)
                if bucket.given:  # the next backward must not write into those .grad
                    bucket.renew(ember.empty_like(bucket.buffer))

    def _globally_used(self) -> list[bool]:
        # on the parameters' device: a group on NCCL moves CUDA tensors only
        mask = ember.tensor([int(u) for u in self.used], dtype=ember.int32, device=self.params[0].device)
        dist.all_reduce(mask, op=dist.ReduceOp.MAX, group=self.process_group)
        return [bool(v) for v in mask.tolist()]

    # -- what a rank that has run out of data (join()) does in place of a backward -------------------------------
    def shadow_backward(self, divisor: int) -> None:
        """Match the collectives of a backward of the ranks still training, contributing zero gradients."""
        self.divisor = divisor
        for bucket in self.buckets:
            bucket.buffer.zero_()
            self._launch(bucket)
        if self.find_unused:
            self.used = [False] * len(self.params)
            self._globally_used()
        for bucket in self.buckets:
            bucket.future.wait()
            bucket.future = None


def _hook_for(reducer_ref, i: int):
    """Parameter ``i``'s post-accumulate-grad hook, holding its reducer weakly."""
    def hook(param):
        reducer = reducer_ref()
        if reducer is not None:
            reducer.on_grad(i, param.grad)
    return hook


def _remove_handles(handles) -> None:
    for handle in handles:
        handle.remove()


def _reachable_leaves(outputs) -> set:
    """ids of the leaves that the autograd graphs of the tensors in ``outputs`` (nested tuples, lists, dicts)
    accumulate into."""
    stack, seen, leaves = [], set(), set()
    pending = [outputs]
    while pending:
        obj = pending.pop()
        if isinstance(obj, ember.Tensor):
            if obj.grad_fn is not None:
                stack.append(obj.grad_fn)
            elif obj.requires_grad:
                leaves.add(id(obj))
        elif isinstance(obj, (list, tuple)):
            pending.extend(obj)
        elif isinstance(obj, dict):
            pending.extend(obj.values())
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)
        if variable is not None:
            leaves.add(id(variable))
        stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return leaves
