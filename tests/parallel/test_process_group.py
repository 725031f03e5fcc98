"""ember.distributed's process groups: no MPI at import, backends found as plugins (unknown names, a third party's
backend, a clash), the checks one rank makes alone (devices a backend cannot serve, non-contiguous tensors), and
init/destroy on real MPI ranks (``mpiexec`` subprocesses), with the launcher's RANK/WORLD_SIZE checked."""
import datetime
import os
import subprocess
import sys
import textwrap
import time

import pytest

import ember
import ember.distributed as dist
from ember.distributed import registry
from ember.errors import PluginError

from .ranks import MPIEXEC


def test_importing_ember_distributed_starts_no_mpi():
    code = ("import sys, ember.distributed; print('mpi4py.MPI' in sys.modules); "
            "import ember.distributed.backends.mpi; from mpi4py import MPI; print(MPI.Is_initialized())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_unknown_backend_is_an_error_listing_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown process-group backend 'gloo'; known: \['auto', 'mpi', 'nccl'\]"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()
    with pytest.raises(TypeError, match="timeout argument to be of type datetime.timedelta"):
        dist.init_process_group(timeout=30)
    with pytest.raises(ValueError, match="init_method='tcp://x:1' is not supported"):
        dist.init_process_group(init_method="tcp://x:1")


def test_questions_before_init_process_group_are_errors():
    assert dist.is_available() and dist.is_mpi_available() and not dist.is_initialized()
    for ask in (dist.get_rank, dist.get_world_size, dist.get_backend, dist.barrier):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            ask()


class _Done(dist.Work):
    def is_completed(self):
        return True

    def wait(self, timeout=None):
        return True


class _OneRank(dist.Backend):
    """A third party's backend of one rank, that serves tensors when ``serves`` says so."""

    name = "one"

    def __init__(self, serves):
        self.serves, self.reduced, self.closed = serves, [], False

    def rank(self):
        return 0

    def size(self):
        return 1

    def supports_device(self, device):
        return self.serves

    def abort(self, code):
        raise AssertionError("no rank failed")

    def shutdown(self):
        self.closed = True

    def all_reduce(self, tensor, op):
        self.reduced.append(op)
        return _Done()


class _Plugin:
    def __init__(self, backends):
        self.backends = backends

    @ember.hookimpl
    def ember_distributed_backends(self):
        return self.backends


@pytest.fixture
def one_rank_backend():
    """Backend "one" registered as a third-party plugin; the excepthook that init_process_group installs is undone."""
    registry.available()  # registers ember.distributed's hooks and built-ins first
    made = []

    def factory(rank, world_size, timeout):
        made.append(_OneRank(serves=True))
        return made[-1]

    ember.register_plugin(_Plugin({"one": factory}), "test-one-backend")
    hook = sys.excepthook
    yield made
    sys.excepthook = hook
    if dist.is_initialized():
        dist.destroy_process_group()
    ember.unregister_plugin("test-one-backend")


def test_a_third_party_backend_plugs_in_and_lives_through_init_and_destroy(one_rank_backend):
    assert "one" in registry.available()
    dist.init_process_group("one", timeout=datetime.timedelta(seconds=5))
    assert dist.is_initialized() and dist.get_backend() == "one" and dist.get_rank() == 0
    assert dist.group.WORLD is dist.GroupMember.WORLD and dist.group.WORLD.size() == 1
    assert sys.excepthook is not sys.__excepthook__  # a failing rank now ends the job
    with pytest.raises(ValueError, match="trying to initialize the default process group twice"):
        dist.init_process_group("one")
    t = ember.ones(3)
    assert dist.all_reduce(t, op=dist.ReduceOp.MAX) is None
    assert dist.all_reduce(t, async_op=True).wait() is True
    assert one_rank_backend[0].reduced == [dist.ReduceOp.MAX, dist.ReduceOp.SUM]
    with pytest.raises(TypeError, match="op must be a dist.ReduceOp"):
        dist.all_reduce(t, op="sum")
    with pytest.raises(ValueError, match="Tensors must be contiguous"):
        dist.all_reduce(ember.ones(3, 4).t())
    with pytest.raises(ValueError, match=r"src=1 is not a rank of the default group \(its global ranks: \[0\]\)"):
        dist.broadcast(t, src=1)
    one_rank_backend[0].serves = False
    with pytest.raises(RuntimeError, match=r"\[rank 0\] all_reduce: the 'one' backend of the default group cannot "
                                           r"serve tensor on device cpu"):
        dist.all_reduce(t)
    dist.destroy_process_group()
    assert not dist.is_initialized() and one_rank_backend[0].closed
    dist.init_process_group("one")  # again, after destroy
    assert dist.is_initialized() and len(one_rank_backend) == 2


def test_a_backend_name_two_plugins_offer_is_refused_naming_both():
    registry.available()
    with pytest.raises(PluginError, match="'mpi' is given by both plugin 'ember.distributed.backends.mpi' and "
                                          "plugin 'clash'"):
        ember.register_plugin(_Plugin({"mpi": None}), "clash")
    assert ember.get_plugin_manager().get_plugin("clash") is None


def run_mpmd(ranks_env, script, tmp_path, timeout=60):
    """Run ``script`` on one rank per dict in ``ranks_env`` (extra environment of that rank)."""
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    command = [str(MPIEXEC)]
    for i, extra in enumerate(ranks_env):
        command += [":"] if i else []
        command += ["-n", "1"] + [a for k, v in extra.items() for a in ("-env", k, v)] + [sys.executable, str(path)]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


LIFECYCLE = """
import os, sys, datetime
import ember, ember.distributed as dist
from ember.distributed.backends._mpi_import import MPI

assert not MPI.Is_initialized() and not dist.is_initialized()
lines = []
try:
    dist.init_process_group()  # RANK in the environment is the other rank's
except ValueError as exc:
    lines.append(f"wrong env: {exc}")
rank = MPI.COMM_WORLD.Get_rank()
dist.init_process_group("MPI", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=20))
assert dist.is_initialized() and dist.get_backend() == "mpi" and dist.get_rank() == rank
assert dist.get_world_size() == 2 and dist.group.WORLD.size() == 2
single = dist.new_group([1])
assert (dist.get_rank(single), dist.get_world_size(single)) == ((0, 1) if rank == 1 else (-1, -1))
assert dist.get_process_group_ranks(single) == [1] and dist.get_process_group_ranks(None) == [0, 1]
assert dist.get_global_rank(single, 0) == 1 and dist.get_global_rank(None, 1) == 1
try:
    dist.get_global_rank(single, 1)
except ValueError as exc:
    assert "group_rank must be an int in [0, 0], but got 1" in str(exc), exc
else:
    raise AssertionError("get_global_rank accepted a group rank outside the group")
dist.destroy_process_group(single)
dist.destroy_process_group()
assert not dist.is_initialized()
dist.init_process_group(rank=rank)  # again (a fresh default group on the running MPI); WORLD_SIZE from the env
t = ember.full((2,), float(rank))
dist.all_reduce(t)
lines.append(f"sum {t.tolist()}")
dist.destroy_process_group()
with open(os.path.join(os.path.dirname(__file__), f"rank{rank}.txt"), "w") as f:
    f.write("\\n".join(lines))
"""


def test_init_destroy_and_init_again_on_two_ranks_with_the_launchers_rank_checked(tmp_path):
    done = run_mpmd([{"RANK": "1", "WORLD_SIZE": "2"}, {"RANK": "0", "WORLD_SIZE": "2"}], LIFECYCLE, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in (0, 1):
        wrong, total = (tmp_path / f"rank{rank}.txt").read_text().split("\n")
        assert wrong.startswith(f"wrong env: init_process_group: rank={1 - rank} was given (or set by the launcher in "
                                f"the environment), but MPI says this process is rank {rank} of 2")
        assert total == "sum [1.0, 1.0]"


RAISES = """
import datetime
import ember.distributed as dist

dist.init_process_group(timeout=datetime.timedelta(seconds=60))
if dist.get_rank() == 1:
    raise ValueError("boom on purpose")
dist.barrier()  # rank 0 would wait here for 60 s, but rank 1's failure ends the job
"""


def test_a_rank_that_raises_ends_the_job_at_once_with_its_traceback(tmp_path):
    start = time.monotonic()
    done = run_mpmd([{}, {}], RAISES, tmp_path)
    assert time.monotonic() - start < 10
    assert done.returncode != 0
    assert "[rank 1] Traceback (most recent call last):" in done.stderr
    assert "[rank 1] ValueError: boom on purpose" in done.stderr


LATE = """
import datetime, time
import ember.distributed as dist
from ember.distributed.backends._mpi_import import MPI, start

start()
if MPI.COMM_WORLD.Get_rank() == 2:
    time.sleep(60)  # never calls init_process_group in time
dist.init_process_group(timeout=datetime.timedelta(seconds=2))
"""


def test_init_process_group_names_the_rank_that_never_calls_it_and_ends_the_job(tmp_path):
    start = time.monotonic()
    done = run_mpmd([{}, {}, {}], LATE, tmp_path)
    assert time.monotonic() - start < 2 + 8
    assert done.returncode != 0
    assert ("init_process_group timed out after 2 s (the group's timeout): rank 2 of MPI's COMM_WORLD did not arrive"
            in done.stderr), done.stderr
