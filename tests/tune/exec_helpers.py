"""Helpers for the LocalExecutor tests: driving an executor, watching processes."""
import time

from ember.tune import Decision, TrialRun


def drive(ex, decide=lambda ev: Decision.CONTINUE, limit=45.0):
    """Poll until no trial is left, answering each result with ``decide(event)``; returns all events."""
    events, deadline = [], time.monotonic() + limit
    while ex.running:
        assert time.monotonic() < deadline, f"trials still running: {ex.running}"
        for ev in ex.poll(5.0):
            events.append(ev)
            if ev.kind == "result":
                ex.respond(ev.trial_id, decide(ev))
    return events


def gone(pid: int) -> bool:
    """The process has exited (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_for(predicate, limit=20.0):
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def start_trial(ex, trainable, tmp_path, trial_id="00000", config=None, **kwargs):
    if getattr(ex, "trainable", None) is not trainable:
        ex.setup(trainable, str(tmp_path))
    config = {"dir": str(tmp_path), **(config or {})}
    run = TrialRun(trial_id, config, trial_dir=str(tmp_path / trial_id), **kwargs)
    ex.start(run)
    return run
