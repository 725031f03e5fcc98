"""LocalExecutor: results, decisions at the very report, pause/resume, concurrency, resources, stop, shutdown.

The trainables are defined here, in the test module, as a user would define them in a script.
"""
import os
import signal
import sys
import time
import types

import pytest

import ember
from ember import tune
from ember.tune import Decision, TrialRun
from ember.tune.executors.local import LocalExecutor

from .exec_helpers import drive, gone, start_trial, wait_for

pytestmark = pytest.mark.timeout(60)


# -- trainables ---------------------------------------------------------------------------------------------


def counting(config):
    """Reports steps with a checkpoint each; resumes from its checkpoint. Leaves a file after each report
    returns, so a test sees exactly which reports the trainable got past."""
    ckpt = tune.get_checkpoint()
    step = ckpt.to_dict()["step"] if ckpt is not None else 0
    try:
        while step < config.get("steps", 6):
            step += 1
            try:
                tune.report({"loss": 1.0 / step, "resumed_from": ckpt.to_dict()["step"] if ckpt else 0,
                             "pid": os.getpid()}, checkpoint={"step": step, "w": ember.full((2,), step)})
            except Exception:  # never reached by PAUSE/STOP
                open(os.path.join(config["dir"], "swallowed"), "w").close()
            open(os.path.join(config["dir"], f"after_{step}"), "w").close()
    finally:
        open(os.path.join(config["dir"], "finally"), "w").close()


def sleeper(config):
    """Writes its pid, then sleeps (bounded) until killed; with ``ignore_term`` it ignores SIGTERM."""
    if config.get("ignore_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    path = os.path.join(config["dir"], f"pid_{tune.get_trial_id()}")
    with open(path + ".tmp", "w") as f:  # renamed when written: a reader never sees an empty pid file
        f.write(str(os.getpid()))
    os.replace(path + ".tmp", path)
    time.sleep(50)


def concurrent(config):
    """Counts how many trials run at once through marker files in a shared folder."""
    running = os.path.join(config["dir"], "running")
    marker = os.path.join(running, tune.get_trial_id())
    open(marker, "w").close()
    try:
        seen, deadline = 1, time.monotonic() + 3.0
        while time.monotonic() < deadline:
            seen = max(seen, len(os.listdir(running)))
            if seen >= config["expect"]:
                break
            time.sleep(0.02)
        for _ in range(10):  # look a little longer: a third trial would show up now
            seen = max(seen, len(os.listdir(running)))
            time.sleep(0.02)
    finally:
        os.remove(marker)
    tune.report({"seen": seen})


# -- results and decisions ----------------------------------------------------------------------------------


def test_results_flow_and_complete(executor, tmp_path):
    start_trial(executor, counting, tmp_path, config={"steps": 3})
    events = drive(executor)
    assert [e.kind for e in events] == ["result"] * 3 + ["complete"]
    assert [e.metrics["training_iteration"] for e in events[:3]] == [1, 2, 3]
    assert all(e.metrics["trial_id"] == "00000" and e.metrics["pid"] != os.getpid() for e in events[:3])
    assert events[2].checkpoint == str(tmp_path / "00000" / "checkpoint_000003.safetensors")
    assert tune.Checkpoint(events[2].checkpoint).to_dict()["step"] == 3


@pytest.mark.parametrize("decision, kind", [(Decision.STOP, "stopped"), (Decision.PAUSE, "paused")])
def test_the_decision_takes_effect_at_that_report(executor, tmp_path, decision, kind):
    start_trial(executor, counting, tmp_path, config={"steps": 10})
    events = drive(executor, lambda ev: decision if ev.metrics["training_iteration"] == 3 else Decision.CONTINUE)
    assert [e.kind for e in events] == ["result"] * 3 + [kind]
    done = sorted(f for f in os.listdir(tmp_path) if f.startswith("after_"))
    assert done == ["after_1", "after_2"]  # report 3 never returned
    assert os.path.exists(tmp_path / "finally") and not os.path.exists(tmp_path / "swallowed")


@pytest.mark.parametrize("reuse", [True, False])
def test_pause_then_resume_from_the_checkpoint(tmp_path, reuse):
    executor = LocalExecutor(max_concurrent=2, num_cpus=4, reuse_actors=reuse)
    try:
        _pause_then_resume(executor, tmp_path, reuse)
    finally:
        executor.shutdown(timeout=5.0)


def _pause_then_resume(executor, tmp_path, reuse):
    start_trial(executor, counting, tmp_path, config={"steps": 5})
    first = drive(executor, lambda ev: Decision.PAUSE if ev.metrics["training_iteration"] == 2 else Decision.CONTINUE)
    assert first[-1].kind == "paused"
    checkpoint = first[-2].checkpoint
    start_trial(executor, counting, tmp_path, config={"steps": 5}, checkpoint=checkpoint, iteration=2)
    second = drive(executor)
    results = [e.metrics for e in second if e.kind == "result"]
    assert [r["training_iteration"] for r in results] == [3, 4, 5]
    assert all(r["resumed_from"] == 2 for r in results)
    assert second[-1].kind == "complete"
    assert tune.Checkpoint(second[-2].checkpoint).to_dict()["step"] == 5
    assert (results[0]["pid"] == first[0].metrics["pid"]) is reuse  # the same process when reused


def where(config):
    tune.report({"cwd": os.getcwd(), "env": os.environ.get("EMBER_TUNE_TEST_VAR"), "dir": os.path.abspath(".")})


def test_trials_see_the_drivers_cwd_and_environment_at_their_start(executor, tmp_path, monkeypatch):
    start_trial(executor, where, tmp_path, trial_id="first")  # the forkserver is running from here on
    drive(executor)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBER_TUNE_TEST_VAR", "42")
    executor.start(TrialRun("second", {}, trial_dir="relative"))
    (result, complete) = drive(executor)
    assert result.metrics["cwd"] == str(tmp_path) and result.metrics["env"] == "42"
    assert complete.kind == "complete" and os.path.isdir(tmp_path / "relative")


def test_respond_only_to_a_waiting_trial(executor, tmp_path):
    with pytest.raises(ValueError, match="not waiting"):
        executor.respond("nope", Decision.CONTINUE)
    start_trial(executor, counting, tmp_path, config={"steps": 1})
    (ev,) = executor.poll(20.0)
    assert ev.kind == "result"
    executor.respond(ev.trial_id, "continue")
    with pytest.raises(ValueError, match="not waiting"):
        executor.respond(ev.trial_id, Decision.CONTINUE)
    assert [e.kind for e in drive(executor)] == ["complete"]


def test_an_unpicklable_trainable_is_refused_clearly(tmp_path):
    ex = LocalExecutor(max_concurrent=1)
    with pytest.raises(TypeError, match="define it at module level"):
        ex.setup(lambda config: None, str(tmp_path))
    with pytest.raises(TypeError, match="function trainable"):
        ex.setup(42, str(tmp_path))


def test_an_unpicklable_config_is_refused_clearly(executor, tmp_path):
    executor.setup(counting, str(tmp_path))
    with pytest.raises(TypeError, match="config must be picklable"):
        executor.start(TrialRun("a", {"dir": str(tmp_path), "f": lambda: 1}, trial_dir=str(tmp_path / "a")))
    assert executor.running == []


def test_a_trainable_from_an_interactive_session_is_refused_clearly(tmp_path, monkeypatch):
    main = types.ModuleType("__main__")  # a REPL's or notebook's __main__: no __file__

    def typed_in(config):
        pass

    typed_in.__module__, typed_in.__qualname__ = "__main__", "typed_in"
    main.typed_in = typed_in
    monkeypatch.setitem(sys.modules, "__main__", main)
    with pytest.raises(TypeError, match="interactive session.*start_method='fork'"):
        LocalExecutor(max_concurrent=1).setup(typed_in, str(tmp_path))


def test_fork_runs_a_closure(tmp_path):
    offset = 10

    def closure(config):
        tune.report({"value": config["x"] + offset})

    ex = LocalExecutor(max_concurrent=1, start_method="fork")
    try:
        ex.setup(closure, str(tmp_path))
        ex.start(TrialRun("c", {"x": 1}, trial_dir=str(tmp_path / "c")))
        events = drive(ex)
    finally:
        ex.shutdown(timeout=5.0)
    assert events[0].metrics["value"] == 11 and events[-1].kind == "complete"


# -- slots, stop, shutdown ----------------------------------------------------------------------------------


def test_max_concurrent_is_respected(tmp_path):
    os.makedirs(tmp_path / "running")
    ex = LocalExecutor(max_concurrent=2, num_cpus=8)
    ex.setup(concurrent, str(tmp_path))
    pending, events = [f"{i:05d}" for i in range(4)], []
    try:
        deadline = time.monotonic() + 45
        while pending or ex.running:
            assert time.monotonic() < deadline
            while pending and ex.has_free_slot({"cpu": 1}):
                trial_id = pending.pop(0)
                ex.start(TrialRun(trial_id, {"dir": str(tmp_path), "expect": 2}, trial_dir=str(tmp_path / trial_id)))
            assert len(ex.running) <= 2
            for ev in ex.poll(5.0):
                events.append(ev)
                if ev.kind == "result":
                    ex.respond(ev.trial_id, Decision.CONTINUE)
    finally:
        ex.shutdown(timeout=5.0)
    seen = [e.metrics["seen"] for e in events if e.kind == "result"]
    assert len(seen) == 4 and [e.kind for e in events].count("complete") == 4
    assert max(seen) == 2


def test_cpus_limit_the_trials_too(executor, tmp_path):
    executor.setup(sleeper, str(tmp_path))
    assert executor.has_free_slot({"cpu": 3})
    executor.start(TrialRun("a", {"dir": str(tmp_path)}, trial_dir=str(tmp_path / "a"), resources={"cpu": 3}))
    assert not executor.has_free_slot({"cpu": 2})
    assert executor.has_free_slot({"cpu": 1})
    with pytest.raises(RuntimeError, match="no free slot"):
        executor.start(TrialRun("b", {"dir": str(tmp_path)}, trial_dir=str(tmp_path / "b"), resources={"cpu": 2}))
    with pytest.raises(ValueError, match="already running"):
        executor.start(TrialRun("a", {"dir": str(tmp_path)}, trial_dir=str(tmp_path / "a")))


@pytest.mark.parametrize("resources, error, match", [
    ({"cpu": 1, "tpu": 1}, ValueError, "unknown resource 'tpu'"),
    ({"cpu": -1}, ValueError, r"resources\['cpu'\]"),
    ({"gpu": 0.5}, ValueError, "whole number of GPUs"),
    ({"cpu": 5}, ValueError, "can never run"),
    ("cpu", TypeError, "resources must be a dict"),
])
def test_bad_resources_are_clear_errors(executor, resources, error, match):
    with pytest.raises(error, match=match):
        executor.has_free_slot(resources)


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_concurrent"):
        LocalExecutor(max_concurrent=0)
    with pytest.raises(ValueError, match="start_method"):
        LocalExecutor(start_method="teleport")
    with pytest.raises(RuntimeError, match="setup"):
        LocalExecutor().start(TrialRun("a", {}, trial_dir="/nonexistent"))


def test_stop_ends_a_trial_with_no_further_events(executor, tmp_path):
    start_trial(executor, sleeper, tmp_path, trial_id="a", config={"ignore_term": True})
    wait_for(lambda: os.path.exists(tmp_path / "pid_a"))
    pid = int((tmp_path / "pid_a").read_text())
    executor.stop("a")
    assert gone(pid) and executor.running == []
    assert executor.poll(0.2) == []
    executor.stop("a")  # not running: nothing to do


def test_shutdown_leaves_no_process_behind(tmp_path):
    ex = LocalExecutor(max_concurrent=2, num_cpus=4)
    ex.setup(sleeper, str(tmp_path))
    for trial_id, ignore in (("a", False), ("b", True)):
        ex.start(TrialRun(trial_id, {"dir": str(tmp_path), "ignore_term": ignore}, trial_dir=str(tmp_path / trial_id)))
    wait_for(lambda: os.path.exists(tmp_path / "pid_a") and os.path.exists(tmp_path / "pid_b"))
    pids = [int((tmp_path / f"pid_{t}").read_text()) for t in "ab"]
    ex.shutdown(timeout=2.0)
    assert all(gone(pid) for pid in pids)
    assert ex.running == [] and not ex.has_free_slot({"cpu": 1})
    with pytest.raises(RuntimeError, match="shut down"):
        ex.start(TrialRun("c", {"dir": str(tmp_path)}, trial_dir=str(tmp_path / "c")))


def test_registered_as_the_local_executor():
    from ember.tune import registry
    assert registry.get("executor", "local") is LocalExecutor
    assert isinstance(registry.resolve("executor", None, max_concurrent=3), LocalExecutor)
    assert tune.LocalExecutor is LocalExecutor
