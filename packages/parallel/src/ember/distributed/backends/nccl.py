"""The ``"nccl"`` process-group backend (a plugin, registered like a third party's): CUDA tensors over NCCL,
through CuPy's bindings (``cupy.cuda.nccl``), bootstrapped over MPI.

``init_process_group("nccl")`` starts MPI and makes an MPI group beside the NCCL one (the *control* group). Every
collective first goes through the control group's meeting, exactly as on the ``mpi`` backend (see
:mod:`._mpi_meta`): the ranks that did not arrive within the timeout are named, and tensors that disagree across
ranks are an error naming the ranks, so NCCL is never handed buffers that disagree. Then the NCCL call is queued on
the current CUDA stream of the tensor's device, and the operation completes when a CUDA event recorded after it
has completed (polled until the group's timeout, like MPI's requests).

``init_process_group`` also makes the NCCL communicator: each rank takes the GPU of its local rank on its host
(``LOCAL_RANK`` where the launcher set it, modulo the host's GPU count; two ranks on one GPU are an error naming
them), and rank 0's ``get_unique_id()`` travels over the control group. A rank's CUDA tensors must be on its GPU
(``cuda:LOCAL_RANK``; ``group.backend.device`` says which). Point-to-point operations announce the tensor over MPI
(so ``recv`` from any rank works and a mismatch is an error naming the sender) and move the data over NCCL; like
every NCCL operation they run in stream order with the collectives, so ranks must issue them in a matching order.

On each rank of a job (``ember-run -n 2 train.py``)::

    import os, ember, ember.distributed as dist
    dist.init_process_group("nccl")
    t = ember.ones(4, device=f"cuda:{os.environ['LOCAL_RANK']}")
    dist.all_reduce(t)  # tensor([2., 2., 2., 2.], device='cuda:...') on both ranks

>>> from ember.distributed.backends import nccl
>>> sorted(nccl.ember_distributed_backends())
['nccl']
"""
from __future__ import annotations

import os
import zlib

import numpy as np

import ember
from ember import _sibling_api as core

from .._errors import DistBackendError, DistError
from ..backend import Backend
from . import _mpi_meta as meta
from . import mpi
from ._mpi_import import MPI
from ._mpi_work import MPIWork, Pending
from ._nccl_import import load
from ._nccl_types import reduction

__all__ = ["NCCLBackend", "create", "ember_distributed_backends"]

_HEADER = 13  # sender's group rank, then the tensor: dtype, ndim, 8 dims, numel, shape hash


@ember.hookimpl
def ember_distributed_backends():
    return {"nccl": create}


def create(rank: int, world_size: int, timeout) -> NCCLBackend:
    """The backend of the default group: CuPy's NCCL checked first (a clear error if it is missing), then MPI
    started and its control group made (``rank``/``world_size`` checked as on the ``mpi`` backend)."""
    cupy, nccl = load("nccl")
    return NCCLBackend(mpi.create(rank, world_size, timeout), cupy, nccl)


class _EventDone:
    """A CUDA event recorded after queued NCCL work, seen as an MPI request (``Test()``) for :class:`Pending`;
    while it is not done, an error NCCL reports for the communicator (a peer failed) ends the wait, labelled
    with ``where``."""

    __slots__ = ("event", "comm", "where")

    def __init__(self, event, comm, where: str):
        self.event, self.comm, self.where = event, comm, where

    def Test(self) -> bool:  # noqa: N802 (MPI's name)
        if self.event.done:
            return True
        try:
            self.comm.check_async_error()
        except Exception as exc:  # CuPy's NcclError
            raise DistBackendError(f"{self.where}: NCCL reported an error: {exc}") from exc
        return False


class NCCLBackend(Backend):
    """One rank's side of a group on NCCL, beside ``control`` (the MPI backend of the same ranks) that runs the
    ranks' meetings and the point-to-point headers (and, in an ``auto`` group, moves the CPU tensors). The NCCL
    communicator is made here, by every rank of the group together, on GPU ``gpu`` (None: the rank's local rank).
    """

    name = "nccl"

    def __init__(self, control, cupy, nccl, gpu: int | None = None):
        self._control, self._cupy, self._nccl = control, cupy, nccl
        self._comm = None  # the NCCL communicator
        self._device = gpu  # the GPU index it is on
        MPIWork(control, "init_process_group" if gpu is None else "new_group", self._connect(gpu)).wait()
        self._hdr = control._coll.Dup()  # headers of point-to-point operations on CUDA tensors

    @property
    def control(self):
        """The MPI backend of the same ranks (meetings, headers; CPU tensors in an ``auto`` group)."""
        return self._control

    def rank(self) -> int:
        return self._control.rank()

    def size(self) -> int:
        return self._control.size()

    def supports_device(self, device) -> bool:
        return device.type == "cuda"

    def refusal(self, device) -> str:
        return (f"NCCL moves CUDA tensors only: move it to cuda:{self._device} (.to('cuda:{self._device}')), or make "
                "the group with backend='auto' (NCCL for CUDA tensors, MPI for CPU tensors) or backend='mpi'")

    def abort(self, code: int) -> None:
        self._control.abort(code)

    def shutdown(self) -> None:
        self.release()
        self._control.shutdown()

    def release(self) -> None:
        """Free the NCCL communicator and the header channel, leaving the control group to its owner."""
        if self._comm is not None:
            self._comm.destroy()
            self._comm = None
        self._hdr.Free()

    def new_group(self, ranks, timeout):
        control = self._control.new_group(ranks, timeout)
        return None if control is None else NCCLBackend(control, self._cupy, self._nccl, self._device)

    # -- the communicator, the stream, the completion -----------------------------------------------------------
    def _where(self, tensor) -> int:
        """The GPU index of ``tensor``'s array."""
        return int(core.array(tensor).device.id)

    def _connect(self, gpu: int | None):
        """Steps, run by every rank of the group together, that choose this rank's GPU (``gpu``, or for the
        default group its local rank on its host, modulo the host's GPU count) and make the NCCL communicator on
        it: rank 0's unique id travels over the control group. Two ranks of one host on one GPU are an error
        naming them."""
        control, size, me = self._control, self.size(), self.rank()
        host = zlib.crc32(MPI.Get_processor_name().encode())
        if gpu is None:
            hosts = np.empty(size, dtype=np.int64)
            yield Pending([control._coll.Iallgather(np.array([host], dtype=np.int64), hosts)], control._in_transfer)
            local = int((hosts[:me] == host).sum())
            try:
                count, why = self._cupy.cuda.runtime.getDeviceCount(), ""
            except Exception as exc:  # CUDARuntimeError: no driver, no device
                count, why = 0, f" ({exc})"
            if count < 1:
                raise RuntimeError(f"[rank {control.global_rank}] init_process_group(backend='nccl'): CuPy sees no "
                                   f"GPU{why}; use backend='mpi' (CPU tensors) or 'auto'")
            gpu = int(os.environ.get("LOCAL_RANK", local)) % count
        # a GPU is told by its PCI bus id: ranks that each see one GPU (CUDA_VISIBLE_DEVICES) all call it cuda:0
        bus = getattr(self._cupy.cuda.runtime, "deviceGetPCIBusId", None)  # (the tests' CuPy stand-in lacks it)
        ident = zlib.crc32((bus(gpu) if bus is not None else f"cuda:{gpu}").encode())
        seats = np.empty((size, 3), dtype=np.int64)
        yield Pending([control._coll.Iallgather(np.array([host, ident, gpu], dtype=np.int64), seats)],
                      control._in_transfer)
        taken: dict = {}
        for r, (h, i, g) in enumerate(seats.tolist()):
            if (h, i) in taken:
                raise DistError(f"init_process_group(backend='nccl'): ranks {control.ranks[taken[h, i]]} and "
                                f"{control.ranks[r]} of {control.label} would both use cuda:{g} of one host; NCCL "
                                "needs a GPU per rank: start at most as many ranks per host as it has GPUs")
            taken[h, i] = r
        uid = np.zeros(128, dtype=np.uint8)  # NCCL_UNIQUE_ID_BYTES
        if me == 0:
            made = np.frombuffer(bytes(self._nccl.get_unique_id()), dtype=np.uint8)
            uid[:len(made)] = made
        yield Pending([control._coll.Ibcast(uid, root=0)], control._in_transfer)
        with self._cupy.cuda.Device(gpu):
            self._comm = self._nccl.NcclCommunicator(size, uid.tobytes(), me)
        self._device = gpu

    @property
    def device(self) -> int:
        """The index of the GPU this rank's NCCL communicator is on (its CUDA tensors must be there)."""
        return self._device

    def _launch(self, name, tensor, post):
        """Steps that run ``post(comm, stream)`` (which queues NCCL calls) on ``tensor``'s GPU and wait for it."""
        yield Pending([self._queue(name, tensor, post)], self._in_transfer)

    def _queue(self, name, tensor, post) -> _EventDone:
        """Run ``post(comm, stream)`` on ``tensor``'s GPU, its current stream; what completes after it."""
        gpu = self._where(tensor)
        if gpu != self._device:
            raise DistError(f"[rank {self._control.global_rank}] {name}: this rank's NCCL communicator of "
                            f"{self._control.label} is on cuda:{self._device}, but the tensor is on cuda:{gpu}; put "
                            f"this rank's CUDA tensors on cuda:{self._device}")
        cuda = self._cupy.cuda
        where = f"[rank {self._control.global_rank}] {name} on cuda:{self._device}"
        with cuda.Device(self._device):
            stream = cuda.get_current_stream()
            try:
                post(self._comm, stream.ptr)
            except Exception as exc:  # CuPy's NcclError, a CUDA error
                raise DistBackendError(f"{where}: NCCL refused the operation: {exc}") from exc
            event = cuda.Event(disable_timing=True)
            event.record(stream)
        return _EventDone(event, self._comm, where)

    def _in_transfer(self):
        return (f"every rank of {self._control.label} arrived, but the NCCL transfer on cuda:{self._device} did not "
                "complete (has a rank died or stalled, or issued its operations in another order?)")

    def _empty(self, shape, like):
        """A new array on the group's GPU, of ``like``'s dtype."""
        with self._cupy.cuda.Device(self._device):
            return self._cupy.empty(shape, dtype=like.dtype)

    @staticmethod
    def _nbytes(arr) -> int:
        return int(arr.size) * arr.dtype.itemsize

    # -- collectives ----------------------------------------------------------------------------------------------
    def barrier(self):
        return self._control.barrier()

    def all_reduce(self, tensor, op):
        arr = core.array(tensor)

        def transfer():
            kind, nop = reduction(self._nccl, "all_reduce", tensor.dtype, op)  # after the records agree
            ptr = arr.data.ptr
            yield from self._launch("all_reduce", tensor,
                                    lambda comm, s: comm.allReduce(ptr, ptr, arr.size, kind, nop, s))
            core.mark_modified(tensor)
        return self._control._collective("all_reduce", tensor, transfer, op=op)

    def broadcast(self, tensor, root):
        arr = core.array(tensor)

        def transfer():
            ptr, nbytes = arr.data.ptr, self._nbytes(arr)
            yield from self._launch("broadcast", tensor,
                                    lambda comm, s: comm.broadcast(ptr, ptr, nbytes, self._nccl.NCCL_UINT8, root, s))
            if self.rank() != root:
                core.mark_modified(tensor)
        return self._control._collective("broadcast", tensor, transfer, root=root)

    def reduce(self, tensor, root, op):
        arr = core.array(tensor)

        def transfer():
            kind, nop = reduction(self._nccl, "reduce", tensor.dtype, op)
            ptr = arr.data.ptr
            yield from self._launch("reduce", tensor,
                                    lambda comm, s: comm.reduce(ptr, ptr, arr.size, kind, nop, root, s))
            if self.rank() == root:
                core.mark_modified(tensor)
        return self._control._collective("reduce", tensor, transfer, root=root, op=op)

    def all_gather(self, outputs, tensor):
        arr = core.array(tensor)

        def transfer():
            self._same_gpu("all_gather", tensor, *outputs)
            gathered = self._empty((self.size(),) + arr.shape, arr)
            nbytes = self._nbytes(arr)
            yield from self._launch("all_gather", tensor, lambda comm, s: comm.allGather(
                arr.data.ptr, gathered.data.ptr, nbytes, self._nccl.NCCL_UINT8, s))
            for out, part in zip(outputs, gathered):
                core.array(out)[...] = part
            core.mark_modified(*outputs)
        return self._control._collective("all_gather", tensor, transfer)

    def all_gather_into_tensor(self, output, tensor):
        arr, out = core.array(tensor), core.array(output)

        def transfer():
            self._same_gpu("all_gather_into_tensor", tensor, output)
            nbytes = self._nbytes(arr)
            yield from self._launch("all_gather_into_tensor", tensor, lambda comm, s: comm.allGather(
                arr.data.ptr, out.data.ptr, nbytes, self._nccl.NCCL_UINT8, s))
            core.mark_modified(output)
        return self._control._collective("all_gather_into_tensor", tensor, transfer)

    def reduce_scatter_tensor(self, output, tensor, op):
        arr, out = core.array(tensor), core.array(output)

        def transfer():
            kind, nop = reduction(self._nccl, "reduce_scatter_tensor", tensor.dtype, op)
            self._same_gpu("reduce_scatter_tensor", tensor, output)
            yield from self._launch("reduce_scatter_tensor", tensor, lambda comm, s: comm.reduceScatter(
                arr.data.ptr, out.data.ptr, out.size, kind, nop, s))
            core.mark_modified(output)
        return self._control._collective("reduce_scatter_tensor", tensor, transfer, op=op)

    def _same_gpu(self, name, *tensors):
        gpus = sorted({self._where(t) for t in tensors})
        if len(gpus) > 1:
            raise DistError(f"[rank {self._control.global_rank}] {name}: the tensors are on different GPUs "
                            f"({', '.join(f'cuda:{g}' for g in gpus)}); NCCL needs them on one")

    def _exchange(self, name, tensor, sends, recvs):
        """Steps that run, in one NCCL group, ``sends`` and ``recvs``: lists of ``(array, byte offset, bytes,
        group rank)``."""
        yield Pending([self._queue(name, tensor, self._group_call(sends, recvs))], self._in_transfer)

    def _group_call(self, sends, recvs):
        """What queues ``sends`` and ``recvs`` (see :meth:`_exchange`) in one NCCL group."""
        u8, nccl = self._nccl.NCCL_UINT8, self._nccl

        def post(comm, s):
            nccl.groupStart()
            try:
                for arr, offset, nbytes, peer in sends:
                    comm.send(arr.data.ptr + offset, nbytes, u8, peer, s)
                for arr, offset, nbytes, peer in recvs:
                    comm.recv(arr.data.ptr + offset, nbytes, u8, peer, s)
            finally:
                nccl.groupEnd()
        return post

    def gather(self, tensor, outputs, root):
        arr = core.array(tensor)

        def transfer():
            nbytes, me = self._nbytes(arr), self.rank()
            if me == root:
                self._same_gpu("gather", tensor, *outputs)
                recvs = [(core.array(out), 0, nbytes, r) for r, out in enumerate(outputs) if r != me]
                yield from self._exchange("gather", tensor, [], recvs)
                core.array(outputs[me])[...] = arr
                core.mark_modified(*outputs)
            else:
                yield from self._exchange("gather", tensor, [(arr, 0, nbytes, root)], [])
        return self._control._collective("gather", tensor, transfer, root=root)

    def scatter(self, tensor, inputs, root):
        arr = core.array(tensor)

        def transfer():
            nbytes, me = self._nbytes(arr), self.rank()
            if me == root:
                self._same_gpu("scatter", tensor, *inputs)
                sends = [(core.array(t), 0, nbytes, r) for r, t in enumerate(inputs) if r != me]
                yield from self._exchange("scatter", tensor, sends, [])
                arr[...] = core.array(inputs[me])
            else:
                yield from self._exchange("scatter", tensor, [], [(arr, 0, nbytes, root)])
            core.mark_modified(tensor)
        return self._control._collective("scatter", tensor, transfer, root=root)

    def all_to_all_single(self, output, tensor, output_splits, input_splits):
        arr, out = core.array(tensor), core.array(output)
        row = arr.dtype.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64))

        def parts(buf, splits):
            starts = np.cumsum([0] + splits[:-1]).tolist()
            return [(buf, start * row, count * row, r) for r, (start, count) in enumerate(zip(starts, splits))
                    if count]

        def transfer():
            self._same_gpu("all_to_all_single", tensor, output)
            yield from self._exchange("all_to_all_single", tensor, parts(arr, input_splits), parts(out, output_splits))
            core.mark_modified(output)
        return self._control._collective("all_to_all_single", tensor, transfer, what=meta.SAME_ROW,
                                         shape=tuple(tensor.shape[1:]), splits=(input_splits, output_splits))

    # -- point to point: a header over MPI, the data over NCCL --------------------------------------------------
    def send(self, tensor, dst, tag):
        self._control._check_tag("send", tag)
        header = np.zeros(_HEADER, dtype=np.int64)
        header[0] = self.rank()
        header[1:] = meta.tensor_fields(tensor.dtype.name, tensor.shape)
        arr = core.array(tensor)
        peer = self._control.ranks[dst]

        def steps():  # the header and the data are both on their way when send() returns
            announced = self._hdr.Isend(header, dest=dst, tag=tag)
            sent = self._queue(f"send to rank {peer}", tensor, self._group_call([(arr, 0, self._nbytes(arr), dst)], []))
            yield Pending([announced, sent], lambda: f"rank {peer} did not receive it (no matching recv, tag {tag})")
        return MPIWork(self._control, f"send to rank {peer}", steps())

    def recv(self, tensor, src, tag):
        self._control._check_tag("recv", tag)
        arr = core.array(tensor)
        header = np.empty(_HEADER, dtype=np.int64)
        mine = meta.tensor_fields(tensor.dtype.name, tensor.shape)
        ranks = self._control.ranks
        source = f"rank {ranks[src]}" if src is not None else "any rank"

        def steps():
            request = self._hdr.Irecv(header, source=MPI.ANY_SOURCE if src is None else src, tag=tag)
            yield Pending([request], lambda: f"{source} sent nothing with tag {tag}")
            sender = int(header[0])
            if (header[1:] != mine).any():
                # take the announced data anyway (and drop it), so that the sender's NCCL send completes
                scratch = self._empty(meta.tensor_nbytes(header[1:]), np.zeros(0, dtype=np.uint8))
                yield from self._exchange("recv", tensor, [], [(scratch, 0, scratch.size, sender)])
                raise DistError(f"[rank {self._control.global_rank}] recv: rank {ranks[sender]} sent "
                                f"{meta.describe_tensor(header[1:])}, but this rank receives into "
                                f"{meta.describe_tensor(mine)}")
            yield from self._exchange(f"recv from rank {ranks[sender]}", tensor, [],
                                      [(arr, 0, self._nbytes(arr), sender)])
            core.mark_modified(tensor)
            return ranks[sender]
        return MPIWork(self._control, f"recv from {source}", steps())
