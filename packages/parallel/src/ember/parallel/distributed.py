"""``DistributedDataParallel``: data parallelism over processes, with PyTorch's name, arguments and behaviour.

Each process (rank) holds a replica of the model and trains on its own part of the data (``DistributedSampler``);
DDP makes the replicas start equal (parameters and buffers broadcast from rank 0), keeps the buffers equal
(re-broadcast from rank 0 before each forward) and averages the gradients over the ranks during backward, in
buckets whose all-reduce starts as soon as their last gradient is ready (see :mod:`._reducer`), so the optimizer
steps of all ranks stay equal: training on ``n`` ranks with batches of ``b`` equals training one process on the
concatenated batches of ``n * b`` (with a loss that is a mean over the batch).
"""
from __future__ import annotations

import contextlib

import ember
import ember.distributed as dist
from ember import nn

from ._reducer import Reducer
from .comm_hooks import allreduce_hook

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(nn.Module):
    """Wrap ``module`` so that its gradients are averaged over the ranks of ``process_group`` (None: the default
    group) during backward.

    ``bucket_cap_mb`` caps a bucket (MiB; the first bucket 1 MiB, as PyTorch's). ``broadcast_buffers`` re-sends
    rank 0's buffers before each forward. ``find_unused_parameters=True`` lets a forward leave parameters out of the
    loss (it walks the output's graph after each forward); without it a parameter that got no gradient is an error
    naming it, at the end of that backward. ``gradient_as_bucket_view=True`` makes each parameter's ``.grad``, once
    reduced, a view into its bucket's buffer (as PyTorch's: no copy of the averages into ``.grad``, and none into the
    bucket when the gradients accumulate into the views, that is with ``zero_grad(set_to_none=False)``).
    ``device_ids`` may name only the device the module's parameters are on (``[local_rank]`` for a model on
    ``cuda:local_rank``, as in PyTorch), ``output_device`` too; the wrapped model is ``ddp.module``, and
    ``ddp.state_dict()`` keys carry the ``module.`` prefix, as PyTorch's.

    On each rank of a job (``ember-run -n 2 script.py``)::

        import ember, ember.distributed as dist
        from ember.parallel import DistributedDataParallel as DDP
        dist.init_process_group()
        ddp = DDP(ember.nn.Linear(4, 2))
        ddp(ember.randn(8, 4)).sum().backward()  # gradients averaged over the ranks
    """

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers: bool = True,
                 process_group=None, bucket_cap_mb: float | None = 25, find_unused_parameters: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False):
        super().__init__()
        if not isinstance(module, nn.Module):
            raise TypeError(f"DistributedDataParallel: module must be an ember.nn.Module, but got "
                            f"{type(module).__name__}")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        #: the device of the replica (its parameters'), where DDP's own flags travel too
        self.device = named[0][1].device
        _check_devices(self.device, device_ids, output_device)
        if static_graph:
            raise ValueError("DistributedDataParallel: static_graph is not supported; leave it False")
        if bucket_cap_mb is None:
            bucket_cap_mb = 25
        if not isinstance(bucket_cap_mb, (int, float)) or bucket_cap_mb <= 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be a positive number (MiB), but got "
                             f"{bucket_cap_mb!r}")
        self.module = module
        self.process_group = process_group
        self.dim, self.broadcast_buffers = dim, broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self._joined = None  # the join() context in progress
        self._sync_module_states()
        self.reducer = Reducer([p for _, p in named], [n for n, _ in named], process_group,
                               int(bucket_cap_mb * 1024 * 1024), find_unused_parameters,
                               bool(gradient_as_bucket_view))

    def _sync_module_states(self) -> None:
        """Every rank's parameters and buffers become rank 0's (of the group)."""
        src = dist.get_global_rank(self.process_group, 0)
        tensors = [p for p in self.module.parameters()] + [b for b in self.module.buffers()]
        _broadcast_all(tensors, src, self.process_group)

    def forward(self, *inputs, **kwargs):
        """Broadcast the buffers (``broadcast_buffers``), run the module, and prepare the buckets for the backward
        (in training with grad enabled, outside ``no_sync()``)."""
        sync = ember.is_grad_enabled() and self.require_backward_grad_sync
        divisor = dist.get_world_size(self.process_group)
        if self._joined is not None:
            divisor, sync = self._joined.announce(sync)
        if self.broadcast_buffers:
            _broadcast_all(list(self.module.buffers()), dist.get_global_rank(self.process_group, 0), self.process_group)
        outputs = self.module(*inputs, **kwargs)
        if sync:
            self.reducer.prepare(outputs, divisor)
        else:
            self.reducer.active = False
        return outputs

    @contextlib.contextmanager
    def no_sync(self):
        """Within it, backward accumulates gradients locally, without communication; the first backward after it
        averages the accumulated gradients (gradient accumulation over several micro-batches).

        On each rank of a job (``ember-run -n 2 script.py``)::

            with ddp.no_sync():
                ddp(x1).sum().backward()  # local
            ddp(x2).sum().backward()      # averages the sum of both
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook) -> None:
        """Use ``hook(state, bucket)`` (see :mod:`ember.parallel.comm_hooks`) instead of the averaging all-reduce,
        for every bucket; once, before the first backward.

        >>> from ember.parallel.comm_hooks import fp16_compress_hook

        On each rank of a job (``ember-run -n 2 script.py``)::

            ddp.register_comm_hook(None, fp16_compress_hook)
        """
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable as hook(state, bucket), but got {hook!r}")
        if self.reducer.hook is not allreduce_hook:
            raise RuntimeError("register_comm_hook can only be called once.")
        self.reducer.hook, self.reducer.hook_state = hook, state

    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False):
        """A context for training loops whose ranks have different numbers of batches: a rank that has run out keeps
        answering the others' collectives (zero gradients) until every rank is done. Gradients are divided by the
        world size (``divide_by_initial_world_size``) or by the number of ranks still training.

        On each rank of a job (``ember-run -n 2 script.py``)::

            with ddp.join():
                for x, y in loader:  # not the same length on every rank
                    loss_fn(ddp(x), y).backward(); opt.step(); opt.zero_grad()
        """
        if throw_on_early_termination:
            raise ValueError("join: throw_on_early_termination=True is not supported")
        return _Join(self, divide_by_initial_world_size) if enable else contextlib.nullcontext()


def _check_devices(device, device_ids, output_device) -> None:
    """``device_ids`` and ``output_device`` may only name the replica's own ``device`` (one process per device)."""
    def same(d) -> bool:
        if isinstance(d, int) and not isinstance(d, bool):
            d = ember.device(device.type, d)
        try:
            d = ember.device(d)
        except (TypeError, ValueError, RuntimeError):
            return False
        return d.type == device.type and (d.index or 0) == (device.index or 0)

    ids_ok = device_ids is None or (isinstance(device_ids, (list, tuple)) and (
        len(device_ids) == 0 and device.type == "cpu" or len(device_ids) == 1 and same(device_ids[0])))
    if not ids_ok or not (output_device is None or same(output_device)):
        raise ValueError(f"DistributedDataParallel: device_ids={device_ids!r}, output_device={output_device!r}: "
                         f"ember's DDP runs one process per replica, and this replica's parameters are on {device}; "
                         f"pass device_ids=[{device!r}] (or None) and leave output_device None")


def _broadcast_all(tensors, src: int, process_group) -> None:
    """Global rank ``src``'s values of ``tensors`` into every rank's, coalesced: one broadcast per dtype, of the
    tensors of that dtype concatenated (in the given order, which is the module's on every rank)."""
    if dist.get_world_size(process_group) == 1:
        return
    by_dtype: dict = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    with ember.no_grad():
        flats = [(ember.cat([t.reshape(-1) for t in group]), group) for group in by_dtype.values()]
        works = [dist.broadcast(flat, src=src, group=process_group, async_op=True) for flat, _ in flats]
        for work in works:
            work.wait()
        if dist.get_rank() == src:
            return
        for flat, group in flats:
            offset = 0
            for t in group:
                t.copy_(flat[offset:offset + t.numel()].view(t.shape))
                offset += t.numel()


class _Join:
    """``ddp.join()``: each forward first all-reduces (active, syncs) over the ranks; a rank that left its loop
    answers with (0, 0) and replays the collectives of a forward and backward until no rank is active; then every
    rank takes the model of one that trained to the end."""

    def __init__(self, ddp: DistributedDataParallel, divide_by_initial_world_size: bool):
        self.ddp, self.initial = ddp, divide_by_initial_world_size

    def __enter__(self):
        self.ddp._joined = self
        return self

    def announce(self, sync: bool, active: bool = True) -> tuple[int, bool]:
        """All-reduce this rank's (active, sync); the divisor of this step's gradients and whether to sync."""
        flags = ember.tensor([int(active), int(active and sync)], dtype=ember.int64, device=self.ddp.device)
        dist.all_reduce(flags, group=self.ddp.process_group)
        n_active, n_sync = flags.tolist()
        divisor = dist.get_world_size(self.ddp.process_group) if self.initial else max(n_active, 1)
        return divisor, n_sync > 0

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.ddp._joined = None
            return False
        ddp = self.ddp
        try:
            last_joiner = True
            while True:
                flags = ember.tensor([0, 0], dtype=ember.int64, device=ddp.device)
                dist.all_reduce(flags, group=ddp.process_group)
                n_active, n_sync = flags.tolist()
                if n_active == 0:
                    self._sync_final_model(last_joiner)
                    return False
                last_joiner = False
                if ddp.broadcast_buffers:
                    first = dist.get_global_rank(ddp.process_group, 0)
                    _broadcast_all(list(ddp.module.buffers()), first, ddp.process_group)
                if n_sync:
                    divisor = dist.get_world_size(ddp.process_group) if self.initial else n_active
                    ddp.reducer.shadow_backward(divisor)
        finally:
            ddp._joined = None

    def _sync_final_model(self, last_joiner: bool) -> None:
        """The ranks that joined early skipped the last steps: every rank takes the parameters and buffers of the
        highest-numbered rank that trained to the end (PyTorch's ``_sync_final_model``)."""
        pg = self.ddp.process_group
        me = ember.tensor([dist.get_global_rank(pg, dist.get_rank(pg)) if last_joiner else -1], dtype=ember.int64,
                          device=self.ddp.device)
        dist.all_reduce(me, op=dist.ReduceOp.MAX, group=pg)
        module = self.ddp.module
        _broadcast_all([*module.parameters(), *module.buffers()], int(me.item()), pg)
