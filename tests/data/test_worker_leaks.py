"""Nothing a DataLoader starts outlives its use: after caught worker errors, dropped persistent loaders, and a
main process killed while a worker hangs, no worker process and no ``/dev/shm`` segment is left."""
from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

from ember.data import DataLoader

from .datasets_for_tests import Echo, FailsAt

pytestmark = [pytest.mark.timeout(90), pytest.mark.slow]

OURS = f"ember_{os.getpid()}_"


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (as /proc sees it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def live_children() -> set[int]:
    return {p.pid for p in multiprocessing.active_children()}


def segments(prefix: str) -> set[str]:
    return {p for p in os.listdir("/dev/shm") if p.startswith(prefix)}


def test_five_caught_worker_errors_leave_no_worker_and_no_segment_at_once():
    before, names = live_children(), segments(OURS)
    workers: set[int] = set()
    for _ in range(5):
        try:
            for _batch in DataLoader(FailsAt(40, bad=9), batch_size=2, num_workers=2):
                workers |= live_children() - before
        except ValueError:
            pass
    gc.collect()
    assert len(workers) == 10
    assert [pid for pid in workers if alive(pid)] == []  # no waiting: gone when the error has been handled
    assert segments(OURS) - names == set()


def test_errors_the_program_keeps_do_not_keep_the_workers():
    before, names = live_children(), segments(OURS)
    workers: set[int] = set()
    kept = []
    for _ in range(5):
        try:
            for _batch in DataLoader(FailsAt(40, bad=9), batch_size=2, num_workers=2):
                workers |= live_children() - before
        except ValueError as e:
            kept.append(e)  # with its traceback, and so the frames the error passed through
    gc.collect()
    assert len(workers) == 10 and [pid for pid in workers if alive(pid)] == []
    assert segments(OURS) - names == set()
    assert all("item 9 is broken" in str(e) and e.__traceback__ is not None for e in kept)


def test_a_caught_error_leaves_nothing_even_when_a_reference_cycle_holds_the_iterator():
    before, names = live_children(), segments(OURS)
    loader = DataLoader(FailsAt(40, bad=9), batch_size=2, num_workers=2)
    it = iter(loader)
    workers = live_children() - before
    try:
        for _batch in it:
            pass
    except ValueError as e:
        cycle: list = [e, it]
        cycle.append(cycle)
    del it, cycle
    gc.collect()
    assert len(workers) == 2 and [pid for pid in workers if alive(pid)] == []
    assert segments(OURS) - names == set()


def test_a_persistent_iterator_stays_usable_after_a_caught_error():
    loader = DataLoader(FailsAt(8, bad=2), batch_size=1, num_workers=2, persistent_workers=True)
    got = []
    it = iter(loader)
    with pytest.raises(ValueError):
        for batch in it:
            got.append(int(batch[0, 0]))
    got += [int(batch[0, 0]) for batch in it]  # PyTorch's semantics: the pass goes on after the bad batch
    assert got == [0, 1, 3, 4, 5, 6, 7]


def test_a_dropped_persistent_loader_leaves_nothing_without_the_collector():
    before, names = live_children(), segments(OURS)
    loader = DataLoader(Echo(100), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):
        next(iter(loader))
    workers = live_children() - before
    gc.disable()
    try:
        del loader
        assert len(workers) == 2 and [pid for pid in workers if alive(pid)] == []
        assert segments(OURS) - names == set()
    finally:
        gc.enable()


SCENARIO = """
import multiprocessing, os, sys
sys.path.insert(0, sys.argv[1])
from ember.data import DataLoader
from datasets_for_tests import Echo, FailsAt
pids = set()
for _ in range(5):
    try:
        for _batch in DataLoader(FailsAt(40, bad=9), batch_size=2, num_workers=2):
            pids |= {p.pid for p in multiprocessing.active_children()}
    except ValueError:
        pass
persistent = DataLoader(Echo(100), batch_size=2, num_workers=2, persistent_workers=True)
next(iter(persistent))
pids |= {p.pid for p in multiprocessing.active_children()}
print(os.getpid(), *sorted(pids), flush=True)
# exits with the persistent loader alive and the failed iterators left to the interpreter
"""


def test_nothing_outlives_a_process_after_caught_errors():
    out = subprocess.run([sys.executable, "-c", SCENARIO, os.path.dirname(__file__)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    main_pid, *workers = map(int, out.stdout.split())
    assert len(workers) == 12
    deadline = time.monotonic() + 2.0
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [pid for pid in workers if alive(pid)] == []
    assert segments(f"ember_{main_pid}_") == set()
    assert "Traceback" not in out.stderr and "Error" not in out.stderr


HANG = """
import multiprocessing, sys, time
sys.path.insert(0, sys.argv[1])
from ember.data import DataLoader
from datasets_for_tests import Echo, HangsForever
warm = iter(DataLoader(Echo(100), batch_size=2, num_workers=2, persistent_workers=True))
next(warm)  # these workers have made shared-memory slots
it = iter(DataLoader(HangsForever(), batch_size=1, num_workers=2))
time.sleep(0.5)  # every worker is inside __getitem__
print(*[p.pid for p in multiprocessing.active_children()], flush=True)
next(it)
"""


def test_hung_workers_exit_when_the_main_process_is_killed():
    proc = subprocess.Popen([sys.executable, "-c", HANG, os.path.dirname(__file__)], stdout=subprocess.PIPE,
                            text=True)
    try:
        workers = list(map(int, proc.stdout.readline().split()))
        assert len(workers) == 4 and segments(f"ember_{proc.pid}_")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        start = time.monotonic()
        while any(alive(pid) for pid in workers) and time.monotonic() - start < 2.0:
            time.sleep(0.02)
        assert [pid for pid in workers if alive(pid)] == [], "workers outlived their killed parent"
        assert segments(f"ember_{proc.pid}_") == set()
    finally:
        proc.kill()
        for pid in workers if "workers" in locals() else []:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
