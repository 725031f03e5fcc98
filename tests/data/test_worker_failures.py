"""Worker failures reach the main process: exceptions with tracebacks, dead workers, timeouts; nothing hangs or
leaks."""
from __future__ import annotations

import gc
import multiprocessing
import os
import subprocess
import sys
import textwrap
import time

import pytest

from ember.data import DataLoader, DataLoaderTimeoutError, WorkerDiedError

from .datasets_for_tests import DiesAt, Echo, FailsAt, SlowAt, fail_in_init

pytestmark = [pytest.mark.timeout(60), pytest.mark.slow]


def gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def child_pids() -> set[int]:
    """The live child processes of this one (joining any that exited): workers as the OS sees them."""
    return {p.pid for p in multiprocessing.active_children()}


def reaped(pids: set[int], within: float = 5.0) -> bool:
    """Every one of these child processes has exited and been joined."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not pids & child_pids():
            return True
        time.sleep(0.02)
    return False


def shared_memory(prefix: str) -> set[str]:
    """The names in /dev/shm that start with ``prefix`` (``ember_<pid>_``: every name a process's loaders make)."""
    return {p for p in os.listdir("/dev/shm") if p.startswith(prefix.lstrip("/"))}


def no_shared_memory_left(prefix: str) -> bool:
    return not shared_memory(prefix)


OURS = f"ember_{os.getpid()}_"


def test_an_exception_in_a_worker_is_raised_with_its_type_worker_id_and_traceback():
    loader = DataLoader(FailsAt(20, bad=9), batch_size=2, num_workers=2)
    got = []
    with pytest.raises(ValueError) as info:
        for batch in loader:
            got.append(batch[:, 0].tolist())
    message = str(info.value)
    assert got == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]  # every batch before the broken one
    assert "Caught ValueError in DataLoader worker process 0" in message and info.value.worker_id == 0
    assert "Traceback (most recent call last)" in message and "item 9 is broken" in message
    assert "datasets_for_tests.py" in message and "__getitem__" in message


def test_the_main_process_exception_has_the_same_type_without_workers():
    with pytest.raises(ValueError, match="item 1 is broken"):
        list(DataLoader(FailsAt(4, bad=1), batch_size=2))


def test_a_failing_worker_init_fn_is_reported():
    with pytest.raises(RuntimeError, match="worker_init_fn refuses worker 0") as info:
        list(DataLoader(Echo(4), num_workers=1, worker_init_fn=fail_in_init))
    assert "(starting up)" in str(info.value)


@pytest.mark.parametrize("how, code, text", [("exit", 3, "exit code 3"), ("kill", -9, "SIGKILL"),
                                             ("segfault", -11, "SIGSEGV")])
def test_a_worker_that_dies_is_reported_within_seconds_with_its_id_and_exit_code(how, code, text):
    loader = DataLoader(DiesAt(20, bad=7, how=how), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(WorkerDiedError,
                       match=f"DataLoader worker 1 \\(pid \\d+\\) exited unexpectedly with .*{text}") as info:
        list(loader)
    assert time.monotonic() - start < 5.0
    assert info.value.worker_id == 1 and info.value.exitcode == code


def test_a_worker_killed_from_outside_while_the_main_waits_is_reported():
    before = child_pids()
    it = iter(DataLoader(SlowAt(10, slow=0, seconds=30), batch_size=1, num_workers=2))
    victim = min(child_pids() - before)
    time.sleep(0.2)
    os.kill(victim, 9)
    start = time.monotonic()
    with pytest.raises(WorkerDiedError, match=rf"worker \d \(pid {victim}\)"):
        next(it)
    assert time.monotonic() - start < 5.0


def test_timeout_raises_when_a_batch_takes_too_long():
    loader = DataLoader(SlowAt(10, slow=4, seconds=30), batch_size=2, num_workers=1, timeout=0.5)
    before = child_pids()
    it = iter(loader)
    workers = child_pids() - before
    assert next(it).tolist() == [0, 1] and next(it).tolist() == [2, 3]
    start = time.monotonic()
    with pytest.raises(DataLoaderTimeoutError, match="DataLoader timed out after 0.5 seconds"):
        next(it)
    assert 0.4 < time.monotonic() - start < 3.0
    assert len(workers) == 1 and not workers & child_pids()


def test_dropping_the_iterator_shuts_the_workers_down():
    before, names = child_pids(), shared_memory(OURS)
    it = iter(DataLoader(Echo(100), batch_size=2, num_workers=2))
    next(it)
    workers = child_pids() - before
    del it
    gc.collect()
    assert len(workers) == 2 and reaped(workers) and shared_memory(OURS) <= names


def test_an_exception_unwinding_through_the_loop_shuts_the_workers_down():
    loader = DataLoader(Echo(100), batch_size=2, num_workers=2)
    before = child_pids()
    workers = set()

    def train():
        for _ in iter(loader):
            workers.update(child_pids() - before)
            raise KeyError("user code failed")

    with pytest.raises(KeyError) as info:
        train()
    del info  # the traceback holds the loop's frame, and so the iterator
    gc.collect()
    assert workers and reaped(workers)


def test_workers_stuck_in_a_slow_item_are_terminated_on_shutdown():
    before = child_pids()
    it = iter(DataLoader(SlowAt(4, slow=0, seconds=60), batch_size=1, num_workers=1))
    (pid,) = child_pids() - before
    time.sleep(0.2)
    start = time.monotonic()
    it._shutdown_workers()  # private: the join-then-terminate path
    assert gone(pid, within=1.0) and time.monotonic() - start < 8.0


def test_the_interpreter_exits_promptly_and_takes_the_workers_along(tmp_path):
    script = textwrap.dedent("""
        import multiprocessing, os, sys
        sys.path.insert(0, sys.argv[1])
        from ember.data import DataLoader
        from datasets_for_tests import Echo
        it = iter(DataLoader(Echo(1000), batch_size=2, num_workers=2, persistent_workers=True))
        next(it)
        print(os.getpid(), *[p.pid for p in multiprocessing.active_children()], flush=True)
        # no clean-up: the interpreter exits with the iterator alive
    """)
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0, out.stderr
    main_pid, *worker_pids = map(int, out.stdout.split())
    assert time.monotonic() - start < 20 and len(worker_pids) == 2
    assert all(gone(pid) for pid in worker_pids) and no_shared_memory_left(f"ember_{main_pid}_")
    assert "Traceback" not in out.stderr


def test_workers_exit_when_the_main_process_is_killed(tmp_path):
    script = textwrap.dedent("""
        import multiprocessing, os, sys, time
        sys.path.insert(0, sys.argv[1])
        from ember.data import DataLoader
        from datasets_for_tests import Echo
        it = iter(DataLoader(Echo(1000), batch_size=2, num_workers=2))
        next(it)
        print(*[p.pid for p in multiprocessing.active_children()], flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script, os.path.dirname(__file__)],
                            stdout=subprocess.PIPE, text=True)
    try:
        worker_pids = list(map(int, proc.stdout.readline().split()))
        proc.kill()
        proc.wait(timeout=10)
        assert len(worker_pids) == 2 and all(gone(pid, within=10.0) for pid in worker_pids)
    finally:
        proc.kill()
