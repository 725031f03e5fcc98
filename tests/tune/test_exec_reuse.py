"""LocalExecutor(reuse_actors=True): trial processes kept across trials and resumes, counted; nothing of one
trial reaches the next; a failed or killed process is replaced by exactly one new one.

Each trial process imports this module once (the trainables live here); with ``EMBER_TUNE_TEST_MARKS`` set,
that import leaves a file named by the process id, so the files count the process starts.
"""
import json
import os
import random

import numpy as np
import pytest

import ember
from ember import tune
from ember.tune import Decision, TrialRun
from ember.tune.executors.local import LocalExecutor
from ember.tune.journal import JournalError

from .exec_helpers import drive, gone
from .test_exec_gpus import fake_gputil  # noqa: F401 - a fixture

pytestmark = pytest.mark.timeout(120)

_MARKS = os.environ.get("EMBER_TUNE_TEST_MARKS")
if _MARKS:
    open(os.path.join(_MARKS, str(os.getpid())), "w").close()
_TRIALS_HERE: list = []  # module-level state: the trials this process ran


# -- trainables ---------------------------------------------------------------------------------------------


def quick(config):
    """Reports once; ``crash`` raises, ``die`` ends the process before reporting."""
    _TRIALS_HERE.append(tune.get_trial_id())
    if config.get("die"):
        os._exit(3)
    if config.get("crash"):
        raise RuntimeError("crashed on purpose")
    tune.report({"pid": os.getpid(), "trials_here": len(_TRIALS_HERE)})


def leaky(config):
    """Reports the per-process state it finds, then changes all of it (a later trial must not see that)."""
    ember_draw = ember.rand(3).tolist()
    seen = {"pid": os.getpid(), "ember_seed": str(ember.initial_seed()), "ember_draw": ember_draw,
            "numpy_draw": float(np.random.random()), "python_draw": random.random(),
            "cwd": os.getcwd(), "env": os.environ.get("EMBER_TUNE_LEAK"), "dtype": str(ember.get_default_dtype()),
            "grad": ember.is_grad_enabled(), "checkpoint": tune.get_checkpoint() is not None}
    ember.manual_seed(123)
    np.random.seed(123)
    random.seed(123)
    os.environ["EMBER_TUNE_LEAK"] = tune.get_trial_id()
    os.makedirs(config["dir"], exist_ok=True)
    os.chdir(config["dir"])
    ember.set_default_dtype(ember.float64)
    ember.set_grad_enabled(False)
    tune.report(seen, checkpoint={"step": 1})


def stepping(config):
    """A loss curve set by ``config["x"]``, one step per report, resuming from its checkpoint."""
    ckpt = tune.get_checkpoint()
    step = ckpt.to_dict()["step"] if ckpt is not None else 0
    resumed_from = step
    while step < 9:
        step += 1
        tune.report({"loss": config["x"] ** 2 + 1.0 / step, "resumed_from": resumed_from, "pid": os.getpid()},
                    checkpoint={"step": step})


# -- helpers ------------------------------------------------------------------------------------------------


@pytest.fixture
def marks(tmp_path, monkeypatch):
    """The folder where each trial process that imports this module leaves a file."""
    folder = tmp_path / "marks"
    folder.mkdir()
    monkeypatch.setenv("EMBER_TUNE_TEST_MARKS", str(folder))
    return folder


def run_trials(ex, trainable, tmp_path, configs, decide=lambda ev: Decision.CONTINUE):
    """Start ``configs`` as trials whenever a slot is free; returns every event."""
    ex.setup(trainable, str(tmp_path))
    pending, events = list(enumerate(configs)), []
    while pending or ex.running:
        while pending and ex.has_free_slot({"cpu": 1}):
            i, config = pending.pop(0)
            ex.start(TrialRun(f"{i:05d}", config, trial_dir=str(tmp_path / f"{i:05d}")))
        events += drive_once(ex, decide)
    return events


def drive_once(ex, decide):
    events = ex.poll(10.0)
    for ev in events:
        if ev.kind == "result":
            ex.respond(ev.trial_id, decide(ev))
    return events


def process_starts(marks) -> int:
    return len(os.listdir(marks))


# -- process counts -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("reuse, starts", [(True, 2), (False, 20)])
def test_twenty_trials_on_two_workers_use_two_processes(tmp_path, marks, reuse, starts):
    ex = LocalExecutor(max_concurrent=2, num_cpus=2, reuse_actors=reuse)
    try:
        events = run_trials(ex, quick, tmp_path, [{}] * 20)
        assert [e.kind for e in events].count("complete") == 20
        results = [e.metrics for e in events if e.kind == "result"]
        assert process_starts(marks) == len({r["pid"] for r in results}) == starts
        if reuse:  # the module was loaded once per process: its list saw every trial that process ran
            assert sorted(r["trials_here"] for r in results) == sorted(
                n for pid in {r["pid"] for r in results}
                for n in range(1, sum(r["pid"] == pid for r in results) + 1))
            assert ex.idle_processes == 2
    finally:
        ex.shutdown(timeout=5.0)
    assert ex.idle_processes == 0 and all(gone(int(pid)) for pid in os.listdir(marks))


@pytest.mark.parametrize("how", ["crash", "die"])
def test_a_failed_trial_gets_exactly_one_replacement_process(tmp_path, marks, how):
    ex = LocalExecutor(max_concurrent=1, reuse_actors=True)
    try:
        configs = [{}, {}, {how: True}, {}, {}]
        events = run_trials(ex, quick, tmp_path, configs)
    finally:
        ex.shutdown(timeout=5.0)
    (error,) = [e for e in events if e.kind == "error"]
    assert error.trial_id == "00002"
    assert ("RuntimeError: crashed on purpose" if how == "crash" else "died with exit code 3") in error.error
    results = {e.trial_id: e.metrics for e in events if e.kind == "result"}
    assert process_starts(marks) == 2
    assert results["00000"]["pid"] == results["00001"]["pid"] != results["00003"]["pid"] == results["00004"]["pid"]
    assert results["00003"]["trials_here"] == 1  # a fresh process: its module loaded anew


def test_a_stopped_trial_gets_a_new_process_and_the_count_stays_at_max_concurrent(tmp_path, marks):
    ex = LocalExecutor(max_concurrent=1, reuse_actors=True)
    try:
        run_trials(ex, quick, tmp_path, [{}])
        ex.start(TrialRun("s", {}, trial_dir=str(tmp_path / "s")))  # reuses the idle process
        (ev,) = ex.poll(10.0)
        assert ev.kind == "result" and ex.idle_processes == 0
        ex.stop("s")  # its process is killed while it waits for the answer
        assert gone(ev.metrics["pid"]) and ex.running == [] and ex.poll(0.2) == []
        events = run_trials(ex, quick, tmp_path, [{}])
        assert events[0].metrics["pid"] != ev.metrics["pid"] and events[0].metrics["trials_here"] == 1
    finally:
        ex.shutdown(timeout=5.0)
    assert process_starts(marks) == 2


def test_a_trial_with_gpus_gets_a_process_of_its_own(fake_gputil, tmp_path, marks):  # noqa: F811
    """CUDA_VISIBLE_DEVICES is read when a process starts: a GPU trial neither takes an idle process nor
    leaves its own for the next trial."""
    ex = LocalExecutor(max_concurrent=1, num_cpus=4, reuse_actors=True)
    pids = []
    try:
        ex.setup(quick, str(tmp_path))
        for trial_id, gpus in (("cpu1", 0), ("gpu", 1), ("cpu2", 0)):
            ex.start(TrialRun(trial_id, {}, trial_dir=str(tmp_path / trial_id), resources={"cpu": 1, "gpu": gpus}))
            (result, complete) = drive(ex)
            pids.append(result.metrics["pid"])
            assert complete.kind == "complete" and ex.idle_processes == (0 if gpus else 1)
    finally:
        ex.shutdown(timeout=5.0)
    assert len(set(pids)) == 3 == process_starts(marks)


# -- nothing of one trial reaches the next ------------------------------------------------------------------


def test_each_trial_starts_from_the_state_its_process_had(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_TUNE_LEAK", "driver")
    ex = LocalExecutor(max_concurrent=1, reuse_actors=True)
    try:
        events = run_trials(ex, leaky, tmp_path, [{"dir": str(tmp_path / f"elsewhere{i}")} for i in range(3)])
    finally:
        ex.shutdown(timeout=5.0)
    seen = [e.metrics for e in events if e.kind == "result"]
    assert [e.kind for e in events] == ["result", "complete"] * 3, events
    assert len(seen) == 3 and len({s["pid"] for s in seen}) == 1  # one process ran all three
    first = seen[0]
    assert first["cwd"] == os.getcwd() and first["env"] == "driver" and first["dtype"] == "ember.float32"
    assert first["grad"] is True and first["checkpoint"] is False
    for later in seen[1:]:
        for key in ("ember_seed", "ember_draw", "numpy_draw", "python_draw", "cwd", "env", "dtype", "grad",
                    "checkpoint"):
            assert later[key] == first[key], key
        assert later["trial_id"] != first["trial_id"]


def test_a_trial_sees_the_drivers_environment_at_its_own_start(tmp_path, monkeypatch):
    ex = LocalExecutor(max_concurrent=1, reuse_actors=True)
    try:
        monkeypatch.setenv("EMBER_TUNE_LEAK", "one")
        first = run_trials(ex, leaky, tmp_path, [{"dir": str(tmp_path)}])
        monkeypatch.setenv("EMBER_TUNE_LEAK", "two")
        ex.start(TrialRun("b", {"dir": str(tmp_path)}, trial_dir=str(tmp_path / "b")))
        second = drive(ex)
    finally:
        ex.shutdown(timeout=5.0)
    assert first[0].metrics["env"] == "one" and second[0].metrics["env"] == "two"
    assert first[0].metrics["pid"] == second[0].metrics["pid"]


# -- schedulers pause and resume trials on reused processes -------------------------------------------------


def _fit(tmp_path, name, scheduler, reuse, workers):
    tuner = tune.Tuner(stepping, param_space={"x": tune.uniform(-1, 1)},
                       tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=9, seed=3,
                                                   scheduler=scheduler, max_concurrent_trials=workers,
                                                   executor=LocalExecutor(max_concurrent=workers),
                                                   reuse_actors=reuse),
                       run_config=tune.RunConfig(name=name, storage_path=str(tmp_path), verbose=0))
    return tuner.fit()


def _scheduler(name):
    if name == "hyperband":
        return tune.HyperBandScheduler(max_t=9, reduction_factor=3)
    return tune.ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3)


@pytest.mark.parametrize("scheduler", ["hyperband", "asha"])
def test_schedulers_pause_and_resume_on_a_reused_process_as_on_fresh_ones(tmp_path, marks, scheduler):
    """One worker, so that the order of results, and so every decision, is the same in both runs."""
    fresh = _fit(tmp_path, "fresh", _scheduler(scheduler), reuse=False, workers=1)
    fresh_runs = sum(len({m["pid"] for m in r.metrics_history}) for r in fresh)
    assert process_starts(marks) == fresh_runs >= 9  # a process per trial run
    for pid in os.listdir(marks):
        os.remove(marks / pid)
    reused = _fit(tmp_path, "reused", _scheduler(scheduler), reuse=True, workers=1)

    def outline(grid):
        return sorted((r.trial_id, r.config["x"], r.status, [m["training_iteration"] for m in r.metrics_history],
                       [m["resumed_from"] for m in r.metrics_history], r.metrics["loss"]) for r in grid)

    assert outline(reused) == outline(fresh)  # the same decisions, resumes and results
    assert process_starts(marks) == 1
    if scheduler == "hyperband":  # trials were paused at rungs and resumed from their checkpoints
        assert any(m["resumed_from"] > 0 for r in reused for m in r.metrics_history)


def test_hyperband_on_two_reused_processes_resumes_each_trial_where_it_paused(tmp_path, marks):
    grid = _fit(tmp_path, "two", _scheduler("hyperband"), reuse=True, workers=2)
    assert process_starts(marks) == 2 and all(r.status == "TERMINATED" for r in grid)
    resumes = 0
    for r in grid:
        iterations = [m["training_iteration"] for m in r.metrics_history]
        assert iterations == list(range(1, len(iterations) + 1))
        for before, after in zip(r.metrics_history, r.metrics_history[1:]):
            if after["resumed_from"] != before["resumed_from"]:  # a resume: from the last checkpoint it wrote
                assert after["resumed_from"] == before["training_iteration"]
                resumes += 1
    assert resumes > 0


@pytest.mark.parametrize("reuse, processes", [(None, 1), (False, 3)])
def test_tune_config_reuse_actors_reaches_the_executor(tmp_path, reuse, processes):
    tuner = tune.Tuner(quick, param_space={"x": tune.uniform(0, 1)},
                       tune_config=tune.TuneConfig(metric="pid", mode="min", num_samples=3, max_concurrent_trials=1,
                                                   reuse_actors=reuse),
                       run_config=tune.RunConfig(name="r", storage_path=str(tmp_path), verbose=0))
    assert len({r.metrics["pid"] for r in tuner.fit()}) == processes


def test_restore_keeps_the_recorded_reuse_actors_and_checks_it(tmp_path):
    tuner = tune.Tuner(quick, param_space={"x": tune.uniform(0, 1)},
                       tune_config=tune.TuneConfig(metric="pid", mode="min", num_samples=2, max_concurrent_trials=1,
                                                   reuse_actors=False),
                       run_config=tune.RunConfig(name="r", storage_path=str(tmp_path), verbose=0))
    tuner.fit()
    assert tune.Tuner.restore(str(tmp_path / "r"), quick).tune_config.reuse_actors is False
    journal = tmp_path / "r" / "journal.jsonl"
    lines = journal.read_text().split("\n")
    header = json.loads(lines[0])
    header["tuner"]["reuse_actors"] = "yes"
    journal.write_text("\n".join([json.dumps(header), *lines[1:]]))
    with pytest.raises(JournalError, match="tuner 'reuse_actors' must be true, false or null, got 'yes'"):
        tune.Tuner.restore(str(tmp_path / "r"), quick)


def test_reuse_actors_must_be_a_bool():
    with pytest.raises(TypeError, match="reuse_actors must be True, False or None"):
        tune.TuneConfig(reuse_actors="yes")
    with pytest.raises(TypeError, match="reuse_actors must be True or False"):
        LocalExecutor(reuse_actors=1)


class _NoReuse(tune.Executor):
    pass


def test_an_executor_that_cannot_reuse_refuses_reuse_actors_true():
    with pytest.raises(ValueError, match="_NoReuse does not reuse trial processes"):
        _NoReuse().set_reuse_actors(True)
    _NoReuse().set_reuse_actors(False)
