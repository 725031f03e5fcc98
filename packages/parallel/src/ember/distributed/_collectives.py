"""The collectives and point-to-point operations on tensors, with torch.distributed's names and arguments.

Each works in place on the tensors given (contiguous, on a device the group's backend serves), on ``group``
(default: the default group); ``src``/``dst`` are global ranks. With ``async_op=True`` a collective returns a
:class:`~ember.distributed.Work` at once (the ranks' arrival, the check that their tensors agree and the data's
transfer move on in ``work.is_completed()`` and ``work.wait()``, which raises a mismatch's error); otherwise it
returns None when done. A rank outside ``group`` gets None and nothing happens, as in PyTorch.

On each rank of a job (``ember-run -n 2 script.py``)::

    import ember, ember.distributed as dist
    dist.init_process_group()
    t = ember.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    print(t)  # tensor([3.]) on both ranks
"""
from __future__ import annotations

import ember

from ._group import ProcessGroup, resolve
from ._reduce_op import ReduceOp

__all__ = ["barrier", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "reduce_scatter_tensor", "gather", "scatter", "all_to_all_single", "send", "recv", "isend", "irecv"]


def _member(group: ProcessGroup | None) -> ProcessGroup | None:
    pg = resolve(group)
    return pg if pg.backend is not None else None


def _tensor(name: str, pg: ProcessGroup, t, arg: str = "tensor"):
    if not isinstance(t, ember.Tensor):
        raise TypeError(f"{name}: {arg} must be an ember.Tensor, but got {type(t).__name__}")
    if not pg.backend.supports_device(t.device):
        raise RuntimeError(f"[rank {pg.ranks[pg.rank()]}] {name}: the {pg.backend_name!r} backend of {pg.label} "
                           f"cannot serve {arg} on device {t.device}; {pg.backend.refusal(t.device)}")
    if not t.is_contiguous():
        raise ValueError(f"{name}: Tensors must be contiguous ({arg} is not; call .contiguous() first)")
    return t


def _like(name: str, pg: ProcessGroup, tensors, reference, arg: str, count: int | None = None):
    """Check a list of tensors: ``count`` of them (default: the group's size), each of ``reference``'s shape and
    dtype."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}: {arg} must be a list of tensors, but got {type(tensors).__name__}")
    count = pg.size() if count is None else count
    if len(tensors) != count:
        raise ValueError(f"{name}: {arg} must hold {count} tensors (one per rank of {pg.label}), but holds "
                         f"{len(tensors)}")
    for i, t in enumerate(tensors):
        _tensor(name, pg, t, f"{arg}[{i}]")
        if t.shape != reference.shape or t.dtype != reference.dtype:
            raise ValueError(f"{name}: {arg}[{i}] is a {t.dtype} tensor of shape {tuple(t.shape)}, but must be "
                             f"{reference.dtype} of shape {tuple(reference.shape)}, as the tensor is")
    return list(tensors)


def _group_rank(name: str, pg: ProcessGroup, rank, arg: str) -> int:
    if not isinstance(rank, int) or rank not in pg.ranks:
        raise ValueError(f"{name}: {arg}={rank!r} is not a rank of {pg.label} (its global ranks: {pg.ranks})")
    return pg.ranks.index(rank)


def _op(name: str, op) -> ReduceOp:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a dist.ReduceOp (SUM, AVG, PRODUCT, MIN, MAX, ...), but got {op!r}")
    return op


def _done(work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids=None):
    """Wait until every rank of ``group`` has entered the barrier."""
    pg = _member(group)
    return None if pg is None else _done(pg.backend.barrier(), async_op)


def all_reduce(tensor, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None, async_op: bool = False):
    """Reduce ``tensor`` over all ranks with ``op``; every rank's ``tensor`` holds the result.

    Every rank must pass a tensor of the same shape and dtype (an error names the ranks that differ).
    """
    pg = _member(group)
    if pg is None:
        return None
    return _done(pg.backend.all_reduce(_tensor("all_reduce", pg, tensor), _op("all_reduce", op)), async_op)


def broadcast(tensor, src: int, group: ProcessGroup | None = None, async_op: bool = False):
    """Copy global rank ``src``'s ``tensor`` into every other rank's ``tensor``."""
    pg = _member(group)
    if pg is None:
        return None
    root = _group_rank("broadcast", pg, src, "src")
    return _done(pg.backend.broadcast(_tensor("broadcast", pg, tensor), root), async_op)


def reduce(tensor, dst: int, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
           async_op: bool = False):
    """Reduce ``tensor`` over all ranks with ``op`` into global rank ``dst``'s ``tensor``; the others' tensors are
    left as they were."""
    pg = _member(group)
    if pg is None:
        return None
    root = _group_rank("reduce", pg, dst, "dst")
    return _done(pg.backend.reduce(_tensor("reduce", pg, tensor), root, _op("reduce", op)), async_op)


def all_gather(tensor_list, tensor, group: ProcessGroup | None = None, async_op: bool = False):
    """Every rank's ``tensor`` into ``tensor_list`` (one tensor per rank, in rank order), on every rank."""
    pg = _member(group)
    if pg is None:
        return None
    tensor = _tensor("all_gather", pg, tensor)
    outputs = _like("all_gather", pg, tensor_list, tensor, "tensor_list")
    return _done(pg.backend.all_gather(outputs, tensor), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group: ProcessGroup | None = None, async_op: bool = False):
    """Every rank's ``input_tensor``, concatenated in rank order, into ``output_tensor`` (of ``world_size`` times
    as many elements: stacked or concatenated along dimension 0)."""
    pg = _member(group)
    if pg is None:
        return None
    name = "all_gather_into_tensor"
    inp, out = _tensor(name, pg, input_tensor, "input_tensor"), _tensor(name, pg, output_tensor, "output_tensor")
    _sizes(name, out, "output_tensor", inp.numel() * pg.size(), inp)
    return _done(pg.backend.all_gather_into_tensor(out, inp), async_op)


def _sizes(name, t, arg, numel, reference):
    if t.numel() != numel or t.dtype != reference.dtype:
        raise ValueError(f"{name}: {arg} must be a {reference.dtype} tensor of {numel} elements (world size times "
                         f"or divided by the other's), but got {t.dtype} of shape {tuple(t.shape)}")


def reduce_scatter_tensor(output, input, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
                          async_op: bool = False):
    """Reduce ``input`` over all ranks with ``op`` and give rank i the i-th of ``world_size`` equal parts (along
    dimension 0, as a flat run of elements) in ``output``."""
    pg = _member(group)
    if pg is None:
        return None
    name = "reduce_scatter_tensor"
    inp, out = _tensor(name, pg, input, "input"), _tensor(name, pg, output, "output")
    _sizes(name, inp, "input", out.numel() * pg.size(), out)
    return _done(pg.backend.reduce_scatter_tensor(out, inp, _op(name, op)), async_op)


def gather(tensor, gather_list=None, dst: int = 0, group: ProcessGroup | None = None, async_op: bool = False):
    """Every rank's ``tensor`` into ``gather_list`` on global rank ``dst`` (one tensor per rank, in rank order);
    the other ranks pass no ``gather_list``."""
    pg = _member(group)
    if pg is None:
        return None
    tensor, root = _tensor("gather", pg, tensor), _group_rank("gather", pg, dst, "dst")
    outputs = _root_list("gather", pg, root, gather_list, tensor, "gather_list")
    return _done(pg.backend.gather(tensor, outputs, root), async_op)


def _root_list(name, pg, root, tensors, reference, arg):
    if pg.rank() == root:
        return _like(name, pg, tensors if tensors is not None else [], reference, arg)
    if tensors:
        kind = "destination" if name == "gather" else "source"
        raise ValueError(f"{name}: Argument ``{arg}`` must NOT be specified on non-{kind} ranks.")
    return None


def scatter(tensor, scatter_list=None, src: int = 0, group: ProcessGroup | None = None, async_op: bool = False):
    """Give rank i the i-th tensor of global rank ``src``'s ``scatter_list``, in its ``tensor``; the other ranks
    pass no ``scatter_list``."""
    pg = _member(group)
    if pg is None:
        return None
    tensor, root = _tensor("scatter", pg, tensor), _group_rank("scatter", pg, src, "src")
    inputs = _root_list("scatter", pg, root, scatter_list, tensor, "scatter_list")
    return _done(pg.backend.scatter(tensor, inputs, root), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group: ProcessGroup | None = None, async_op: bool = False):
    """Split ``input`` along dimension 0 into one part per rank (``input_split_sizes`` rows each, default equal
    parts), send part j to rank j, and put what rank i sent into ``output``'s part i (``output_split_sizes``)."""
    pg = _member(group)
    if pg is None:
        return None
    name = "all_to_all_single"
    inp, out = _tensor(name, pg, input, "input"), _tensor(name, pg, output, "output")
    if inp.dim() == 0 or out.dim() == 0 or inp.shape[1:] != out.shape[1:] or inp.dtype != out.dtype:
        raise ValueError(f"{name}: input and output must have the same dtype and the same size of dimension 1 "
                         f"onwards, but got {inp.dtype} {tuple(inp.shape)} and {out.dtype} {tuple(out.shape)}")
    return _done(pg.backend.all_to_all_single(out, inp, _splits(name, pg, output_split_sizes, out, "output"),
                                              _splits(name, pg, input_split_sizes, inp, "input")), async_op)


def _splits(name, pg, splits, t, arg):
    n, rows = pg.size(), t.shape[0]
    if splits is None or len(splits) == 0:
        if rows % n:
            raise ValueError(f"{name}: {arg} has {rows} rows, which do not split evenly over {n} ranks; "
                             f"pass {arg}_split_sizes")
        return [rows // n] * n
    splits = [int(s) for s in splits]
    if len(splits) != n or any(s < 0 for s in splits) or sum(splits) != rows:
        raise ValueError(f"{name}: {arg}_split_sizes must be {n} non-negative ints summing to {arg}'s {rows} rows, "
                         f"but got {splits}")
    return splits


def isend(tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0):
    """Send ``tensor`` to global rank ``dst`` without waiting; returns a Work (None outside ``group``)."""
    pg = _member(group)
    if pg is None:
        return None
    peer = _group_rank("isend", pg, dst, "dst")
    return pg.backend.send(_tensor("isend", pg, tensor), peer, tag)


def irecv(tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0):
    """Receive into ``tensor`` from global rank ``src`` (None: any rank) without waiting; returns a Work whose
    ``source_rank()`` names the sender once it finished (None outside ``group``)."""
    pg = _member(group)
    if pg is None:
        return None
    peer = None if src is None else _group_rank("irecv", pg, src, "src")
    return pg.backend.recv(_tensor("irecv", pg, tensor), peer, tag)


def send(tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> None:
    """Send ``tensor`` to global rank ``dst``, whose ``recv`` must take a tensor of the same shape and dtype."""
    work = isend(tensor, dst, group, tag)
    if work is not None:
        work.wait()


def recv(tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0) -> int:
    """Receive into ``tensor`` from global rank ``src`` (None: any rank); returns the sender's global rank (-1
    outside ``group``)."""
    work = irecv(tensor, src, group, tag)
    if work is None:
        return -1
    work.wait()
    return work.source_rank()
