"""The ``"auto"`` process-group backend: NCCL for CUDA tensors, MPI for CPU tensors, in one group (what PyTorch's
``init_process_group()`` without a backend, or ``"cpu:gloo,cuda:nccl"``, gives).

Each operation goes to the backend of its tensors' device; both share one MPI control group, so every collective,
on either device, is numbered and checked in one sequence. Where CuPy, NCCL or a GPU is missing, or ranks would share
a GPU, the group is MPI alone, and a CUDA tensor is refused with the reason.

On each rank of a job (``ember-run -n 2 train.py``)::

    import os, ember, ember.distributed as dist
    dist.init_process_group("auto")
    dist.all_reduce(ember.ones(2, device=f"cuda:{os.environ['LOCAL_RANK']}"))  # over NCCL
    dist.all_reduce(ember.ones(2))                                              # over MPI

>>> from ember.distributed.backends import auto
>>> sorted(auto.ember_distributed_backends())
['auto']
"""
from __future__ import annotations

import ember

from .._errors import DistError
from ..backend import Backend
from . import mpi
from ._nccl_import import load
from .nccl import NCCLBackend

__all__ = ["AutoBackend", "create", "ember_distributed_backends"]


@ember.hookimpl
def ember_distributed_backends():
    return {"auto": create}


def create(rank: int, world_size: int, timeout) -> AutoBackend:
    """MPI's group, and beside it NCCL's where CuPy's NCCL imports and sees a GPU on every rank, each rank on its
    own GPU; otherwise MPI alone (the ranks agree on it): CPU tensors still move, and a CUDA tensor is refused with
    the reason."""
    control = mpi.create(rank, world_size, timeout)
    try:
        cupy, nccl = load("auto")
        gpus = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CuPy missing, its NCCL library missing, or no driver/GPU (CUDARuntimeError)
        cupy, why = None, str(exc)
    else:
        why = "" if gpus > 0 else "CuPy sees no GPU"
    have = ember.tensor([0 if why else 1], dtype=ember.int32)
    everyone = ember.zeros(control.size(), dtype=ember.int32)
    control.all_gather_into_tensor(everyone, have).wait()
    lacking = [control.ranks[r] for r, ok in enumerate(everyone.tolist()) if not ok]
    if len(lacking) == control.size():
        return AutoBackend(control, None, why)
    if lacking:
        return AutoBackend(control, None, f"rank{'s' if len(lacking) > 1 else ''} {', '.join(map(str, lacking))} "
                                          f"of the default group cannot use NCCL" + (f": {why}" if why else ""))
    try:
        return AutoBackend(control, NCCLBackend(control, cupy, nccl))
    except DistError as exc:  # ranks that would share a GPU: every rank finds it alike, and keeps MPI
        return AutoBackend(control, None, str(exc))


class AutoBackend(Backend):
    """One rank's side of a group whose CPU tensors move over ``control`` (an MPI backend) and CUDA tensors over
    ``nccl`` (an NCCL backend beside the same control group; None where NCCL is missing, ``why`` says why)."""

    name = "auto"

    def __init__(self, control, nccl: NCCLBackend | None, why: str = ""):
        self._control, self._nccl, self._why = control, nccl, why

    @property
    def nccl(self) -> NCCLBackend | None:
        """The NCCL backend that moves the CUDA tensors (None where NCCL is missing)."""
        return self._nccl

    def rank(self) -> int:
        return self._control.rank()

    def size(self) -> int:
        return self._control.size()

    def supports_device(self, device) -> bool:
        return device.type == "cpu" or (device.type == "cuda" and self._nccl is not None)

    def refusal(self, device) -> str:
        if device.type == "cuda":
            return f"this group has no NCCL ({self._why}); move it to the CPU (.cpu()) to send it over MPI"
        return super().refusal(device)

    def abort(self, code: int) -> None:
        self._control.abort(code)

    def shutdown(self) -> None:
        if self._nccl is not None:
            self._nccl.release()
        self._control.shutdown()

    def new_group(self, ranks, timeout):
        if self._nccl is None:
            control = self._control.new_group(ranks, timeout)
            return None if control is None else AutoBackend(control, None, self._why)
        nccl = self._nccl.new_group(ranks, timeout)
        return None if nccl is None else AutoBackend(nccl.control, nccl)

    def _on(self, name, *tensors):
        """The backend of the tensors' device (they must share its type)."""
        kinds = sorted({t.device.type for t in tensors})
        if len(kinds) > 1:
            raise ValueError(f"{name}: the tensors are on {' and '.join(kinds)} devices; one operation moves "
                             "tensors of one device type (the 'auto' backend sends CPU tensors over MPI, CUDA "
                             "tensors over NCCL)")
        return self._nccl if kinds == ["cuda"] else self._control

    def barrier(self):
        return self._control.barrier()

    def all_reduce(self, tensor, op):
        return self._on("all_reduce", tensor).all_reduce(tensor, op)

    def broadcast(self, tensor, root):
        return self._on("broadcast", tensor).broadcast(tensor, root)

    def reduce(self, tensor, root, op):
        return self._on("reduce", tensor).reduce(tensor, root, op)

    def all_gather(self, outputs, tensor):
        return self._on("all_gather", tensor, *outputs).all_gather(outputs, tensor)

    def all_gather_into_tensor(self, output, tensor):
        return self._on("all_gather_into_tensor", tensor, output).all_gather_into_tensor(output, tensor)

    def reduce_scatter_tensor(self, output, tensor, op):
        return self._on("reduce_scatter_tensor", tensor, output).reduce_scatter_tensor(output, tensor, op)

    def gather(self, tensor, outputs, root):
        return self._on("gather", tensor, *(outputs or [])).gather(tensor, outputs, root)

    def scatter(self, tensor, inputs, root):
        return self._on("scatter", tensor, *(inputs or [])).scatter(tensor, inputs, root)

    def all_to_all_single(self, output, tensor, output_splits, input_splits):
        return self._on("all_to_all_single", tensor, output).all_to_all_single(output, tensor, output_splits,
                                                                               input_splits)

    def send(self, tensor, dst, tag):
        return self._on("send", tensor).send(tensor, dst, tag)

    def recv(self, tensor, src, tag):
        return self._on("recv", tensor).recv(tensor, src, tag)
