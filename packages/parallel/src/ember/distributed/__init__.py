"""ember.distributed: process groups and collectives with torch.distributed's names, over MPI.

Start the processes with ``ember-run --nproc-per-node 2 train.py`` (or ``mpiexec -n 2 python train.py``); each
calls ``init_process_group()`` (MPI starts there, never at import) and then the collectives, which work in place on
CPU tensors. Backends are plugins (:mod:`ember.distributed.hookspec`); the built-in one is ``"mpi"``.

>>> import ember.distributed as dist
>>> dist.is_available(), dist.is_initialized(), dist.ReduceOp.AVG
(True, False, <ReduceOp.AVG: 1>)
"""
from ._collectives import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter_tensor,
    scatter,
    send,
)
from ._errors import DistBackendError, DistError
from ._group import (
    GroupMember,
    ProcessGroup,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
    new_group,
)
from ._objects import all_gather_object, broadcast_object_list
from ._reduce_op import ReduceOp
from .backend import Backend, Work

__all__ = [
    "init_process_group", "destroy_process_group", "is_initialized", "is_available", "is_mpi_available",
    "get_rank", "get_world_size", "get_backend", "get_process_group_ranks", "get_global_rank",
    "new_group", "ProcessGroup", "GroupMember", "group",
    "default_pg_timeout", "ReduceOp", "Work", "Backend", "DistError", "DistBackendError",
    "barrier", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
    "gather", "scatter", "all_to_all_single", "send", "recv", "isend", "irecv",
    "broadcast_object_list", "all_gather_object",
]
