"""Restoring an experiment from its journal: a kill at any line loses nothing finished and changes nothing to come.

A kill is simulated exactly by cutting the journal after its first ``n`` lines (each line is one call of the
experiment, written whole), optionally followed by a torn half line, then restoring and running on.
"""
import json
import os

import pytest

from ember import tune
from ember.tune import Decision
from ember.tune.journal import Journal, JournalError

SPACE = {"x": tune.uniform(-2.0, 2.0), "opt": tune.choice([{"name": "sgd", "momentum": tune.uniform(0, 0.99)},
                                                          {"name": "adam"}])}


def loss(config, iteration):
    return (config["x"] - 0.5) ** 2 + 1.0 / iteration + (0.1 if config["opt"]["name"] == "sgd" else 0.0)


def drive(exp, iterations=9, fail_once=(("00000", 3), ("00002", 1))):
    """Run trials one at a time; each reports ``iterations`` times with a checkpoint every second iteration;
    ``fail_once`` holds (trial, iteration) at which a trial fails on its first attempt."""
    while (trial := exp.ask()) is not None:
        for it in range(trial.checkpoint_iteration + 1, iterations + 1):
            if (trial.trial_id, it) in fail_once and trial.num_failures == 0:
                exp.tell(trial, error="Traceback (most recent call last):\nRuntimeError: flaky")
                break
            ckpt = {"it": it} if it % 2 == 0 else None
            if exp.report(trial, {"loss": loss(trial.config, it)}, checkpoint=ckpt) is not Decision.CONTINUE:
                break
        else:
            exp.tell(trial)
    exp.close()
    return exp


def make(path, name, scheduler=None, searcher=None, num_samples=8):
    return tune.Experiment(SPACE, "loss", "min", search_alg=searcher, scheduler=scheduler, num_samples=num_samples,
                           seed=5, storage_path=str(path), name=name, max_failures=1)


def summary(exp):
    return [(t.trial_id, t.status, t.config, [(r["training_iteration"], r["loss"]) for r in t.results],
             t.num_failures) for t in exp.trials]


def lines_of(path):
    with open(os.path.join(path, "journal.jsonl"), "rb") as f:
        return f.read().splitlines(keepends=True)


#: (searcher, scheduler, trials, every how many journal lines a kill is tried)
COMPONENTS = {
    "random+fifo": (lambda: None, lambda: None, 8, 3),
    "random+asha": (lambda: None, lambda: tune.ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3), 8, 3),
    "random+hyperband": (lambda: None, lambda: tune.HyperBandScheduler(max_t=9, reduction_factor=3), 8, 3),
    # BOHB's model starts after 4 observations at a budget: 20 trials exercise it, fewer kills keep it quick
    "bohb+hyperband": (lambda: tune.BOHBSearcher(), lambda: tune.HyperBandScheduler(max_t=9, reduction_factor=3),
                       20, 5),
}


@pytest.mark.parametrize("components", sorted(COMPONENTS))
def test_kill_at_every_line_then_restore_gives_the_unkilled_run(tmp_path, components):
    searcher, scheduler, num_samples, every = COMPONENTS[components]
    full = drive(make(tmp_path, "full", scheduler(), searcher(), num_samples))
    expected = summary(full)
    assert [t.num_failures for t in full.trials[:3]] == [1, 0, 1]
    lines = lines_of(full.path)
    for n in sorted({*range(1, len(lines), every), len(lines) - 1}):
        killed = os.path.join(tmp_path, f"killed{n}")
        os.makedirs(killed)
        with open(os.path.join(killed, "journal.jsonl"), "wb") as f:
            f.writelines(lines[:n])
            f.write(lines[n][: len(lines[n]) // 2])  # torn: killed mid-write
        restored = tune.Experiment.restore(killed)
        finished_before = {t.trial_id: t.status for t in restored.trials if t.is_finished}
        drive(restored)
        assert summary(restored) == expected, f"killed after line {n}"
        assert all(restored.get_trial(i).status == s for i, s in finished_before.items())
        # restored twice (a second kill right after the first restore) still gives the same
        again = tune.Experiment.restore(killed)
        assert summary(again) == expected
        assert again.ask() is None and again.is_finished()


def test_restore_twice_mid_run(tmp_path):
    expected = summary(drive(make(tmp_path, "full"), fail_once=()))
    exp = make(tmp_path, "twice")
    for _ in range(3):  # run two trials, kill in the middle of the third
        trial = exp.ask()
        exp.report(trial, {"loss": loss(trial.config, 1)})
        exp.report(trial, {"loss": loss(trial.config, 2)}, checkpoint={"it": 2})
        if trial.trial_id != "00002":
            for it in range(3, 10):
                exp.report(trial, {"loss": loss(trial.config, it)})
            exp.tell(trial)
    exp.close()  # as a kill leaves it (close writes nothing; it lets go of the journal's lock)
    exp = tune.Experiment.restore(exp.path)
    running = exp.get_trial("00002")
    assert running.status == "PENDING" and running.checkpoint_iteration == 2
    assert exp.ask() is running and running.status == "RUNNING"  # restarts first, from its checkpoint
    exp.report(running, {"loss": loss(running.config, 3)})  # then killed again
    exp.close()
    exp = tune.Experiment.restore(exp.path)
    assert exp.get_trial("00002").status == "PENDING"
    assert summary(drive(exp, fail_once=())) == expected


def test_reports_repeated_after_a_restart_are_not_fed_twice(tmp_path):
    exp = make(tmp_path, "refeed", tune.ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3))
    trial = exp.ask()
    for it in (1, 2, 3):
        exp.report(trial, {"loss": loss(trial.config, it)})
    exp.close()
    exp = tune.Experiment.restore(exp.path)  # killed: no checkpoint, so the trial restarts from scratch
    trial = exp.ask()
    assert trial.trial_id == "00000" and trial.checkpoint_iteration == 0 and len(trial.results) == 3
    recorded = exp.scheduler.state_dict()["recorded"]
    for it in (1, 2, 3):
        assert exp.report(trial, {"loss": loss(trial.config, it) + 5}) is Decision.CONTINUE
    assert exp.scheduler.state_dict()["recorded"] == recorded
    assert [r["loss"] for r in trial.results] == [loss(trial.config, it) + 5 for it in (1, 2, 3)]


def test_restore_needs_what_could_not_be_saved(tmp_path):
    space = {"x": tune.uniform(0, 1), "y": tune.sample_from(lambda config: config["x"] * 2)}
    exp = tune.Experiment(space, "loss", "min", num_samples=3, seed=0, storage_path=str(tmp_path), name="lam",
                          stop=lambda trial_id, result: result["training_iteration"] >= 2)
    first = exp.ask()
    exp.close()
    with pytest.raises(ValueError, match="param_space could not be written as JSON .*pass param_space="):
        tune.Experiment.restore(exp.path)
    with pytest.raises(ValueError, match="stop could not be written as JSON"):
        tune.Experiment.restore(exp.path, param_space=space)
    restored = tune.Experiment.restore(exp.path, param_space=space, stop=lambda t, r: False)
    assert restored.get_trial("00000").config == first.config
    with pytest.raises(JournalError, match="is in use: another process"):
        tune.Experiment.restore(exp.path, param_space=space, stop=lambda t, r: False)
    restored.close()
    with pytest.raises(TypeError, match="unexpected arguments"):
        tune.Experiment.restore(exp.path, seed=1)


def test_restore_with_other_components_is_detected(tmp_path):
    exp = make(tmp_path, "other")
    exp.ask()
    exp.close()
    with pytest.raises(RuntimeError, match="journal.jsonl: line 2: the restored searcher/scheduler gave"):
        tune.Experiment.restore(exp.path, param_space={"x": tune.uniform(5, 6), "opt": "adam"})


def test_torn_journal_line_is_ignored_and_cut_before_appending(tmp_path):
    path = str(tmp_path / "journal.jsonl")
    journal, records = Journal.open(path)
    assert records == []
    journal.append({"e": "a", "v": [1, 2.5, None]})
    journal.append({"e": "b"}, sync=True)
    journal.close()
    with open(path, "ab") as f:
        f.write(b'{"e": "c", "v": [1, 2')  # killed mid-write
    assert Journal.read(path) == [{"e": "a", "v": [1, 2.5, None]}, {"e": "b"}]
    journal, records = Journal.open(path)
    assert len(records) == 2
    journal.append({"e": "d"})
    journal.close()
    with open(path) as f:
        assert [json.loads(line)["e"] for line in f] == ["a", "b", "d"]
    with open(path, "ab") as f:
        f.write(b'{"e": "torn but newline-ended"\n')  # a torn last line that happens to end in a newline
    assert [r["e"] for r in Journal.read(path)] == ["a", "b", "d"]


def test_corrupt_journal_line_before_the_last_is_an_error(tmp_path):
    path = str(tmp_path / "journal.jsonl")
    with open(path, "w") as f:
        f.write('{"e": "a"}\nnot json\n{"e": "b"}\n')
    with pytest.raises(JournalError, match="line 2 is not a JSON record"):
        Journal.read(path)
    with pytest.raises(JournalError, match="no experiment journal"):
        Journal.read(str(tmp_path / "missing.jsonl"))


def test_torn_line_in_a_real_experiment_journal(tmp_path):
    exp = make(tmp_path, "torn")
    trial = exp.ask()
    exp.report(trial, {"loss": 1.0})
    exp.tell(trial)
    exp.close()
    with open(os.path.join(exp.path, "journal.jsonl"), "ab") as f:
        f.write(b'{"e":"ask","t":"00001","c":{"x":0.')
    restored = tune.Experiment.restore(exp.path)
    assert [t.status for t in restored.trials] == ["TERMINATED"]
    assert restored.ask().trial_id == "00001"
    restored.close()
    assert Journal.read(os.path.join(exp.path, "journal.jsonl"))[-1]["t"] == "00001"


def test_an_experiment_killed_before_its_first_line_starts_anew(tmp_path):
    os.makedirs(tmp_path / "born")
    with open(tmp_path / "born" / "journal.jsonl", "wb") as f:
        f.write(b'{"e":"experiment","vers')
    with pytest.raises(JournalError, match="line 1: not the journal of an ember-tune experiment"):
        tune.Experiment.restore(str(tmp_path / "born"))
    exp = make(tmp_path, "born")
    exp.close()
    assert [r["e"] for r in Journal.read(os.path.join(exp.path, "journal.jsonl"))] == ["experiment"]


def test_journal_syncs_in_the_background_when_asked_and_on_close(tmp_path, monkeypatch):
    import threading
    import time

    from ember.tune import journal as journal_module
    synced = []  # (thread name, bytes in the file when the sync ran)
    path = str(tmp_path / "journal.jsonl")
    # an fsync leaves no trace a test can see, so the journal's one call to it is recorded in its place
    monkeypatch.setattr(journal_module, "_fsync",
                        lambda fd: synced.append((threading.current_thread().name, os.fstat(fd).st_size)))
    def syncers():
        return {t for t in threading.enumerate() if t.name == "ember-tune-journal-sync"}
    before = syncers()
    journal, _ = Journal.open(path)
    journal.append({"e": "a"})
    assert synced == [] and syncers() == before  # no sync asked: none done, no thread
    journal.append({"e": "tell"}, sync=True)
    deadline = time.monotonic() + 10
    while not synced:
        assert time.monotonic() < deadline, "the background sync did not run"
        time.sleep(0.001)
    assert synced[0] == ("ember-tune-journal-sync", os.path.getsize(path))
    journal.append({"e": "b"})
    journal.close()
    assert synced[-1] == ("MainThread", os.path.getsize(path)) and syncers() <= before  # the thread has ended
    journal.close()  # twice is harmless
