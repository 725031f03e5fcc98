"""tune.report / get_checkpoint / get_trial_id and run_trial, in-process (no executor, no processes)."""
import os
import sys

import numpy as np
import pytest

import ember
from ember import tune
from ember.tune import Decision, TrialRun
from ember.tune.session import AUTO_KEYS, run_trial


class Recorder:
    """A channel that records every result and answers from a script (CONTINUE by default)."""

    def __init__(self, answers=None):
        self.results, self.checkpoints, self.answers = [], [], dict(answers or {})

    def __call__(self, metrics, checkpoint):
        self.results.append(metrics)
        self.checkpoints.append(checkpoint)
        return self.answers.get(metrics["training_iteration"], Decision.CONTINUE)


def _run(trainable, tmp_path, config=None, answers=None, **run_kwargs):
    channel = Recorder(answers)
    outcome = run_trial(trainable, TrialRun("t7", config or {}, trial_dir=str(tmp_path / "t7"), **run_kwargs), channel)
    return outcome, channel


@pytest.mark.parametrize("call", [lambda: tune.report({"a": 1}), tune.get_checkpoint, tune.get_trial_id])
def test_outside_a_trial_is_a_clear_error(call):
    with pytest.raises(RuntimeError, match="outside a trial"):
        call()


def test_report_fills_bookkeeping_keys_and_converts_numbers(tmp_path):
    def trainable(config):
        assert tune.get_trial_id() == "t7"
        tune.report({"loss": np.float32(0.5), "acc": ember.tensor(0.25), "n": np.int64(3), "name": "x"})
        tune.report({"loss": np.array([0.25])})

    outcome, channel = _run(trainable, tmp_path)
    assert outcome == ("complete", None, None)
    first, second = channel.results
    assert set(AUTO_KEYS) <= set(first)
    assert first["loss"] == 0.5 and type(first["loss"]) is float
    assert first["acc"] == 0.25 and type(first["acc"]) is float
    assert first["n"] == 3 and type(first["n"]) is int
    assert first["name"] == "x"
    assert [r["training_iteration"] for r in channel.results] == [1, 2]
    assert second["trial_id"] == "t7"
    assert second["time_total_s"] >= first["time_total_s"] >= 0
    assert second["timestamp"] >= first["timestamp"]
    assert second["time_this_iter_s"] >= 0


def test_iteration_and_checkpoint_continue_from_the_run(tmp_path):
    trial_dir = tmp_path / "t7"
    os.makedirs(trial_dir)
    ember.save({"step": 4}, str(trial_dir / "checkpoint_000004.safetensors"))

    def trainable(config):
        ckpt = tune.get_checkpoint()
        step = ckpt.to_dict()["step"]
        tune.report({"resumed_from": step}, checkpoint={"step": step + 1, "w": ember.ones(3)})
        assert tune.get_checkpoint().to_dict()["step"] == step + 1  # the latest one reported

    outcome, channel = _run(trainable, tmp_path, checkpoint=str(trial_dir / "checkpoint_000004.safetensors"),
                            iteration=4)
    assert outcome.kind == "complete"
    assert channel.results[0]["training_iteration"] == 5
    assert channel.results[0]["resumed_from"] == 4
    assert channel.checkpoints == [str(trial_dir / "checkpoint_000005.safetensors")]
    loaded = ember.load(channel.checkpoints[0])
    assert loaded["step"] == 5 and ember.allclose(loaded["w"], ember.ones(3))


def test_no_checkpoint_is_none(tmp_path):
    seen = []
    _run(lambda config: seen.append(tune.get_checkpoint()), tmp_path)
    assert seen == [None]


@pytest.mark.parametrize("decision, kind", [(Decision.STOP, "stopped"), (Decision.PAUSE, "paused")])
def test_pause_and_stop_end_the_trainable_through_except_exception(tmp_path, decision, kind):
    after, cleaned = [], []

    def trainable(config):
        try:
            for step in range(10):
                try:
                    tune.report({"step": step})
                except Exception:  # must not catch the end of the trial
                    after.append("swallowed")
                after.append(step)
        finally:
            cleaned.append(True)

    outcome, channel = _run(trainable, tmp_path, answers={3: decision})
    assert outcome.kind == kind
    assert after == [0, 1]  # the third report did not return
    assert len(channel.results) == 3
    assert cleaned == [True]


def test_a_trainable_that_swallows_the_end_cannot_report_again(tmp_path):
    def trainable(config):
        for step in range(5):
            try:
                tune.report({"step": step})
            except BaseException:
                pass

    outcome, channel = _run(trainable, tmp_path, answers={2: Decision.STOP})
    assert outcome.kind == "stopped"
    assert len(channel.results) == 2


def test_errors_carry_the_traceback(tmp_path):
    def failing_trainable(config):
        tune.report({"x": 1})
        raise ValueError(f"bad lr {config['lr']}")

    outcome, channel = _run(failing_trainable, tmp_path, config={"lr": 42})
    assert outcome.kind == "error"
    assert "Traceback" in outcome.error and "failing_trainable" in outcome.error
    assert "ValueError: bad lr 42" in outcome.error
    assert len(channel.results) == 1


@pytest.mark.parametrize("metrics, error, match", [
    ([1, 2], TypeError, "dict of metrics"),
    ({"training_iteration": 3}, ValueError, "fills in 'training_iteration'"),
    ({1: 2.0}, TypeError, "metric names must be strings"),
])
def test_bad_metrics_are_clear_errors(tmp_path, metrics, error, match):
    def trainable(config):
        with pytest.raises(error, match=match):
            tune.report(metrics)
        with pytest.raises(TypeError, match="dict of tensors"):
            tune.report({"a": 1}, checkpoint="not/a/checkpoint")

    assert _run(trainable, tmp_path)[0].kind == "complete"


def test_returned_dict_becomes_the_final_metrics(tmp_path):
    def trainable(config):
        tune.report({"loss": 2.0})
        return {"loss": 1.0}

    outcome, _ = _run(trainable, tmp_path)
    assert outcome.kind == "complete"
    assert outcome.metrics["loss"] == 1.0 and outcome.metrics["training_iteration"] == 2


def test_sys_exit(tmp_path):
    assert _run(lambda config: sys.exit(0), tmp_path)[0].kind == "complete"
    outcome = _run(lambda config: sys.exit(3), tmp_path)[0]
    assert outcome.kind == "error" and "sys.exit(3)" in outcome.error


def test_session_closes_after_the_trial(tmp_path):
    _run(lambda config: tune.report({"a": 1}), tmp_path)
    with pytest.raises(RuntimeError, match="outside a trial"):
        tune.report({"a": 1})


def test_trials_cannot_nest(tmp_path):
    def outer(config):
        inner = run_trial(lambda c: None, TrialRun("inner", {}, trial_dir=str(tmp_path)), Recorder())
        assert False, inner

    outcome, _ = _run(outer, tmp_path)
    assert outcome.kind == "error" and "already running in this process" in outcome.error


def test_time_total_continues_from_the_run_when_the_executor_knows_it(tmp_path):
    run = TrialRun("t7", {}, trial_dir=str(tmp_path))
    run.time_total_s = 100.0  # time spent in the trial's earlier runs
    channel = Recorder()
    run_trial(lambda config: tune.report({"a": 1}), run, channel)
    assert channel.results[0]["time_total_s"] >= 100.0
