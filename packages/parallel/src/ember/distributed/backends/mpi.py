"""The built-in ``"mpi"`` process-group backend (a plugin, registered like a third party's): CPU tensors over MPI,
through mpi4py.

Every operation uses MPI's nonblocking calls (``Iallreduce``, ``Ibcast``, ``Isend``, ...) polled until the group's
deadline (see :mod:`._mpi_work`). A collective first exchanges a small metadata record between all ranks (see
:mod:`._mpi_meta`): that tells every rank who arrived (a timeout names the ranks that did not) and that all ranks
pass agreeing tensors (a mismatch is an error naming the ranks, never a call of MPI on disagreeing buffers). Data
moves in place, in the tensors' own NumPy arrays: no copies for contiguous tensors, except that ``float16`` and
``bfloat16`` tensors are reduced in float32 (MPI has no arithmetic for them).

>>> from ember.distributed.backends import mpi
>>> sorted(mpi.ember_distributed_backends())
['mpi']
"""
from __future__ import annotations

from collections import deque

import numpy as np

import ember
from ember import _sibling_api as core

from .._errors import DistBackendError, DistError
from .._failure import install_failure_handler
from .._reduce_op import ReduceOp
from ..backend import Backend
from . import _mpi_meta as meta
from ._mpi_import import MPI, start
from ._mpi_work import MPIWork, Pending

__all__ = ["MPIBackend", "create", "ember_distributed_backends"]

_P2P_HEADER = 14  # sender's group rank, data tag, then the tensor: dtype, ndim, 8 dims, numel, shape hash
_FLOAT_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
              ReduceOp.MAX: "MAX"}
_INT_OPS = {ReduceOp.SUM: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN", ReduceOp.MAX: "MAX",
            ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}
_BOOL_OPS = {ReduceOp.SUM: "LOR", ReduceOp.MAX: "LOR", ReduceOp.BOR: "LOR", ReduceOp.PRODUCT: "LAND",
             ReduceOp.MIN: "LAND", ReduceOp.BAND: "LAND", ReduceOp.BXOR: "LXOR"}
_TYPES = {"float32": "FLOAT", "float64": "DOUBLE", "int8": "INT8_T", "int16": "INT16_T", "int32": "INT32_T",
          "int64": "INT64_T", "uint8": "UINT8_T", "bool": "C_BOOL", "float16": "FLOAT", "bfloat16": "FLOAT"}


@ember.hookimpl
def ember_distributed_backends():
    return {"mpi": create}


def _abort(code: int) -> None:
    """End the whole MPI job (every rank) with exit status ``code``."""
    MPI.COMM_WORLD.Abort(code)


def create(rank: int, world_size: int, timeout) -> MPIBackend:
    """The backend of the default group: MPI's ``COMM_WORLD`` (MPI is started here if it is not running). ``rank``
    and ``world_size``, where not -1, must be what MPI says."""
    start()
    world = MPI.COMM_WORLD
    mpi_rank, mpi_size = world.Get_rank(), world.Get_size()
    # init_process_group installs it too, for every backend; here it already covers the ranks' meeting below
    install_failure_handler(mpi_rank, _abort)
    for what, given, actual in (("rank", rank, mpi_rank), ("world_size", world_size, mpi_size)):
        if given != -1 and given != actual:
            raise ValueError(f"init_process_group: {what}={given} was given (or set by the launcher in the "
                             f"environment), but MPI says this process is rank {mpi_rank} of {mpi_size}; start the "
                             "processes with mpiexec or ember-run, which agree with MPI")
    made = []
    MPIWork(_Bootstrap(mpi_rank, timeout), "init_process_group", _duplicate(world, made)).wait()
    return MPIBackend(made[0], list(range(mpi_size)), timeout, "the default group")


def _duplicate(world, made):
    """The steps of init_process_group: the ranks meet on COMM_WORLD (a tag users are unlikely to take: MPI's
    largest), so that a timeout names the missing ones, then duplicate it into ``made``."""
    size, rank, ranks = world.Get_size(), world.Get_rank(), list(range(world.Get_size()))
    record = meta.record(size, "init_process_group", 0)
    records, pending = _arrival(world, world.Get_attr(MPI.TAG_UB), record, size, rank, ranks, "MPI's COMM_WORLD",
                                "init_process_group")
    yield pending
    meta.check(records, ranks, meta.ANY_SHAPE)
    comm, request = world.Idup()
    yield Pending([request], lambda: "every rank arrived, but duplicating MPI's COMM_WORLD did not complete")
    made.append(comm)


def _arrival(comm, tag, record, size, me, ranks, label, operation):
    """Send ``record`` to every other rank of ``comm`` and receive theirs: ``(records, Pending)``, one row per rank;
    the phase's ``missing()`` names (by global rank, from ``ranks``) those whose record has not come."""
    records = np.empty((size, len(record)), dtype=np.int64)
    records[me] = record
    peers = [r for r in range(size) if r != me]
    receives = [comm.Irecv(records[r], source=r, tag=tag) for r in peers]
    sends = [comm.Isend(record, dest=r, tag=tag) for r in peers]

    def missing():
        absent = [ranks[r] for r, req in zip(peers, receives) if not req.Test()]
        return (f"rank{'s' if len(absent) > 1 else ''} {', '.join(map(str, absent))} of {label} did not arrive "
                f"(never entered {operation})" if absent else "every rank arrived")

    return records, Pending(receives + sends, missing, arrival=True)


class _Bootstrap:
    """What an MPIWork needs of its backend, before the backend exists."""

    def __init__(self, rank, timeout):
        self.global_rank, self.timeout_s, self.broken = rank, timeout.total_seconds(), ""


def _raw(arr):
    """``arr`` as a buffer MPI can take (bfloat16 has no buffer format: its bits as uint16)."""
    return arr.view(np.uint16) if arr.dtype.isbuiltin == 2 else arr


class MPIBackend(Backend):
    """One rank's side of a group over an MPI communicator ``comm`` (its own duplicate), whose group ranks are the
    global ``ranks``."""

    name = "mpi"

    def __init__(self, comm, ranks: list[int], timeout, label: str):
        self._coll, self._hdr, self._p2p = comm, comm.Dup(), comm.Dup()  # collectives, p2p headers, p2p data
        self.ranks, self.label, self.timeout_s = ranks, label, timeout.total_seconds()
        self._rank, self._size = comm.Get_rank(), comm.Get_size()
        self.global_rank = ranks[self._rank]
        self._tag_limit = comm.Get_attr(MPI.TAG_UB) + 1
        self._seq = 0  # collectives entered on this group
        self._arriving = deque()  # its collectives whose transfer is not posted yet, oldest first (see _mpi_work)
        self._sent = [0] * self._size  # messages sent to each group rank
        self.broken = ""  # why the group is unusable, once an operation timed out

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def supports_device(self, device) -> bool:
        return device.type == "cpu"

    def abort(self, code: int) -> None:
        _abort(code)

    def shutdown(self) -> None:
        for comm in (self._coll, self._hdr, self._p2p):
            comm.Free()

    # -- the collectives' frame: metadata exchange, check, transfer ----------------------------------------------
    def _collective(self, name, tensor, transfer, *, what=meta.SAME_SHAPE, shape=None, root=-1, op=None,
                    splits=None):
        if self.broken:
            raise DistBackendError(f"[rank {self.global_rank}] {name}: this process group cannot be used any more, "
                                   f"since an earlier operation failed: {self.broken}")
        seq = self._seq
        self._seq += 1
        if tensor is not None:
            shape = tuple(tensor.shape) if shape is None else shape
        record = meta.record(self._size, name, seq, dtype=None if tensor is None else tensor.dtype.name,
                             shape=shape, root=root, op=-1 if op is None else op.value, splits=splits)
        return MPIWork(self, name, self._steps(name, seq, record, what, transfer), seq, self._arriving)

    def _steps(self, name, seq, record, what, transfer):
        records, pending = _arrival(self._coll, 0, record, self._size, self._rank, self.ranks, self.label,
                                    f"{name} #{seq}")
        yield pending
        meta.check(records, self.ranks, what)
        if transfer is not None:
            yield from transfer()

    def _in_transfer(self):
        return f"every rank of {self.label} arrived, but the transfer did not complete (has a rank died or stalled?)"

    def _reduction(self, name, tensor, op):
        """``(MPI datatype, MPI op, whether to reduce a float32 copy)`` for reducing ``tensor`` with ``op``."""
        if not isinstance(op, ReduceOp):
            raise TypeError(f"{name}: op must be a dist.ReduceOp, but got {type(op).__name__} {op!r}")
        dtype = tensor.dtype
        ops = _BOOL_OPS if dtype == ember.bool else _INT_OPS if not dtype.is_floating_point else _FLOAT_OPS
        if op not in ops:
            kind = "bool" if dtype == ember.bool else "integer" if not dtype.is_floating_point else "floating-point"
            raise TypeError(f"{name}: ReduceOp.{op.name} is not defined for {kind} tensors ({dtype}); "
                            f"it takes {', '.join(o.name for o in ops)}")
        return getattr(MPI, _TYPES[dtype.name]), getattr(MPI, ops[op]), dtype.itemsize == 2 and dtype.is_floating_point

    def _finish_reduction(self, arr, buf, op):
        if op is ReduceOp.AVG:  # in the (float32) buffer: a float16 result is rounded once
            np.divide(buf, self._size, out=buf)
        if buf is not arr:
            arr[...] = buf

    # -- collectives ----------------------------------------------------------------------------------------------
    def barrier(self):
        return self._collective("barrier", None, None, what=meta.ANY_SHAPE)

    def all_reduce(self, tensor, op):
        arr = core.array(tensor)

        def transfer():
            mpi_type, mpi_op, upcast = self._reduction("all_reduce", tensor, op)  # after the records agree
            buf = arr.astype(np.float32) if upcast else arr
            yield Pending([self._coll.Iallreduce(MPI.IN_PLACE, [buf, mpi_type], mpi_op)], self._in_transfer)
            self._finish_reduction(arr, buf, op)
            core.mark_modified(tensor)
        return self._collective("all_reduce", tensor, transfer, op=op)

    def broadcast(self, tensor, root):
        arr = core.array(tensor)

        def transfer():
            yield Pending([self._coll.Ibcast([_raw(arr), MPI.BYTE], root=root)], self._in_transfer)
            if self._rank != root:
                core.mark_modified(tensor)
        return self._collective("broadcast", tensor, transfer, root=root)

    def reduce(self, tensor, root, op):
        arr = core.array(tensor)

        def transfer():
            mpi_type, mpi_op, upcast = self._reduction("reduce", tensor, op)  # after the records agree
            buf = arr.astype(np.float32) if upcast else arr
            if self._rank == root:
                request = self._coll.Ireduce(MPI.IN_PLACE, [buf, mpi_type], mpi_op, root=root)
            else:
                request = self._coll.Ireduce([buf, mpi_type], None, mpi_op, root=root)
            yield Pending([request], self._in_transfer)
            if self._rank == root:
                self._finish_reduction(arr, buf, op)
                core.mark_modified(tensor)
        return self._collective("reduce", tensor, transfer, root=root, op=op)

    def all_gather(self, outputs, tensor):
        arr = core.array(tensor)

        def transfer():
            gathered = np.empty((self._size,) + arr.shape, dtype=arr.dtype)
            yield Pending([self._coll.Iallgather([_raw(arr), MPI.BYTE], [_raw(gathered), MPI.BYTE])],
                          self._in_transfer)
            for out, part in zip(outputs, gathered):
                core.array(out)[...] = part
            core.mark_modified(*outputs)
        return self._collective("all_gather", tensor, transfer)

    def all_gather_into_tensor(self, output, tensor):
        def transfer():
            request = self._coll.Iallgather([_raw(core.array(tensor)), MPI.BYTE], [_raw(core.array(output)), MPI.BYTE])
            yield Pending([request], self._in_transfer)
            core.mark_modified(output)
        return self._collective("all_gather_into_tensor", tensor, transfer)

    def reduce_scatter_tensor(self, output, tensor, op):
        arr, out = core.array(tensor), core.array(output)

        def transfer():
            mpi_type, mpi_op, upcast = self._reduction("reduce_scatter_tensor", tensor, op)  # after the records agree
            send, recv = (arr.astype(np.float32), out.astype(np.float32)) if upcast else (arr, out)
            yield Pending([self._coll.Ireduce_scatter_block([send, mpi_type], [recv, mpi_type], mpi_op)],
                          self._in_transfer)
            self._finish_reduction(out, recv, op)
            core.mark_modified(output)
        return self._collective("reduce_scatter_tensor", tensor, transfer, op=op)

    def gather(self, tensor, outputs, root):
        arr = core.array(tensor)

        def transfer():
            gathered = np.empty((self._size,) + arr.shape, dtype=arr.dtype) if self._rank == root else None
            recv = None if gathered is None else [_raw(gathered), MPI.BYTE]
            yield Pending([self._coll.Igather([_raw(arr), MPI.BYTE], recv, root=root)], self._in_transfer)
            if gathered is not None:
                for out, part in zip(outputs, gathered):
                    core.array(out)[...] = part
                core.mark_modified(*outputs)
        return self._collective("gather", tensor, transfer, root=root)

    def scatter(self, tensor, inputs, root):
        arr = core.array(tensor)

        def transfer():
            send = None if inputs is None else [_raw(np.stack([core.array(t) for t in inputs])), MPI.BYTE]
            yield Pending([self._coll.Iscatter(send, [_raw(arr), MPI.BYTE], root=root)], self._in_transfer)
            core.mark_modified(tensor)
        return self._collective("scatter", tensor, transfer, root=root)

    def all_to_all_single(self, output, tensor, output_splits, input_splits):
        arr, out = core.array(tensor), core.array(output)
        row = arr.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64))

        def spec(buf, splits):
            counts = [s * row for s in splits]
            return [_raw(buf), (counts, np.cumsum([0] + counts[:-1]).tolist()), MPI.BYTE]

        def transfer():
            request = self._coll.Ialltoallv(spec(arr, input_splits), spec(out, output_splits))
            yield Pending([request], self._in_transfer)
            core.mark_modified(output)
        return self._collective("all_to_all_single", tensor, transfer, what=meta.SAME_ROW,
                                shape=tuple(tensor.shape[1:]), splits=(input_splits, output_splits))

    def new_group(self, ranks, timeout):
        self._collective("new_group", None, None, what="the same list of ranks", shape=ranks).wait()
        comm = self._coll.Create(self._coll.Get_group().Incl(ranks))
        return None if comm == MPI.COMM_NULL else MPIBackend(comm, ranks, timeout, f"the group of ranks {ranks}")

    # -- point to point --------------------------------------------------------------------------------------------
    def send(self, tensor, dst, tag):
        self._check_tag("send", tag)
        data_tag = self._sent[dst] % self._tag_limit
        self._sent[dst] += 1
        header = np.zeros(_P2P_HEADER, dtype=np.int64)
        header[:2] = self._rank, data_tag
        header[2:] = meta.tensor_fields(tensor.dtype.name, tensor.shape)
        arr = core.array(tensor)

        def steps():
            requests = [self._hdr.Isend(header, dest=dst, tag=tag),
                        self._p2p.Isend([_raw(arr), MPI.BYTE], dest=dst, tag=data_tag)]
            yield Pending(requests, lambda: f"rank {self.ranks[dst]} did not receive it (no matching recv, tag {tag})")
        return MPIWork(self, f"send to rank {self.ranks[dst]}", steps())

    def recv(self, tensor, src, tag):
        self._check_tag("recv", tag)
        arr = core.array(tensor)
        header = np.empty(_P2P_HEADER, dtype=np.int64)
        mine = meta.tensor_fields(tensor.dtype.name, tensor.shape)
        source = f"rank {self.ranks[src]}" if src is not None else "any rank"

        def steps():
            request = self._hdr.Irecv(header, source=MPI.ANY_SOURCE if src is None else src, tag=tag)
            yield Pending([request], lambda: f"{source} sent nothing with tag {tag}")
            sender = int(header[0])
            if (header[2:] != mine).any():
                # take the announced data anyway (and drop it), so that the sender's send completes
                scratch = np.empty(meta.tensor_nbytes(header[2:]), dtype=np.uint8)
                drain = self._p2p.Irecv([scratch, MPI.BYTE], source=sender, tag=int(header[1]))
                yield Pending([drain], lambda: f"rank {self.ranks[sender]} announced a tensor but its data never came")
                raise DistError(f"[rank {self.global_rank}] recv: rank {self.ranks[sender]} sent "
                                f"{meta.describe_tensor(header[2:])}, but this rank receives into "
                                f"{meta.describe_tensor(mine)}")
            data = self._p2p.Irecv([_raw(arr), MPI.BYTE], source=sender, tag=int(header[1]))
            yield Pending([data], lambda: f"rank {self.ranks[sender]} announced a tensor but its data never came")
            core.mark_modified(tensor)
            return self.ranks[sender]
        return MPIWork(self, f"recv from {source}", steps())

    def _check_tag(self, name, tag):
        if not isinstance(tag, int) or not 0 <= tag < self._tag_limit:
            raise ValueError(f"{name}: tag must be an int in [0, {self._tag_limit - 1}], but got {tag!r}")
