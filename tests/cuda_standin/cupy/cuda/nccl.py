"""STAND-IN for ``cupy.cuda.nccl`` (tests only, never shipped): NCCL's communicator on top of mpi4py.

It imitates the calls ember's ``nccl`` process-group backend makes. Stand-in GPU arrays live in host memory, so
the pointers it is given are host addresses: it reads and writes them through ``ctypes`` and moves the data with
MPI, at once (the stream argument is ignored; the stand-in's streams and events are always complete).

``get_unique_id()`` carries the MPI world rank of its caller; ``NcclCommunicator(ndev, commId, rank)`` sends that
rank its own world rank and NCCL rank, gets back the world ranks of all members in NCCL-rank order, and makes an
MPI communicator of them (``Create_group``: only the members take part, as with NCCL). The process that called
``get_unique_id()`` must be a member. MPI must be running (ember's backend starts it first).
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

available = True

NCCL_INT8, NCCL_CHAR = 0, 0
NCCL_UINT8 = 1
NCCL_INT32, NCCL_INT = 2, 2
NCCL_UINT32 = 3
NCCL_INT64 = 4
NCCL_UINT64 = 5
NCCL_FLOAT16, NCCL_HALF = 6, 6
NCCL_FLOAT32, NCCL_FLOAT = 7, 7
NCCL_FLOAT64, NCCL_DOUBLE = 8, 8
NCCL_BFLOAT16 = 9
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4

_DTYPES = {0: "int8", 1: "uint8", 2: "int32", 3: "uint32", 4: "int64", 5: "uint64", 6: "float16", 7: "float32",
           8: "float64", 9: "bfloat16"}
_TAG = 31_337  # the members' introductions on MPI's COMM_WORLD
_group: list = []  # the point-to-point calls between groupStart() and groupEnd()


class NcclError(RuntimeError):
    """What CuPy raises for a failed NCCL call."""


def _mpi():
    from mpi4py import MPI
    if not MPI.Is_initialized():
        raise NcclError("the NCCL stand-in runs on MPI, which is not started")
    return MPI


def get_version() -> int:
    return 22800


def get_unique_id() -> bytes:
    """128 bytes: the caller's MPI world rank, then random bytes."""
    return np.int64(_mpi().COMM_WORLD.Get_rank()).tobytes() + os.urandom(120)


def _dtype(datatype: int) -> np.dtype:
    name = _DTYPES[datatype]
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _view(ptr: int, count: int, datatype: int) -> np.ndarray:
    """The ``count`` elements at host address ``ptr`` as a NumPy array (no copy)."""
    dtype = _dtype(datatype)
    raw = (ctypes.c_uint8 * (count * dtype.itemsize)).from_address(ptr)
    return np.ctypeslib.as_array(raw).view(dtype)


def _reduce(parts: np.ndarray, op: int) -> np.ndarray:
    """Reduce the ranks' rows of ``parts`` (16-bit floats in float32, rounded once, as NCCL's kernels do)."""
    wide = parts.astype(np.float32) if parts.dtype.itemsize == 2 and parts.dtype.kind != "i" else parts
    if op == NCCL_SUM:
        out = wide.sum(axis=0, dtype=wide.dtype)
    elif op == NCCL_AVG:
        out = wide.sum(axis=0, dtype=wide.dtype) / len(parts)
    elif op == NCCL_PROD:
        out = wide.prod(axis=0, dtype=wide.dtype)
    elif op == NCCL_MAX:
        out = wide.max(axis=0)
    elif op == NCCL_MIN:
        out = wide.min(axis=0)
    else:
        raise NcclError(f"ncclInvalidArgument: unknown reduction {op}")
    return out.astype(parts.dtype)


def groupStart() -> None:  # noqa: N802 (NCCL's name)
    _group.append([])


def groupEnd() -> None:  # noqa: N802
    if not _group:
        raise NcclError("ncclInvalidUsage: groupEnd() without groupStart()")
    calls = _group.pop()
    if _group:  # nested: the outer group runs them
        _group[-1].extend(calls)
        return
    _run(calls)


def _run(calls) -> None:
    """Post every point-to-point call of a group at once and wait for the receives; a send takes a copy of its
    data and completes later (as NCCL's, queued on a stream: the receiver may post its receive afterwards)."""
    MPI = _mpi()
    receives = []
    for kind, comm, buf, peer in calls:
        if kind == "send":
            copy = np.array(buf, copy=True)
            _sends.append((comm.Isend(copy.view(np.uint8), dest=peer, tag=1), copy))
        else:
            receives.append(comm.Irecv(buf.view(np.uint8), source=peer, tag=1))
    MPI.Request.Waitall(receives)
    _sends[:] = [(req, copy) for req, copy in _sends if not req.Test()]


#: sends not known to have completed, with the copies of their data
_sends: list = []


class NcclCommunicator:
    """One rank of an NCCL communicator of ``ndev`` ranks, on an MPI communicator of its members."""

    def __init__(self, ndev: int, commId: bytes, rank: int, config=None):  # noqa: N803 (CuPy's names)
        MPI = _mpi()
        world = MPI.COMM_WORLD
        creator = int(np.frombuffer(bytes(commId)[:8], dtype=np.int64)[0])
        me = np.array([world.Get_rank(), rank], dtype=np.int64)
        members = np.empty(ndev, dtype=np.int64)
        if world.Get_rank() == creator:
            members[rank] = me[0]
            for _ in range(ndev - 1):
                intro = np.empty(2, dtype=np.int64)
                world.Recv(intro, source=MPI.ANY_SOURCE, tag=_TAG)
                members[intro[1]] = intro[0]
            for r in range(ndev):
                if members[r] != me[0]:
                    world.Send(members, dest=int(members[r]), tag=_TAG)
        else:
            world.Send(me, dest=creator, tag=_TAG)
            world.Recv(members, source=creator, tag=_TAG)
        self._comm = world.Create_group(world.Get_group().Incl(members.tolist()), tag=_TAG)
        if self._comm.Get_rank() != rank:
            raise NcclError(f"ncclInvalidUsage: rank {rank} is rank {self._comm.Get_rank()} of the members")
        from cupy.cuda import runtime
        self._device = runtime.getDevice()

    def size(self) -> int:
        return self._comm.Get_size()

    def rank_id(self) -> int:
        return self._comm.Get_rank()

    def device_id(self) -> int:
        return self._device

    def destroy(self) -> None:
        _mpi().Request.Waitall([req for req, _ in _sends])
        _sends.clear()
        if self._comm is not None:
            self._comm.Free()
            self._comm = None

    def abort(self) -> None:
        self.destroy()

    def check_async_error(self) -> None:
        """Nothing runs asynchronously in the stand-in."""

    def _gathered(self, sendbuf, count, datatype) -> np.ndarray:
        send = _view(sendbuf, count, datatype)
        parts = np.empty((self.size(), count), dtype=send.dtype)
        self._comm.Allgather(np.ascontiguousarray(send).view(np.uint8), parts.view(np.uint8))
        return parts

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):  # noqa: N802
        _view(recvbuf, count, datatype)[...] = _reduce(self._gathered(sendbuf, count, datatype), op)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        result = _reduce(self._gathered(sendbuf, count, datatype), op)
        if self.rank_id() == root:
            _view(recvbuf, count, datatype)[...] = result

    def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream):
        recv = _view(recvbuff, count, datatype)
        if self.rank_id() == root and sendbuff != recvbuff:
            recv[...] = _view(sendbuff, count, datatype)
        self._comm.Bcast(recv.view(np.uint8), root=root)

    def bcast(self, buff, count, datatype, root, stream):
        self.broadcast(buff, buff, count, datatype, root, stream)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):  # noqa: N802
        _view(recvbuf, count * self.size(), datatype)[...] = self._gathered(sendbuf, count, datatype).reshape(-1)

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):  # noqa: N802
        parts = self._gathered(sendbuf, recvcount * self.size(), datatype).reshape(self.size(), self.size(), -1)
        _view(recvbuf, recvcount, datatype)[...] = _reduce(parts[:, self.rank_id()], op)

    def send(self, sendbuf, count, datatype, peer, stream):
        self._p2p("send", _view(sendbuf, count, datatype), peer)

    def recv(self, recvbuf, count, datatype, peer, stream):
        self._p2p("recv", _view(recvbuf, count, datatype), peer)

    def _p2p(self, kind, buf, peer):
        if not 0 <= peer < self.size():
            raise NcclError(f"ncclInvalidArgument: peer {peer} is not a rank of a communicator of {self.size()}")
        if _group:
            _group[-1].append((kind, self._comm, buf, peer))
        else:
            _run([(kind, self._comm, buf, peer)])
