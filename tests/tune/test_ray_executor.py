"""RayExecutor against a local Ray instance started here: results, decisions, checkpoints, errors, killed trials."""
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

import ember
from ember import tune
from ember.tune import Decision
from ember.tune.executors.base import TrialRun

# 90 s, not 60: the first test also waits for the module's Ray instance to start (13 s on 2 idle cores, 35 s on
# busy ones)
pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def ray():
    ray = pytest.importorskip("ray", exc_type=ImportError,
                              reason="Ray cannot be imported (pip install ember-tune[ray]): "
                                     "the Ray executor cannot be tested without it")
    # the trainables below are shipped by value: Ray's workers need not import this test module
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    # one GPU Ray believes in (none is needed: Ray only counts it and sets CUDA_VISIBLE_DEVICES); Ray refuses a
    # GPU that CUDA_VISIBLE_DEVICES hides, so the variable is lifted while Ray starts
    hidden = os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    try:
        ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    finally:
        if hidden is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = hidden
    yield ray
    ray.shutdown()
    ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@pytest.fixture
def executor_for(ray, tmp_path):
    """``executor_for(trainable, **kwargs)``: a RayExecutor set up in tmp_path; shut down after the test."""
    from ember.tune.executors.ray import RayExecutor
    made = []

    def make(trainable, **kwargs):
        executor = RayExecutor(**kwargs)
        executor.setup(trainable, str(tmp_path))
        made.append(executor)
        return executor

    yield make
    for executor in made:
        executor.shutdown()


def trial(tmp_path, trial_id, config, **kwargs):
    return TrialRun(trial_id, config, str(tmp_path / trial_id), **kwargs)


def drive(executor, decide=lambda event: Decision.CONTINUE, timeout=45.0):
    """Poll until every started trial ended, answering results with ``decide``."""
    events, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in executor.poll(timeout=1.0):
            events.append(event)
            if event.kind == "result":
                executor.respond(event.trial_id, decide(event))
        if not executor.running:
            return events
    raise AssertionError(f"trials did not end in {timeout} s; events so far: {events}")


def next_events(executor, n, timeout=45.0):
    """The next ``n`` events, unanswered."""
    events, deadline = [], time.monotonic() + timeout
    while len(events) < n and time.monotonic() < deadline:
        events.extend(executor.poll(timeout=1.0))
    assert len(events) == n, f"expected {n} events in {timeout} s, got {events}"
    return events


def counting(config):
    start = tune.get_checkpoint()
    step = int(start.to_dict()["step"].item()) if start is not None else 0
    while step < config["steps"]:
        step += 1
        tune.report({"loss": 1.0 / step, "pid": os.getpid(), "resumed_from": start.path if start else None},
                    checkpoint={"step": ember.tensor(step), "w": ember.full((3,), float(step))})


def test_results_flow_with_checkpoints_then_complete(executor_for, tmp_path):
    executor = executor_for(counting)
    assert executor.has_free_slot({"cpu": 1, "gpu": 0})
    executor.start(trial(tmp_path, "00000", {"steps": 3}))
    events = drive(executor)
    assert [e.kind for e in events] == ["result"] * 3 + ["complete"]
    assert [e.metrics["training_iteration"] for e in events[:3]] == [1, 2, 3]
    assert [e.metrics["loss"] for e in events[:3]] == pytest.approx([1.0, 0.5, 1 / 3])
    assert {e.trial_id for e in events} == {"00000"}
    assert events[0].metrics["pid"] != os.getpid()  # the trial ran in a Ray worker process
    for i, event in enumerate(events[:3], start=1):
        assert event.checkpoint == str(tmp_path / "00000" / f"checkpoint_{i:06d}.safetensors")
        np.testing.assert_array_equal(ember.load(event.checkpoint)["w"].numpy(), [float(i)] * 3)


def test_stop_decision_ends_the_trial(executor_for, tmp_path):
    executor = executor_for(counting)
    executor.start(trial(tmp_path, "00001", {"steps": 10}))
    events = drive(executor, lambda e: Decision.STOP if e.metrics["training_iteration"] == 2 else Decision.CONTINUE)
    assert [e.kind for e in events] == ["result", "result", "stopped"]
    assert executor.has_free_slot({"cpu": 2})  # the trial's CPU went back


@pytest.mark.parametrize("shared_storage", [None, True])  # found out, or taken on the user's word
def test_pause_then_resume_from_checkpoint(executor_for, tmp_path, shared_storage):
    executor = executor_for(counting, shared_storage=shared_storage)
    executor.start(trial(tmp_path, "00002", {"steps": 4}))
    first = drive(executor, lambda e: Decision.PAUSE if e.metrics["training_iteration"] == 2 else Decision.CONTINUE)
    assert [e.kind for e in first] == ["result", "result", "paused"]
    executor.start(trial(tmp_path, "00002", {"steps": 4}, checkpoint=first[1].checkpoint, iteration=2,
                         time_total_s=100.0))
    second = drive(executor)
    assert [e.kind for e in second] == ["result", "result", "complete"]
    assert 100.0 <= second[0].metrics["time_total_s"] < 160.0  # the trial's clock went on from its earlier run
    # the resumed run went on from step 2 (its checkpoint) and numbers its results after the first run's
    assert [e.metrics["training_iteration"] for e in second[:2]] == [3, 4]
    assert [e.metrics["loss"] for e in second[:2]] == pytest.approx([1 / 3, 1 / 4])
    assert second[0].metrics["pid"] != first[0].metrics["pid"]  # a fresh process
    assert int(ember.load(second[1].checkpoint)["step"].item()) == 4
    assert second[0].metrics["resumed_from"] == first[1].checkpoint  # the trial folder is shared: used in place


def failing(config):
    tune.report({"loss": 1.0})
    raise ValueError(f"bad learning rate {config['lr']}")


def test_error_comes_back_with_its_traceback(executor_for, tmp_path):
    executor = executor_for(failing)
    executor.start(trial(tmp_path, "00003", {"lr": -1}))
    events = drive(executor)
    assert [e.kind for e in events] == ["result", "error"]
    assert "Traceback" in events[1].error
    assert "ValueError: bad learning rate -1" in events[1].error
    assert "in failing" in events[1].error  # the frame of the trainable that raised


def test_a_trainable_the_workers_cannot_load_is_an_error(executor_for, tmp_path, monkeypatch):
    (tmp_path / "driver_only_module.py").write_text("def train(config):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # importable here, not in Ray's workers: pickled by reference
    from driver_only_module import train
    executor = executor_for(train)
    executor.start(trial(tmp_path, "00018", {}))
    events = drive(executor)
    assert [e.kind for e in events] == ["error"]
    assert "could not be loaded in the trial's Ray worker" in events[0].error
    assert "No module named 'driver_only_module'" in events[0].error
    assert "\x1b[" not in events[0].error  # no terminal colour codes


def returns_unpicklable(config):
    tune.report({"loss": 1.0})
    return {"loss": 0.5, "lock": threading.Lock()}


def test_a_final_result_that_cannot_travel_is_an_error(executor_for, tmp_path):
    executor = executor_for(returns_unpicklable)
    executor.start(trial(tmp_path, "00011", {}))
    events = drive(executor)
    assert [e.kind for e in events] == ["result", "error"]
    assert "could not come back through Ray" in events[1].error and "lock" in events[1].error


def returns_metrics(config):
    tune.report({"loss": 1.0})
    return {"loss": 0.25}


def test_returned_metrics_come_with_complete(executor_for, tmp_path):
    executor = executor_for(returns_metrics)
    executor.start(trial(tmp_path, "00012", {}))
    events = drive(executor)
    assert [e.kind for e in events] == ["result", "complete"]
    assert events[1].metrics["loss"] == 0.25 and events[1].metrics["training_iteration"] == 2


def dying(config):
    tune.report({"loss": 1.0})
    if config["how"] == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(3)


@pytest.mark.parametrize("how", ["sigkill", "exit"])
def test_killed_trial_process_is_an_error_and_others_go_on(executor_for, tmp_path, how):
    executor = executor_for(lambda config: (dying if "how" in config else counting)(config))
    executor.start(trial(tmp_path, "00004", {"how": how}))
    executor.start(trial(tmp_path, "00005", {"steps": 3}))
    events = drive(executor)
    dead = [e for e in events if e.trial_id == "00004"]
    assert [e.kind for e in dead] == ["result", "error"]
    assert "trial 00004: its Ray worker process died before the trainable ended" in dead[1].error
    assert [e.kind for e in events if e.trial_id == "00005"] == ["result"] * 3 + ["complete"]


def sleeper(config):
    tune.report({"loss": 1.0})
    time.sleep(600)


def test_stop_kills_a_running_trial_and_frees_its_resources(executor_for, tmp_path):
    executor = executor_for(sleeper)
    executor.start(trial(tmp_path, "00006", {}, resources={"cpu": 2, "gpu": 0}))
    assert not executor.has_free_slot({"cpu": 1})
    assert [e.kind for e in next_events(executor, 1)] == ["result"]
    executor.stop("00006")
    assert executor.poll(timeout=0.5) == []  # no further events from a stopped trial
    assert executor.has_free_slot({"cpu": 2})
    executor.start(trial(tmp_path, "00007", {"steps": 1}, resources={"cpu": 2, "gpu": 0}))
    # the CPUs came back: a trial needing both of them started
    assert [(e.kind, e.trial_id) for e in next_events(executor, 1)] == [("result", "00007")]


def test_free_slots_follow_cluster_resources_and_max_concurrent(executor_for, tmp_path):
    executor = executor_for(sleeper, max_concurrent=2)
    with pytest.raises(ValueError, match="asks for 2 GPU but the whole Ray cluster has 1"):
        executor.has_free_slot({"cpu": 1, "gpu": 2})
    with pytest.raises(ValueError, match="asks for 3 CPU but the whole Ray cluster has 2"):
        executor.has_free_slot({"cpu": 3, "gpu": 0})
    with pytest.raises(ValueError, match="'cpu' must be a non-negative number"):
        executor.has_free_slot({"cpu": -1})
    executor.start(trial(tmp_path, "00009", {}, resources={"cpu": 1, "gpu": 0}))
    assert executor.has_free_slot({"cpu": 1, "gpu": 0})
    assert not executor.has_free_slot({"cpu": 2, "gpu": 0})  # one of the two CPUs is held
    assert executor.has_free_slot({"cpu": 0, "gpu": 0})
    executor.start(trial(tmp_path, "00010", {}, resources={"cpu": 0, "gpu": 0}))
    assert not executor.has_free_slot({"cpu": 0, "gpu": 0})  # max_concurrent=2 reached
    events = next_events(executor, 2)
    assert sorted(e.trial_id for e in events) == ["00009", "00010"]  # both run at once


def report_gpus(config):
    tune.report({"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")})
    time.sleep(600)


def test_gpus_are_ray_resources(executor_for, tmp_path):
    executor = executor_for(report_gpus)
    executor.start(trial(tmp_path, "00016", {}, resources={"cpu": 1, "gpu": 1}))
    assert not executor.has_free_slot({"cpu": 0, "gpu": 1})  # the cluster's one GPU is held
    assert not executor.has_free_slot({"cpu": 0, "gpu": 0.5})
    executor.start(trial(tmp_path, "00017", {}, resources={"cpu": 1, "gpu": 0}))
    seen = {e.trial_id: e.metrics["cuda_visible_devices"] for e in next_events(executor, 2)}
    assert seen == {"00016": "0", "00017": ""}  # Ray's pick for the GPU trial; no GPU for the other
    executor.stop("00016")
    assert executor.has_free_slot({"cpu": 0, "gpu": 1})


def test_checkpoints_travel_through_ray_without_shared_storage(executor_for, tmp_path):
    executor = executor_for(counting, shared_storage=False)
    executor.start(trial(tmp_path, "00008", {"steps": 4}))
    first = drive(executor, lambda e: Decision.PAUSE if e.metrics["training_iteration"] == 2 else Decision.CONTINUE)
    assert [e.kind for e in first] == ["result", "result", "paused"]
    path = tmp_path / "00008" / "checkpoint_000002.safetensors"
    assert first[1].checkpoint == str(path)  # written here by the driver, from the bytes the worker sent
    assert int(ember.load(str(path))["step"].item()) == 2
    executor.start(trial(tmp_path, "00008", {"steps": 4}, checkpoint=str(path), iteration=2))
    second = drive(executor)
    assert [e.metrics["loss"] for e in second[:2]] == pytest.approx([1 / 3, 1 / 4])
    resumed_from = second[0].metrics["resumed_from"]  # a copy the worker made of the bytes sent to it
    assert resumed_from != str(path) and resumed_from.endswith("checkpoint_000002.safetensors")
    assert second[1].checkpoint == str(tmp_path / "00008" / "checkpoint_000004.safetensors")
    assert int(ember.load(second[1].checkpoint)["step"].item()) == 4


def test_registered_as_ray():
    from ember.tune import registry
    from ember.tune.executors.ray import RayExecutor
    assert registry.get("executor", "ray") is RayExecutor


def test_missing_ray_is_a_clear_error(monkeypatch):
    from ember.tune.executors.ray import RayExecutor
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails
    with pytest.raises(ImportError, match=r"pip install ember-tune\[ray\]"):
        RayExecutor()


def test_misuse_is_a_clear_error(executor_for, tmp_path):
    from ember.tune.executors.ray import RayExecutor
    with pytest.raises(RuntimeError, match="setup.* must be called before start"):
        RayExecutor().start(trial(tmp_path, "00013", {}))
    executor = executor_for(sleeper, max_concurrent=1)
    with pytest.raises(ValueError, match="not waiting for an answer"):
        executor.respond("00013", Decision.CONTINUE)
    executor.start(trial(tmp_path, "00013", {}))
    with pytest.raises(ValueError, match="already running"):
        executor.start(trial(tmp_path, "00013", {}))
    with pytest.raises(RuntimeError, match="no free slot for trial 00014"):
        executor.start(trial(tmp_path, "00014", {}))
    next_events(executor, 1)
    with pytest.raises(ValueError, match="'maybe' is not a valid Decision"):
        executor.respond("00013", "maybe")
    executor.respond("00013", "continue")
    with pytest.raises(ValueError, match="not waiting for an answer"):
        executor.respond("00013", Decision.CONTINUE)  # one answer per result
    executor.shutdown()
    assert executor.running == [] and not executor.has_free_slot({"cpu": 1})
    with pytest.raises(RuntimeError, match="was shut down"):
        executor.start(trial(tmp_path, "00015", {}))
    with pytest.raises(TypeError, match="trainable must be a function"):
        RayExecutor().setup("train.py", str(tmp_path))
    with pytest.raises(TypeError, match="cannot be sent to the Ray cluster"):
        RayExecutor().setup(Unpicklable(), str(tmp_path))
    with pytest.raises(ValueError, match="max_concurrent must be a positive int"):
        RayExecutor(max_concurrent=0)
    with pytest.raises(TypeError, match="shared_storage must be True, False or None"):
        RayExecutor(shared_storage="yes")


class Unpicklable:
    def __init__(self):
        self.lock = threading.Lock()

    def __call__(self, config):
        pass


def hyperband_trainable(config):
    """Reports (x - 0.3)^2 + 1/step, a checkpoint every step; resumes from it; x < -0.8 raises."""
    start = tune.get_checkpoint()
    step = resumed_at = int(start.to_dict()["step"].item()) if start is not None else 0
    if config["x"] < -0.8:
        raise ValueError(f"x={config['x']:.3f} is out of range")
    while step < 4:
        step += 1
        tune.report({"loss": (config["x"] - 0.3) ** 2 + 1.0 / step, "resumed_at": resumed_at},
                    checkpoint={"step": ember.tensor(step)})


@pytest.mark.timeout(180)  # a small experiment: ~12 actor starts (pauses resume in fresh ones)
def test_tuner_runs_a_hyperband_experiment_on_ray(ray, tmp_path):
    space = {"x": tune.grid_search([0.0, 0.3, -0.5, 0.7, -0.9])}
    tuner = tune.Tuner(hyperband_trainable, param_space=space,
                       tune_config=tune.TuneConfig(metric="loss", mode="min", executor="ray",
                                                   scheduler=tune.HyperBandScheduler(max_t=4, reduction_factor=2)),
                       run_config=tune.RunConfig(storage_path=str(tmp_path), name="hb", verbose=0))
    grid = tuner.fit()
    assert ray.is_initialized()  # the executor used the running instance and left it running
    by_x = {r.config["x"]: r for r in grid}
    assert by_x[-0.9].status == "ERROR" and "ValueError: x=-0.900 is out of range" in by_x[-0.9].error
    assert grid.num_errors == 1 and grid.num_terminated == 4
    best = grid.get_best_result()
    assert best.config["x"] == 0.3
    # the best trial ran to max_t; its iterations are numbered on across pauses
    assert [m["training_iteration"] for m in best.metrics_history] == [1, 2, 3, 4]
    assert best.metrics["loss"] == pytest.approx(0.25)
    # a rung of Hyperband's first bracket (0.0, 0.3, -0.5, 0.7) promoted two trials, at least one of them paused
    # before: it resumed in a fresh actor from its checkpoint
    assert any(m["resumed_at"] > 0 for r in grid for m in r.metrics_history)
    for r in grid:  # a resumed run starts where its checkpoint was taken
        for before, after in zip(r.metrics_history, r.metrics_history[1:]):
            assert after["resumed_at"] in (before["resumed_at"], before["training_iteration"])
    assert min(len(r.metrics_history) for r in grid if r.error is None) < 4  # Hyperband dropped some early
    assert os.path.exists(best.checkpoint)


DRIVER = '''
import json, os, signal, sys, time
from ember import tune
from ember.tune.executors.ray import RayExecutor

mode, address, storage = sys.argv[1:4]


def train(config):
    with open(os.path.join(config["log_dir"], "runs.log"), "a") as f:
        f.write(f"{config['x']}\\n")
    for step in range(1, 4):
        if config["x"] == 3.0 and step == 2 and not os.path.exists(os.path.join(config["log_dir"], "driver_killed")):
            open(os.path.join(config["log_dir"], "driver_killed"), "w").close()
            os.kill(config["driver_pid"], signal.SIGKILL)  # the driver dies; Ray ends its actors
            time.sleep(60)
        tune.report({"loss": config["x"] + 1 / step})


if mode == "run":
    space = {"x": tune.grid_search([1.0, 2.0, 3.0]), "driver_pid": os.getpid(), "log_dir": storage}
    tune.Tuner(train, param_space=space,
               tune_config=tune.TuneConfig(metric="loss", mode="min",
                                           executor=RayExecutor(address, max_concurrent=1)),
               run_config=tune.RunConfig(storage_path=storage, name="killed", verbose=0)).fit()
else:
    import ray
    grid = tune.Tuner.restore(os.path.join(storage, "killed"), train).fit()
    print(json.dumps({"joined_and_left": not ray.is_initialized(),
                      "trials": {str(r.config["x"]): [r.status, r.metrics["loss"]] for r in grid}}))
'''


@pytest.mark.timeout(150)  # two drivers join the module's Ray instance; four trial actors
def test_driver_killed_then_restored_on_a_running_cluster(ray, tmp_path):
    import json
    import subprocess
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    address = ray.get_runtime_context().gcs_address

    def driver(mode):
        return subprocess.run([sys.executable, str(script), mode, address, str(tmp_path)], capture_output=True,
                              text=True, timeout=60)

    first = driver("run")
    assert first.returncode == -signal.SIGKILL, first.stderr  # killed by its trial 00002
    deadline = time.monotonic() + 30
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2  # Ray ended the dead driver's trial: no orphan holds a CPU
    second = driver("restore")
    assert second.returncode == 0, second.stderr
    out = json.loads(second.stdout.strip().splitlines()[-1])
    assert out["joined_and_left"]  # the executor joined the cluster by address and disconnected at the end
    assert out["trials"] == {"1.0": ["TERMINATED", pytest.approx(1 + 1 / 3)],
                             "2.0": ["TERMINATED", pytest.approx(2 + 1 / 3)],
                             "3.0": ["TERMINATED", pytest.approx(3 + 1 / 3)]}
    # the finished trials were not run again; the one running at the kill was
    assert (tmp_path / "runs.log").read_text().split() == ["1.0", "2.0", "3.0", "3.0"]
