"""The ask/tell Experiment: trial states, searcher and scheduler driving, stop criteria, failures, checkpoints."""
import math
import os

import pytest

from ember import tune
from ember.tune import Decision
from ember.tune.journal import Journal
from ember.tune.schedulers.base import Scheduler
from ember.tune.searchers.base import FINISHED, Searcher

SPACE = {"x": tune.uniform(-2.0, 2.0), "width": tune.choice([8, 16, 32]), "fixed": "const"}


def loss(config, iteration):
    return (config["x"] - 0.5) ** 2 + 1.0 / iteration


def drive(exp, iterations=5, fail=None):
    """Run every trial the experiment hands out, one at a time, each for up to ``iterations`` reports."""
    while (trial := exp.ask()) is not None:
        if fail is not None and fail(trial):
            exp.tell(trial, error=RuntimeError(f"trial {trial.trial_id} blew up"))
            continue
        for it in range(trial.checkpoint_iteration + 1, iterations + 1):
            if exp.report(trial, {"loss": loss(trial.config, it)}) is not Decision.CONTINUE:
                break
        else:
            exp.tell(trial)
    return exp


@pytest.mark.parametrize("mode", ["min", "max"])
def test_a_nan_result_is_never_the_best_trial(mode):
    exp = tune.Experiment({"v": tune.grid_search([math.nan, 0.5, 0.1])}, "loss", mode)
    while (trial := exp.ask()) is not None:
        exp.report(trial, {"loss": trial.config["v"]})
        exp.tell(trial)
    assert exp.best_trial.config["v"] == (0.1 if mode == "min" else 0.5)
    assert exp.results().get_best_result().config["v"] == exp.best_trial.config["v"]


def test_ask_tell_random_search_runs_num_samples_trials():
    exp = drive(tune.Experiment(SPACE, "loss", "min", search_alg="random", num_samples=12, seed=3))
    assert exp.is_finished() and exp.ask() is None
    assert [t.trial_id for t in exp.trials] == [f"{i:05d}" for i in range(12)]
    for t in exp.trials:
        assert t.status == "TERMINATED"
        assert -2.0 <= t.config["x"] <= 2.0 and t.config["width"] in (8, 16, 32) and t.config["fixed"] == "const"
        assert [r["training_iteration"] for r in t.results] == [1, 2, 3, 4, 5]
        assert all(r["trial_id"] == t.trial_id and "timestamp" in r and r["time_total_s"] >= 0 for r in t.results)
    best = min(exp.trials, key=lambda t: t.last_result["loss"])
    assert exp.best_trial is best
    assert exp.results().get_best_result().config == best.config


def test_grid_search_points_repeat_num_samples_times():
    exp = drive(tune.Experiment({"a": tune.grid_search([1, 2, 3]), "x": tune.uniform(0, 1)}, "loss", "min",
                                num_samples=2, seed=0), iterations=1)
    assert len(exp.trials) == 6
    assert sorted(t.config["a"] for t in exp.trials) == [1, 1, 2, 2, 3, 3]


def test_same_seed_same_configurations_other_seed_other():
    def configs(seed):
        return [t.config for t in drive(tune.Experiment(SPACE, "loss", "min", num_samples=8, seed=seed)).trials]
    assert configs(11) == configs(11)
    assert configs(11) != configs(12)


def test_ask_tell_with_asha_stops_poor_trials_early():
    asha = tune.ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3)
    exp = drive(tune.Experiment(SPACE, "loss", "min", scheduler=asha, num_samples=20, seed=0), iterations=20)
    lengths = [len(t.results) for t in exp.trials]
    assert all(t.status == "TERMINATED" for t in exp.trials)
    assert max(lengths) == 9  # ASHA stops at max_t
    assert min(lengths) == 1  # some are dropped at the first rung
    stopped_early = [t for t in exp.trials if len(t.results) < 9]
    assert len(stopped_early) >= 10
    # a trial that went on at rung 1 was in the top third of the rung-1 results recorded before it
    seen = []
    for t in exp.trials:
        value = t.results[0]["loss"]
        seen.append(value)
        if len(t.results) > 1:
            assert sum(v < value for v in seen) < math.ceil(len(seen) / 3)


def test_ask_tell_with_synchronous_hyperband_pauses_and_resumes():
    hb = tune.HyperBandScheduler(max_t=9, reduction_factor=3)  # brackets: 9 trials at 1, 5 at 3, 3 at 9
    exp = tune.Experiment(SPACE, "loss", "min", scheduler=hb, num_samples=17, seed=0)
    starts = []
    while (trial := exp.ask()) is not None:
        starts.append(trial.trial_id)
        for it in range(trial.checkpoint_iteration + 1, 10):  # no checkpoints: a resumed trial starts over
            decision = exp.report(trial, {"loss": loss(trial.config, it)})
            if decision is not Decision.CONTINUE:
                assert trial.status == ("PAUSED" if decision is Decision.PAUSE else "TERMINATED")
                break
        else:
            exp.tell(trial)
    assert exp.is_finished() and all(t.status == "TERMINATED" for t in exp.trials)
    lengths = {t.trial_id: len(t.results) for t in exp.trials}
    assert sorted(lengths.values()) == [1] * 6 + [3] * 6 + [9] * 5
    assert all(sorted(r["training_iteration"] for r in t.results) == list(range(1, len(t.results) + 1))
               for t in exp.trials)
    # the first bracket's nine trials all start before any of them resumes
    assert starts[:9] == [f"{i:05d}" for i in range(9)] and len(set(starts[9:11]) & set(starts[:9])) == 2
    # the three best of the first rung were the ones promoted
    first_rung = sorted(range(9), key=lambda i: exp.trials[i].results[0]["loss"])
    assert {i for i in range(9) if lengths[f"{i:05d}"] > 1} == set(first_rung[:3])


def test_registered_names_resolve_and_bad_ones_are_clear():
    exp = tune.Experiment(SPACE, "loss", "max", search_alg="random", scheduler="asha", num_samples=2, seed=0)
    assert type(exp.searcher).__name__ == "RandomSearcher" and type(exp.scheduler).__name__ == "ASHAScheduler"
    with pytest.raises(ValueError, match="unknown searcher 'nope'"):
        tune.Experiment(SPACE, "loss", "min", search_alg="nope")
    with pytest.raises(ValueError, match="mode must be 'min' or 'max'"):
        tune.Experiment(SPACE, "loss", "lowest")
    with pytest.raises(ValueError, match="num_samples must be an int >= 1"):
        tune.Experiment(SPACE, "loss", "min", num_samples=0)
    with pytest.raises(TypeError, match="stop must be a dict"):
        tune.Experiment(SPACE, "loss", "min", stop=5)


def test_stop_criteria_dict_and_callable():
    exp = drive(tune.Experiment(SPACE, "loss", "min", num_samples=4, seed=0, stop={"training_iteration": 3}),
                iterations=10)
    assert [len(t.results) for t in exp.trials] == [3, 3, 3, 3]
    assert all(t.status == "TERMINATED" for t in exp.trials)

    def stop(trial_id, result):  # stop a trial once its loss is under 0.6
        return result["loss"] < 0.6
    exp = drive(tune.Experiment(SPACE, "loss", "min", num_samples=6, seed=1, stop=stop), iterations=10)
    for t in exp.trials:
        losses = [r["loss"] for r in t.results]
        assert all(v >= 0.6 for v in losses[:-1])
        assert losses[-1] < 0.6 or len(losses) == 10


def test_report_after_stop_is_ignored_and_tell_is_harmless():
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=1, seed=0, stop={"training_iteration": 1})
    trial = exp.ask()
    assert exp.report(trial, {"loss": 1.0}) is Decision.STOP
    assert exp.report(trial, {"loss": 0.0}) is Decision.STOP
    exp.tell(trial)
    assert trial.status == "TERMINATED" and len(trial.results) == 1
    with pytest.raises(TypeError, match="metrics must be a dict"):
        exp.report(trial, 1.0)
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=1, seed=0)
    trial = exp.ask()
    exp.report(trial, {"loss": 1.0, "training_iteration": 5})
    with pytest.raises(ValueError, match="training_iteration must be an int that grows .* is at 5.*got 5"):
        exp.report(trial, {"loss": 1.0, "training_iteration": 5})
    assert exp.report(trial, {"loss": 0.5}) is Decision.CONTINUE and trial.last_result["training_iteration"] == 6


def test_errored_trials_are_retried_then_recorded_with_traceback_without_stopping_others():
    attempts = {}

    def fail(trial):  # trial 00001 always fails; 00003 fails once, then works
        attempts[trial.trial_id] = attempts.get(trial.trial_id, 0) + 1
        return trial.trial_id == "00001" or (trial.trial_id == "00003" and attempts["00003"] == 1)
    exp = drive(tune.Experiment(SPACE, "loss", "min", num_samples=5, seed=0, max_failures=2), fail=fail)
    status = {t.trial_id: t.status for t in exp.trials}
    assert status == {"00000": "TERMINATED", "00001": "ERROR", "00002": "TERMINATED", "00003": "TERMINATED",
                      "00004": "TERMINATED"}
    assert attempts["00001"] == 3 and attempts["00003"] == 2  # max_failures=2: two retries
    failed = exp.get_trial("00001")
    assert failed.num_failures == 3 and "RuntimeError: trial 00001 blew up" in failed.error
    assert "Traceback" in failed.error or "RuntimeError" in failed.error.splitlines()[-1]
    grid = exp.results()
    assert grid.num_errors == 1 and grid.num_terminated == 4
    assert "trial 00001 blew up" in grid.errors[0]
    assert grid[3].error is None and grid[3].num_failures == 1


def test_unlimited_retries_and_error_text():
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=1, seed=0, max_failures=-1)
    trial = exp.ask()
    for _ in range(5):
        exp.tell(trial, error="Traceback ...\nValueError: boom")
        assert exp.ask() is trial and trial.status == "RUNNING"
    exp.tell(trial, {"loss": 0.25})
    assert trial.status == "TERMINATED" and trial.num_failures == 5 and trial.error.endswith("boom")
    with pytest.raises(TypeError, match="error must be a traceback text or an exception"):
        exp2 = tune.Experiment(SPACE, "loss", "min", num_samples=1, seed=0)
        exp2.tell(exp2.ask(), error=42)


class _PauseThenResume(Scheduler):
    """Pauses every trial at iteration 2; when asked for a trial to run, resumes the oldest paused one
    only once the searcher is finished."""

    def on_result(self, trial_id, result):
        return Decision.PAUSE if result["training_iteration"] == 2 else Decision.CONTINUE

    def choose_trial_to_run(self, paused, searcher_finished):
        return paused[0] if paused and searcher_finished else None


def test_paused_trials_resume_from_their_checkpoint(tmp_path):
    exp = tune.Experiment(SPACE, "loss", "min", scheduler=_PauseThenResume(), num_samples=3, seed=0,
                          storage_path=str(tmp_path), name="pause")
    order = []
    while (trial := exp.ask()) is not None:
        order.append((trial.trial_id, trial.checkpoint_iteration))
        for it in range(trial.checkpoint_iteration + 1, 5):
            d = exp.report(trial, {"loss": loss(trial.config, it)}, checkpoint={"it": it})
            if d is not Decision.CONTINUE:
                assert d is Decision.PAUSE and trial.status == "PAUSED"
                break
        else:
            exp.tell(trial)
    assert order == [("00000", 0), ("00001", 0), ("00002", 0), ("00000", 2), ("00001", 2), ("00002", 2)]
    for t in exp.trials:
        assert t.status == "TERMINATED" and [r["training_iteration"] for r in t.results] == [1, 2, 3, 4]
        assert t.checkpoint == os.path.join(t.trial_dir, "checkpoint_000004.safetensors")
        assert tune.Checkpoint(t.checkpoint).to_dict() == {"it": 4}


class _Finite(Searcher):
    """Three configurations, then FINISHED; None while the first trial is running."""

    def suggest(self, trial_id):
        self.calls = getattr(self, "calls", 0) + 1
        if trial_id == "00003":
            return FINISHED
        return {"x": float(trial_id)}


def test_searcher_finished_ends_the_experiment_before_num_samples():
    exp = drive(tune.Experiment(SPACE, "loss", "min", search_alg=_Finite(), num_samples=10, seed=0))
    assert len(exp.trials) == 3 and exp.is_finished()


def test_keep_best_k_checkpoints(tmp_path):
    cc = tune.CheckpointConfig(num_to_keep=2, checkpoint_score_attribute="acc", checkpoint_score_order="max")
    exp = tune.Experiment({"x": tune.uniform(0, 1)}, "acc", "max", num_samples=2, seed=0,
                          storage_path=str(tmp_path), name="k", checkpoint_config=cc)
    accs = [0.1, 0.9, 0.3, 0.8, 0.2, 0.4]
    while (trial := exp.ask()) is not None:
        for it, acc in enumerate(accs, start=1):
            exp.report(trial, {"acc": acc}, checkpoint={"w": float(it)})
            kept = sorted(f for f in os.listdir(trial.trial_dir) if f.endswith(".safetensors"))
            assert f"checkpoint_{it:06d}.safetensors" in kept  # the latest is kept while the trial runs
            assert len(kept) <= 3
        exp.tell(trial)
        kept = sorted(f for f in os.listdir(trial.trial_dir) if f.endswith(".safetensors"))
        assert kept == ["checkpoint_000002.safetensors", "checkpoint_000004.safetensors"]  # acc 0.9 and 0.8
        assert trial.checkpoint is not None and os.path.exists(trial.checkpoint)


def test_reported_values_are_stored_as_the_journal_reads_them_back(tmp_path):
    import numpy as np

    import ember
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=1, seed=0, storage_path=str(tmp_path), name="n")
    trial = exp.ask()
    exp.report(trial, {"loss": ember.tensor(0.5), "acc": np.float32(0.25), "shape": (2, 3), "model": object()})
    exp.close()
    expected = {"loss": 0.5, "acc": 0.25, "shape": [2, 3], "model": "<object>"}
    assert {k: trial.last_result[k] for k in expected} == expected
    assert type(trial.last_result["loss"]) is float
    restored = tune.Experiment.restore(exp.path)
    assert restored.get_trial(trial.trial_id).results == trial.results
    restored.close()


def test_checkpoint_forms(tmp_path):
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=1, seed=0)
    trial = exp.ask()
    with pytest.raises(ValueError, match="checkpoint dict needs a folder"):
        exp.report(trial, {"loss": 1.0}, checkpoint={"w": 1.0})
    exp.report(trial, {"loss": 1.0}, checkpoint="/somewhere/mine.safetensors")  # without storage: as given
    assert trial.checkpoint == "/somewhere/mine.safetensors" and trial.checkpoint_iteration == 1  # refused: no report

    exp = tune.Experiment(SPACE, "loss", "min", num_samples=1, seed=0, storage_path=str(tmp_path), name="forms")
    trial = exp.ask()
    mine = tune.Checkpoint(os.path.join(trial.trial_dir, "checkpoint_000001.safetensors"))
    exp.report(trial, {"loss": 1.0}, checkpoint={"w": 1.0})  # a dict: saved in the trial's folder
    assert mine.to_dict() == {"w": 1.0}
    own = str(tmp_path / "own.safetensors")
    import ember
    ember.save({"w": 2.0}, own)
    exp.report(trial, {"loss": 1.0}, checkpoint=own)  # a file of the user's: copied in
    exp.report(trial, {"loss": 1.0}, checkpoint=tune.Checkpoint.from_dict({"w": 3.0}))
    # the default CheckpointConfig keeps each trial's two most recent checkpoints
    assert not os.path.exists(mine.path)
    assert [tune.Checkpoint(os.path.join(trial.trial_dir, f"checkpoint_00000{i}.safetensors")).to_dict()["w"]
            for i in (2, 3)] == [2.0, 3.0]
    assert os.path.exists(own) and trial.checkpoint.endswith("checkpoint_000003.safetensors")
    with pytest.raises(TypeError, match="checkpoint must be a dict of tensors and plain values, a tune.Checkpoint"):
        exp.report(trial, {"loss": 1.0}, checkpoint=3)


def test_journal_is_written_and_an_existing_experiment_is_not_overwritten(tmp_path):
    exp = drive(tune.Experiment(SPACE, "loss", "min", num_samples=2, seed=0, storage_path=str(tmp_path), name="j"))
    exp.close()
    records = Journal.read(str(tmp_path / "j" / "journal.jsonl"))
    assert records[0]["e"] == "experiment" and records[0]["seed"] == 0
    assert [r["e"] for r in records[1:]] == ["ask"] + ["report"] * 5 + ["tell"] + ["ask"] + ["report"] * 5 \
        + ["tell", "ask"]
    with pytest.raises(RuntimeError, match="this experiment was closed: continue it with Experiment.restore"):
        exp.ask()
    with pytest.raises(FileExistsError, match="Experiment.restore"):
        tune.Experiment(SPACE, "loss", "min", storage_path=str(tmp_path), name="j")
