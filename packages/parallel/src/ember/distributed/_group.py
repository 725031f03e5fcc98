"""Process groups: the default group that ``init_process_group`` makes, subgroups from ``new_group``, and the
questions about them (``get_rank``, ``get_world_size``, ``get_backend``, ...), with torch.distributed's names.

>>> import ember.distributed as dist
>>> dist.is_initialized(), dist.is_available()
(False, True)
>>> dist.get_rank()
Traceback (most recent call last):
...
ValueError: Default process group has not been initialized, please make sure to call init_process_group.
"""
from __future__ import annotations

import datetime
import importlib.util
import os

from . import registry
from ._failure import install_failure_handler

__all__ = ["ProcessGroup", "GroupMember", "group", "init_process_group", "destroy_process_group", "is_initialized",
           "is_available", "is_mpi_available", "get_rank", "get_world_size", "get_backend", "new_group",
           "default_pg_timeout", "resolve"]

#: the timeout of a group made without one (PyTorch's default)
default_pg_timeout = datetime.timedelta(minutes=30)


class ProcessGroup:
    """A set of ranks that communicate: ``rank()`` is this process's rank in it (-1 outside it), ``size()`` how many
    ranks it has; ``ranks`` are their global ranks, in group-rank order.

    >>> import ember.distributed as dist
    >>> dist.ProcessGroup([0, 2], None, "mpi", "the group of ranks [0, 2]").size()
    2
    """

    def __init__(self, ranks: list[int], backend, backend_name: str, label: str):
        self.ranks, self.backend, self.backend_name, self.label = ranks, backend, backend_name, label

    def rank(self) -> int:
        return -1 if self.backend is None else self.backend.rank()

    def size(self) -> int:
        return len(self.ranks)

    def __repr__(self):
        return f"<ProcessGroup {self.label}, backend {self.backend_name!r}, rank {self.rank()} of {self.size()}>"


class GroupMember:
    """PyTorch's ``GroupMember``: ``WORLD`` is the default group (None before ``init_process_group``)."""

    WORLD: ProcessGroup | None = None


#: PyTorch's ``dist.group``: ``dist.group.WORLD`` is the default group
group = GroupMember

_SUBGROUPS: list[ProcessGroup] = []


def is_available() -> bool:
    """Whether ember.distributed can be used: True (it ships with ember-parallel)."""
    return True


def is_mpi_available() -> bool:
    """Whether mpi4py, which the ``"mpi"`` backend runs on, is installed (MPI is not started by asking)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_initialized() -> bool:
    """Whether ``init_process_group`` has made the default group (and ``destroy_process_group`` not removed it)."""
    return GroupMember.WORLD is not None


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None, device_id=None) -> None:
    """Make the default process group of all the job's processes, on ``backend`` (default ``"mpi"``, the one
    backend for CPU tensors; others come from plugins, see :mod:`ember.distributed.hookspec`).

    MPI starts here, never at import. The processes are those ``mpiexec`` (or ``ember-run``) started; ``rank`` and
    ``world_size``, if given (or set as ``RANK``/``WORLD_SIZE`` by the launcher), must agree with MPI's.
    ``timeout`` (a ``datetime.timedelta``, default 30 minutes) bounds every wait of every operation on the group.
    From here on an uncaught exception on any rank prints its traceback, prefixed with the rank, and ends the whole
    job. ``init_method`` may be None or ``"env://"`` (MPI finds its peers itself); ``store``, ``group_name``,
    ``pg_options`` and ``device_id`` are accepted for PyTorch's sake and must be left unset.

    On each rank of a job (``ember-run -n 2 script.py``)::

        import ember.distributed as dist
        dist.init_process_group("mpi")
        dist.get_rank(), dist.get_world_size()  # (0, 2) on rank 0
    """
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if timeout is None:
        timeout = default_pg_timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, but got {type(timeout).__name__}")
    if timeout.total_seconds() <= 0:
        raise ValueError(f"init_process_group: timeout must be positive, but got {timeout}")
    if init_method not in (None, "env://"):
        raise ValueError(f"init_process_group: init_method={init_method!r} is not supported: the processes find each "
                         "other through the MPI launcher (mpiexec or ember-run); pass init_method=None or 'env://'")
    for name, value in (("store", store), ("pg_options", pg_options), ("device_id", device_id)):
        if value is not None:
            raise ValueError(f"init_process_group: {name} is not supported by ember.distributed; leave it None")
    name = "mpi" if backend is None else backend
    factory = registry.get(name)
    rank, world_size = _from_env("rank", rank, "RANK"), _from_env("world_size", world_size, "WORLD_SIZE")
    world = factory(rank=rank, world_size=world_size, timeout=timeout)
    GroupMember.WORLD = ProcessGroup(list(range(world.size())), world, name.lower(), "the default group")
    install_failure_handler(world.rank(), world.abort)


def _from_env(name: str, given: int, variable: str) -> int:
    if not isinstance(given, int):
        raise TypeError(f"init_process_group: {name} must be an int, but got {type(given).__name__} {given!r}")
    if given != -1 or variable not in os.environ:
        return given
    try:
        return int(os.environ[variable])
    except ValueError:
        raise ValueError(f"init_process_group: the environment variable {variable}={os.environ[variable]!r} "
                         "is not an integer") from None


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Free ``group``, or (the default) every group, the default one included; ``init_process_group`` may be called
    again afterwards. MPI itself stays running until the interpreter exits."""
    if group is None or group is GroupMember.WORLD:
        _require_init()
        for pg in [*_SUBGROUPS, GroupMember.WORLD]:
            if pg.backend is not None:
                pg.backend.shutdown()
        _SUBGROUPS.clear()
        GroupMember.WORLD = None
        return
    if group not in _SUBGROUPS:
        raise ValueError(f"destroy_process_group: {group!r} is not a live process group")
    _SUBGROUPS.remove(group)
    if group.backend is not None:
        group.backend.shutdown()


def _require_init() -> ProcessGroup:
    if GroupMember.WORLD is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return GroupMember.WORLD


def resolve(group: ProcessGroup | None) -> ProcessGroup:
    """``group``, or the default group for None; an error if there is none, or ``group`` was destroyed."""
    world = _require_init()
    if group is None or group is world:
        return world
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup made by new_group, or None, but got {type(group).__name__}")
    if group not in _SUBGROUPS:
        raise ValueError(f"{group!r} was destroyed or belongs to an earlier default group")
    return group


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (default: the default group); -1 if it is not in the group."""
    return resolve(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of ranks in ``group`` (default: the default group); -1 if this process is not in the group."""
    pg = resolve(group)
    return pg.size() if pg.backend is not None else -1


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    """The global ranks of ``group``'s members (None: the default group), in group-rank order (PyTorch's name).

    On each rank of a job (``ember-run -n 3 script.py``)::

        dist.get_process_group_ranks(dist.new_group([2, 0]))  # [0, 2]
    """
    return list(resolve(group).ranks)


def get_global_rank(group: ProcessGroup | None, group_rank: int) -> int:
    """The global rank of the member with rank ``group_rank`` in ``group`` (None: the default group)."""
    ranks = resolve(group).ranks
    if not isinstance(group_rank, int) or not 0 <= group_rank < len(ranks):
        raise ValueError(f"get_global_rank: group_rank must be an int in [0, {len(ranks) - 1}], but got "
                         f"{group_rank!r}")
    return ranks[group_rank]


def get_backend(group: ProcessGroup | None = None) -> str:
    """The name of ``group``'s backend (``"mpi"``)."""
    return resolve(group).backend_name


def new_group(ranks=None, timeout: datetime.timedelta | None = None, backend: str | None = None, pg_options=None,
              use_local_synchronization: bool = False, group_desc: str | None = None) -> ProcessGroup:
    """A group of the global ``ranks`` (default: all), on the default group's backend. Every rank of the default
    group must call it, in the same order, with the same ranks (checked: a mismatch is an error naming the ranks).
    On a rank outside ``ranks`` the result has ``rank() == -1`` and collectives on it return None, as PyTorch's.

    On each rank of a job (``ember-run -n 2 script.py``)::

        import ember.distributed as dist
        pair = dist.new_group([0, 1])
        dist.get_world_size(pair)  # 2
    """
    world = _require_init()
    if backend is not None and backend.lower() != world.backend_name:
        raise ValueError(f"new_group: backend {backend!r} differs from the default group's {world.backend_name!r}; "
                         "a subgroup runs on the default group's backend")
    if pg_options is not None or use_local_synchronization:
        raise ValueError("new_group: pg_options and use_local_synchronization are not supported by ember.distributed")
    size = world.size()
    members = list(range(size)) if ranks is None else sorted(ranks)
    bad = [r for r in members if not isinstance(r, int) or not 0 <= r < size]
    if bad or len(set(members)) != len(members) or not members:
        raise ValueError(f"new_group: ranks must be distinct ints in [0, {size - 1}] (the world has {size} ranks), "
                         f"but got {ranks!r}")
    timeout = default_pg_timeout if timeout is None else timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, but got {type(timeout).__name__}")
    backend_obj = world.backend.new_group(members, timeout)
    pg = ProcessGroup(members, backend_obj, world.backend_name, group_desc or f"the group of ranks {members}")
    _SUBGROUPS.append(pg)
    return pg
