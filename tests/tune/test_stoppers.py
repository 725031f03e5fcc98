"""The stoppers' semantics (Ray Tune's names and arguments), their JSON form, and Experiment.halt."""
import datetime
import json
import os

import pytest

from ember import tune
from ember.tune import stoppers
from ember.tune.journal import JournalError
from ember.tune.spec import build, value_spec


def feed(stopper, values, trial_id="t", metric="loss"):
    return [stopper(trial_id, {metric: v, "training_iteration": i}) for i, v in enumerate(values, start=1)]


def test_base_stopper_stops_nothing_and_a_subclass_is_a_valid_stop():
    assert tune.Stopper()("t", {"loss": 1.0}) is False and tune.Stopper().stop_all() is False
    tune.RunConfig(stop=tune.Stopper())  # accepted like a callable


def test_maximum_iteration_stopper_uses_the_trials_training_iteration():
    stop = tune.MaximumIterationStopper(max_iter=3)
    assert feed(stop, [5, 4, 3, 2]) == [False, False, True, True]
    assert stop("u", {"training_iteration": 7}) is True  # a resumed trial's count continues
    assert stop.stop_all() is False
    with pytest.raises(ValueError, match="max_iter must be an int >= 1, got 0"):
        tune.MaximumIterationStopper(0)


def test_trial_plateau_stopper_waits_for_grace_period_window_and_threshold():
    stop = tune.TrialPlateauStopper("loss", std=0.01, num_results=3, grace_period=4)
    # flat from the first result, but the grace period is 4 results
    assert feed(stop, [1.0, 1.0, 1.0, 1.0]) == [False, False, False, True]
    stop = tune.TrialPlateauStopper("loss", std=0.01, num_results=3, grace_period=1)
    assert feed(stop, [3.0, 2.0, 1.0, 1.005, 0.995, 0.5]) == [False, False, False, False, True, False]
    # each trial has its own window
    assert feed(stop, [1.0, 1.0], trial_id="other") == [False, False]
    # population std (as numpy.std): [0, 0.02] has std 0.01, not below std=0.01
    stop = tune.TrialPlateauStopper("loss", std=0.01, num_results=2, grace_period=1)
    assert feed(stop, [0.0, 0.02]) == [False, False]
    # a threshold: only once the value is better than it
    stop = tune.TrialPlateauStopper("acc", num_results=2, grace_period=1, metric_threshold=0.9, mode="max")
    assert feed(stop, [0.5, 0.5, 0.95, 0.95], metric="acc") == [False, False, False, True]
    stop = tune.TrialPlateauStopper("loss", num_results=2, grace_period=1, metric_threshold=0.1, mode="min")
    assert feed(stop, [0.5, 0.5, 0.05, 0.05]) == [False, False, False, True]
    with pytest.raises(ValueError, match="metric_threshold needs mode='min' or 'max'"):
        tune.TrialPlateauStopper("loss", metric_threshold=0.1)
    with pytest.raises(ValueError, match=r"every result must report 'loss' as a number, got None \(reported keys"):
        tune.TrialPlateauStopper("loss")("t", {"acc": 1.0})


def test_experiment_plateau_stopper_watches_the_top_values_of_all_trials_with_patience():
    stop = tune.ExperimentPlateauStopper("loss", std=0.001, top=3, mode="min")
    assert [stop(f"t{i}", {"loss": v}) for i, v in enumerate([5.0, 1.0, 1.0004, 9.0])] == [False] * 4
    assert stop.has_plateaued() is False and stop.stop_all() is False  # top 3: 1.0, 1.0004, 5.0
    assert stop("t4", {"loss": 1.0002}) is True and stop.stop_all() is True  # top 3 within 0.001

    stop = tune.ExperimentPlateauStopper("acc", std=0.001, top=2, mode="max", patience=2)
    results = [stop("t", {"acc": v}) for v in (0.5, 0.9, 0.9, 0.1, 0.2)]
    # plateaued from the 3rd result (top 2: 0.9, 0.9); patience 2: it stops at the 2nd result after that
    assert results == [False, False, False, False, True]
    for kwargs, message in (({"top": 1}, "top must be an int >= 2"), ({"patience": -1}, "patience must be an int"),
                            ({"std": 0}, "std must be a number > 0"), ({"mode": "best"}, "mode must be")):
        with pytest.raises(ValueError, match=message):
            tune.ExperimentPlateauStopper("loss", **kwargs)


def test_timeout_stopper_stops_all_after_its_timeout(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(stoppers.time, "monotonic", lambda: clock[0])
    stop = tune.TimeoutStopper(datetime.timedelta(minutes=1))
    assert stop.timeout == 60.0 and stop("t", {"loss": 1.0}) is False and stop.stop_all() is False
    clock[0] = 159.9
    assert stop.stop_all() is False
    clock[0] = 160.0
    assert stop.stop_all() is True and stop("t", {"loss": 1.0}) is False  # it stops the experiment, not a trial
    with pytest.raises(ValueError, match="timeout must be seconds > 0"):
        tune.TimeoutStopper(0)


def test_combined_stopper_is_an_or_and_every_stopper_sees_every_result():
    plateau = tune.TrialPlateauStopper("loss", num_results=2, grace_period=2)
    stop = tune.CombinedStopper(tune.MaximumIterationStopper(2), plateau)
    assert feed(stop, [1.0, 1.0, 1.0]) == [False, True, True]
    assert plateau._counts["t"] == 3  # not skipped once the first stopper said True
    assert stop.stop_all() is False
    assert tune.CombinedStopper(tune.Stopper(), tune.TimeoutStopper(1e-9)).stop_all() is True
    with pytest.raises(TypeError, match="each argument must be a tune.Stopper, got dict"):
        tune.CombinedStopper({"training_iteration": 3})


def test_built_in_stoppers_are_written_as_json_and_rebuilt_others_are_missing():
    stop = tune.CombinedStopper(tune.MaximumIterationStopper(max_iter=4),
                                tune.TimeoutStopper(datetime.timedelta(seconds=90)),
                                tune.TrialPlateauStopper("loss", std=0.1, metric_threshold=1.0, mode="min"))
    entry = value_spec(stop, "stop")
    assert entry["json"]["args"][1] == {"stopper": "TimeoutStopper", "args": [90.0], "kwargs": {}}
    rebuilt = build("stop", json.loads(json.dumps(entry)), {})
    assert [type(s).__name__ for s in rebuilt.stoppers] == ["MaximumIterationStopper", "TimeoutStopper",
                                                           "TrialPlateauStopper"]
    assert rebuilt.stoppers[0].max_iter == 4 and rebuilt.stoppers[2].metric_threshold == 1.0

    class Mine(tune.MaximumIterationStopper):
        pass
    assert "missing" in value_spec(Mine(3), "stop")
    assert "missing" in value_spec(tune.CombinedStopper(Mine(3)), "stop")
    with pytest.raises(JournalError, match="the recorded stop cannot be rebuilt"):
        build("stop", {"json": {"stopper": "os.system", "args": [], "kwargs": {}}}, {})


def test_experiment_halt_ends_every_trial_and_a_restore_replays_it_then_lifts_it(tmp_path):
    def make():
        return tune.Experiment({"x": tune.uniform(0, 1)}, metric="loss", mode="min", num_samples=6, seed=0,
                               storage_path=str(tmp_path), name="halt", max_failures=2)
    exp = make()
    a, b, c = exp.ask(), exp.ask(), exp.ask()
    exp.report(a, {"loss": 1.0})
    exp.tell(b, error="boom")  # PENDING: a retry waits
    exp.report(c, {"loss": 0.5})
    exp.halt("enough")
    assert exp.take_decisions() == {a.trial_id: tune.Decision.STOP, c.trial_id: tune.Decision.STOP}
    assert [t.status for t in exp.trials] == ["TERMINATED"] * 3 and exp.ask() is None and exp.is_finished()
    assert exp.report(a, {"loss": 0.1}) is tune.Decision.STOP and exp.best_trial is c
    exp.halt("again")  # no second record
    exp.close()
    with open(os.path.join(exp.path, "journal.jsonl")) as f:
        assert sum('"e": "halt"' in line or '"e":"halt"' in line for line in f) == 1

    restored = tune.Experiment.restore(exp.path)
    assert [t.status for t in restored.trials] == ["TERMINATED"] * 3 and not restored.is_finished()
    assert restored.ask().trial_id == "00003"  # the search goes on with new trials
    assert restored.best_trial.trial_id == c.trial_id


def test_a_halt_record_without_its_reason_is_a_journal_error(tmp_path):
    exp = tune.Experiment({"x": tune.uniform(0, 1)}, metric="loss", mode="min", storage_path=str(tmp_path),
                          name="bad", seed=0)
    exp.ask()
    exp.close()
    with open(os.path.join(exp.path, "journal.jsonl"), "a") as f:
        f.write(json.dumps({"e": "halt", "why": 3}) + "\n")
    with pytest.raises(JournalError, match=r"journal.jsonl: line 3: a 'halt' record needs its reason 'why' as a str"):
        tune.Experiment.restore(exp.path)


def test_tune_config_checks_the_time_limits():
    assert tune.TuneConfig(time_budget_s=datetime.timedelta(minutes=2)).time_budget_s == 120.0
    for name in ("time_budget_s", "trial_timeout_s"):
        for bad in (0, -1.0, float("inf"), "10", True):
            with pytest.raises(ValueError, match=f"TuneConfig: {name} must be seconds > 0"):
                tune.TuneConfig(**{name: bad})
