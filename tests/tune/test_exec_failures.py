"""LocalExecutor failures: errors with their traceback, processes that die, trainables that cannot load,
processes that linger, and trials outliving a killed driver."""
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from ember import tune
from ember.tune import Decision, TrialRun

from .exec_helpers import drive, gone, start_trial, wait_for
from .test_exec_local import counting

pytestmark = pytest.mark.timeout(60)


def failing(config):
    tune.report({"x": 1})
    raise ValueError(f"bad lr {config['lr']}")


def dying(config):
    tune.report({"pid": os.getpid()})
    how = config["how"]
    if how == "exit":
        os._exit(3)
    if how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "segfault":
        import ctypes
        ctypes.string_at(0)
    time.sleep(50)  # "external": the test kills it


def lingering(config):
    """Completes, but leaves a non-daemon thread that keeps its process from exiting."""
    import threading
    threading.Thread(target=time.sleep, args=(50,)).start()
    tune.report({"pid": os.getpid()})


def test_an_error_comes_back_with_its_traceback_and_others_go_on(executor, tmp_path):
    executor.setup(failing, str(tmp_path))
    executor.start(TrialRun("bad", {"lr": 42}, trial_dir=str(tmp_path / "bad")))
    events = drive(executor)
    assert [e.kind for e in events] == ["result", "error"]
    assert "Traceback" in events[1].error and "in failing" in events[1].error
    assert "ValueError: bad lr 42" in events[1].error
    start_trial(executor, counting, tmp_path, trial_id="good", config={"steps": 2})
    assert drive(executor)[-1].kind == "complete"


@pytest.mark.parametrize("how, expected", [("exit", "exit code 3"), ("sigkill", "signal SIGKILL"),
                                           ("segfault", "signal SIGSEGV"), ("external", "signal SIGKILL")])
def test_a_dead_process_is_an_error_naming_its_exit(executor, tmp_path, how, expected):
    start_trial(executor, dying, tmp_path, config={"how": how})
    (ev,) = executor.poll(20.0)
    pid = ev.metrics["pid"]
    executor.respond(ev.trial_id, Decision.CONTINUE)
    if how == "external":
        os.kill(pid, signal.SIGKILL)
    events = executor.poll(30.0)  # the sentinel wakes the poll: no waiting out its timeout
    assert [e.kind for e in events] == ["error"]
    assert expected in events[0].error and str(pid) in events[0].error
    if how == "segfault":
        assert "Fatal Python error" in events[0].error and "dying" in events[0].error  # faulthandler's stack
    assert executor.running == [] and gone(pid)
    assert not os.path.exists(tmp_path / "00000" / ".faulthandler.txt")


def test_a_trainable_the_trial_cannot_import_is_an_error_event(executor, tmp_path, monkeypatch):
    module = types.ModuleType("only_in_the_driver")
    exec("def trainable(config):\n    pass\n", module.__dict__)
    monkeypatch.setitem(sys.modules, "only_in_the_driver", module)
    start_trial(executor, module.trainable, tmp_path)
    (ev,) = drive(executor)
    assert ev.kind == "error" and "could not be loaded in the trial process" in ev.error
    assert "only_in_the_driver" in ev.error


def test_a_process_lingering_after_its_trial_ended_is_killed(tmp_path, monkeypatch):
    from ember.tune.executors import local
    monkeypatch.setattr(local, "EXIT_GRACE", 0.5)
    executor = local.LocalExecutor(max_concurrent=1, reuse_actors=False)  # each process must exit after its trial
    try:
        start_trial(executor, lingering, tmp_path)
        events = drive(executor)
    finally:
        executor.shutdown(timeout=5.0)
    assert [e.kind for e in events] == ["result", "complete"]
    assert gone(events[0].metrics["pid"])


_DRIVER = """
import os, signal, sys, time
from ember.tune import TrialRun
from ember.tune.executors.local import LocalExecutor
from tests.tune.test_exec_local import sleeper

if __name__ == "__main__":
    d, method = sys.argv[1], sys.argv[2]
    ex = LocalExecutor(max_concurrent=2, num_cpus=2, start_method=method)
    ex.setup(sleeper, d)
    for t in "ab":
        ex.start(TrialRun(t, {"dir": d}, trial_dir=os.path.join(d, t)))
    deadline = time.monotonic() + 30
    while not all(os.path.exists(os.path.join(d, "pid_" + t)) for t in "ab"):
        if time.monotonic() > deadline:
            sys.exit(2)
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("method", ["forkserver", "spawn", "fork"])
def test_trials_exit_when_the_driver_dies(tmp_path, method):
    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(script), str(tmp_path), method], cwd=root, env=env, timeout=50,
                          capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    pids = [int((tmp_path / f"pid_{t}").read_text()) for t in "ab"]
    wait_for(lambda: all(gone(pid) for pid in pids), limit=15.0)
