"""Callbacks (Ray Tune's hooks) and the loggers built on them: each file read back by its own tool."""
import csv
import json
import os

import pytest

import ember
from ember import tune
from ember.tune.callbacks import CallbackList, plugin_callbacks

SPACE = {"x": tune.uniform(-1.0, 1.0), "opt": {"lr": tune.loguniform(1e-4, 1e-1)}}


def three_steps(config):
    for step in range(1, 4):
        value = (config["x"] - 0.3) ** 2 + 1.0 / step
        tune.report({"loss": value, "val": {"acc": -value}, "note": f"step {step}"})


def fails_once_or_always(config):
    """Trial x > 0 always fails; the others fail on their first attempt only (a marker file remembers)."""
    marker = os.path.join(config["marker_dir"], tune.get_trial_id())
    first = not os.path.exists(marker)
    open(marker, "a").close()
    tune.report({"loss": abs(config["x"])})
    if first or config["x"] > 0:
        raise ValueError("bad luck")


class Recorder(tune.Callback):
    """Records every hook call as (hook, trial id, extra)."""

    def __init__(self):
        self.calls = []

    def setup(self, stop=None, num_samples=None, total_num_samples=None, **info):
        self.calls.append(("setup", num_samples, total_num_samples, info["experiment"].metric))

    def on_trial_start(self, iteration, trials, trial, **info):
        assert trial in trials and trial.status == "RUNNING"
        self.calls.append(("start", trial.trial_id))

    def on_trial_result(self, iteration, trials, trial, result, **info):
        assert isinstance(iteration, int) and result is trial.results[result["training_iteration"] - 1]
        self.calls.append(("result", trial.trial_id, result["training_iteration"]))

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.calls.append(("complete", trial.trial_id, trial.status))

    def on_trial_recover(self, iteration, trials, trial, **info):
        self.calls.append(("recover", trial.trial_id, "bad luck" in trial.error))

    def on_trial_error(self, iteration, trials, trial, **info):
        self.calls.append(("error", trial.trial_id, trial.status))

    def on_experiment_end(self, trials, **info):
        self.calls.append(("end", len(trials), info["error"]))

    def of(self, trial_id):
        return [c[0] if len(c) == 2 else c[:1] + c[2:] for c in self.calls if len(c) > 1 and c[1] == trial_id]


def _tuner(tmp_path, name, trainable, callbacks, num_samples=2, space=SPACE, **tune_kwargs):
    return tune.Tuner(trainable, param_space=space,
                      tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=num_samples, seed=0,
                                                  max_concurrent_trials=2, **tune_kwargs),
                      run_config=tune.RunConfig(storage_path=str(tmp_path), name=name, verbose=0,
                                                callbacks=callbacks, failure_config=tune.FailureConfig(1)))


@pytest.mark.timeout(120)
def test_hooks_follow_each_trial_through_results_retries_and_errors(tmp_path):
    recorder = Recorder()
    space = {"x": tune.grid_search([-0.5, 0.5]), "marker_dir": str(tmp_path)}
    grid = _tuner(tmp_path, "hooks", fails_once_or_always, [recorder], num_samples=1, space=space).fit()
    assert recorder.calls[0] == ("setup", 1, 2, "loss")
    assert recorder.calls[-1] == ("end", 2, None)
    by_x = {r.config["x"]: r.trial_id for r in grid}
    # x=-0.5 fails once, is retried and completes; x=0.5 fails twice: ERROR after its one retry
    assert recorder.of(by_x[-0.5]) == ["start", ("result", 1), ("recover", True), "start", ("result", 1),
                                       ("complete", "TERMINATED")]
    assert recorder.of(by_x[0.5]) == ["start", ("result", 1), ("recover", True), "start", ("result", 1),
                                      ("error", "ERROR")]


@pytest.mark.timeout(120)
def test_a_failing_callback_ends_the_run_with_its_error_and_the_experiment_restores(tmp_path):
    class Boom(Recorder):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            if result["training_iteration"] == 2:
                raise RuntimeError("callback exploded")

    boom = Boom()
    with pytest.raises(RuntimeError, match="callback exploded"):
        _tuner(tmp_path, "boom", three_steps, [boom]).fit()
    assert boom.calls[-1][0] == "end" and isinstance(boom.calls[-1][2], RuntimeError)  # told why it ended
    recorder = Recorder()
    grid = tune.Tuner.restore(str(tmp_path / "boom"), three_steps, callbacks=[recorder]).fit()
    assert grid.num_terminated == 2 and all(len(r.metrics_history) == 3 for r in grid)
    assert ("complete", grid[0].trial_id, "TERMINATED") in recorder.calls


def test_callbacks_are_checked_and_plugins_contribute_theirs():
    with pytest.raises(TypeError, match="RunConfig: callbacks must be a list of ember.tune.Callback"):
        tune.RunConfig(callbacks=[print])
    mine = Recorder()

    class Plugin:
        @ember.hookimpl
        def ember_tune_callbacks(self, run_config):
            return [mine] if run_config.name == "with-plugin" else None

    tune.registry.plugin_manager()
    ember.register_plugin(Plugin(), "test-callbacks")
    try:
        assert plugin_callbacks(tune.RunConfig(name="with-plugin")) == [mine]
        assert plugin_callbacks(tune.RunConfig(name="other")) == []
        tuner = tune.Tuner(three_steps, param_space=SPACE, tune_config=tune.TuneConfig(metric="loss", mode="min"),
                           run_config=tune.RunConfig(name="with-plugin", verbose=1))
        kinds = [type(cb).__name__ for cb in tuner._callbacks()]
        assert kinds == ["JsonLoggerCallback", "CSVLoggerCallback", "Recorder", "ProgressReporter"]
    finally:
        ember.unregister_plugin("test-callbacks")


def test_a_trial_ending_by_a_decision_is_announced_once():
    exp = tune.Experiment({"x": tune.uniform(0, 1)}, "loss", "min", num_samples=2, seed=0,
                          stop={"training_iteration": 2})
    recorder = Recorder()
    callbacks = CallbackList([recorder])
    a = exp.ask()
    callbacks.trial_started(exp.trials, a)
    for _ in range(2):
        before = a.run_iteration
        exp.report(a, {"loss": 1.0})
        callbacks.trial_result(exp.trials, a, before)
    exp.report(a, {"loss": 1.0})  # after STOP: ignored, not announced
    callbacks.trial_result(exp.trials, a, a.run_iteration)
    callbacks.notice_ends(exp.trials)
    callbacks.notice_ends(exp.trials)
    assert recorder.of(a.trial_id) == ["start", ("result", 1), ("result", 2), ("complete", "TERMINATED")]


@pytest.mark.timeout(180)
def test_loggers_write_files_their_own_tools_read(tmp_path):
    pytest.importorskip("tensorboardX")
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    mlflow_tracking = pytest.importorskip("mlflow.tracking")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"  # a local store (MLflow 3 refuses a file:// store by default)
    client = mlflow_tracking.MlflowClient(tracking_uri=uri)
    client.create_experiment("digits", artifact_location=(tmp_path / "artifacts").as_uri())  # found by its name
    callbacks = [tune.TBXLoggerCallback(flush_secs=1),
                 tune.MLflowLoggerCallback(uri, experiment_name="digits", tags={"team": "ember"}, save_artifact=True)]
    grid = _tuner(tmp_path, "logged", three_steps, callbacks).fit()
    experiment = client.get_experiment_by_name("digits")
    runs = {run.info.run_name: run for run in client.search_runs([experiment.experiment_id])}
    assert sorted(runs) == sorted(r.trial_id for r in grid)
    for result in grid:
        history = result.metrics_history
        # JSON and CSV: always on
        with open(os.path.join(result.path, "params.json")) as f:
            assert json.load(f) == result.config
        with open(os.path.join(result.path, "result.json")) as f:
            assert [json.loads(line) for line in f] == history
        with open(os.path.join(result.path, "progress.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        assert [float(r["val/acc"]) for r in rows] == [h["val"]["acc"] for h in history]
        assert [r["note"] for r in rows] == ["step 1", "step 2", "step 3"]
        # TensorBoard: scalars per step, read by tensorboard's own reader
        acc = event_accumulator.EventAccumulator(result.path)
        acc.Reload()
        assert "tune/loss" in acc.Tags()["scalars"] and "tune/note" not in acc.Tags()["scalars"]
        events = acc.Scalars("tune/val/acc")
        assert [e.step for e in events] == [1, 2, 3]
        assert [e.value for e in events] == pytest.approx([h["val"]["acc"] for h in history], rel=1e-6)
        from tensorboard.plugins.hparams import plugin_data_pb2
        start = acc.PluginTagToContent("hparams")["_hparams_/session_start_info"]
        hparams = plugin_data_pb2.HParamsPluginData.FromString(start).session_start_info.hparams
        assert hparams["opt/lr"].number_value == pytest.approx(result.config["opt"]["lr"])  # the HPARAMS tab
        # MLflow: a finished run per trial with its params, tags and metric history
        run = runs[result.trial_id]
        assert run.info.status == "FINISHED" and run.data.tags["team"] == "ember"
        assert float(run.data.params["opt/lr"]) == pytest.approx(result.config["opt"]["lr"])
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"params.json", "result.json", "progress.csv"} <= artifacts  # save_artifact: the trial's folder
        losses = client.get_metric_history(run.info.run_id, "loss")
        assert sorted((m.step, m.value) for m in losses) == [(h["training_iteration"], pytest.approx(h["loss"]))
                                                             for h in history]


def test_trials_of_a_restored_experiment_are_announced_when_they_end_without_starting_again():
    exp = tune.Experiment({"x": tune.uniform(0, 1)}, "loss", "min", num_samples=1, seed=0)
    trial = exp.ask()  # running before the callbacks were set up (as after a restore)
    recorder = Recorder()
    callbacks = CallbackList([recorder])
    callbacks.watch(exp.trials)
    exp.tell(trial, {"loss": 0.5})
    callbacks.notice_ends(exp.trials)
    assert recorder.calls == [("complete", trial.trial_id, "TERMINATED")]
