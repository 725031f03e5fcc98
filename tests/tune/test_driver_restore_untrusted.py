"""Restore treats the experiment folder as untrusted input: no code is read from disk, the journal's records are
checked, files outside the folder are never read or deleted, and a folder that is not an experiment is left alone."""
import builtins
import json
import os
import pickle
import threading

import pytest

from ember import tune
from ember.tune.journal import JournalError
from ember.tune.spec import NOT_GIVEN

SPACE = {"x": tune.uniform(-2.0, 2.0), "opt": tune.choice(["sgd", "adam"])}


def run_trials(exp, n_trials, iterations=4, checkpoint_every=1, leave_last_running=False):
    """Run ``n_trials`` trials one after the other, each reporting ``iterations`` times with a checkpoint."""
    for i in range(n_trials):
        trial = exp.ask()
        for it in range(1, iterations + 1):
            ckpt = {"it": it} if it % checkpoint_every == 0 else None
            exp.report(trial, {"loss": (trial.config["x"] - 0.5) ** 2 + 1 / it}, checkpoint=ckpt)
        if not (leave_last_running and i == n_trials - 1):
            exp.tell(trial)
    exp.close()
    return exp


def journal_lines(path):
    with open(os.path.join(path, "journal.jsonl")) as f:
        return [json.loads(line) for line in f]


def write_journal(path, records):
    with open(os.path.join(path, "journal.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


class Payload:
    """Unpickling this creates the file ``marker``: what a crafted experiment folder would do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return builtins.open, (self.marker, "w")


def test_restore_reads_no_pickle_planted_in_the_folder(tmp_path):
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=3, seed=0, storage_path=str(tmp_path), name="exp",
                          search_alg=tune.TPESearcher(n_startup_trials=2),
                          scheduler=tune.ASHAScheduler(max_t=4, grace_period=1), stop={"training_iteration": 3},
                          checkpoint_config=tune.CheckpointConfig(num_to_keep=1))
    assert os.listdir(exp.path) == ["journal.jsonl"]  # nothing pickled beside the journal
    run_trials(exp, 2)
    marker = tmp_path / "payload_ran"
    for name in ("experiment.pkl", "tuner.pkl"):
        with open(os.path.join(exp.path, name), "wb") as f:
            pickle.dump({"saved": {k: pickle.dumps(Payload(str(marker))) for k in
                                   ("param_space", "search_alg", "scheduler", "stop", "checkpoint_config",
                                    "executor", "max_concurrent_trials", "verbose", "progress_interval")},
                         "unsaved": {}}, f)
    restored = tune.Experiment.restore(exp.path)
    restored.close()
    tuner = tune.Tuner.restore(exp.path, print)
    tuner._experiment.close()
    assert not marker.exists(), "restore unpickled a file of the experiment folder"
    # everything came back from the JSON header
    assert isinstance(restored.searcher, tune.TPESearcher) and restored.searcher.n_startup_trials == 2
    assert isinstance(restored.scheduler, tune.ASHAScheduler) and restored.scheduler.max_t == 4
    assert restored.stop == {"training_iteration": 3} and restored.checkpoint_config.num_to_keep == 1
    assert restored.space.to_json() == exp.space.to_json()
    assert [t.status for t in restored.trials] == ["TERMINATED", "TERMINATED"]


def test_what_has_no_json_form_comes_from_the_caller_with_its_name(tmp_path):
    def gamma(n):
        return min(25, n // 4 + 1)

    class Unregistered(tune.RandomSearcher):
        pass

    exp = tune.Experiment(SPACE, "loss", "min", num_samples=4, seed=1, storage_path=str(tmp_path), name="g",
                          search_alg=tune.TPESearcher(n_startup_trials=2, gamma=gamma))
    first = run_trials(exp, 3).trials
    with pytest.raises(ValueError, match=r"search_alg could not be written as JSON \(TPESearcher\(...\) was built "
                                         r"with arguments JSON cannot hold \(gamma=<function>\)\); pass search_alg="):
        tune.Experiment.restore(exp.path)
    restored = tune.Experiment.restore(exp.path, search_alg=tune.TPESearcher(n_startup_trials=2, gamma=gamma))
    assert [t.config for t in restored.trials] == [t.config for t in first]
    restored.close()

    exp = tune.Experiment(SPACE, "loss", "min", num_samples=2, seed=1, storage_path=str(tmp_path), name="u",
                          search_alg=Unregistered())
    run_trials(exp, 1)
    with pytest.raises(ValueError, match="Unregistered is not a registered searcher"):
        tune.Experiment.restore(exp.path)
    tune.Experiment.restore(exp.path, search_alg=Unregistered()).close()


def test_none_can_be_passed_explicitly(tmp_path):
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=2, seed=1, storage_path=str(tmp_path), name="n",
                          stop={"training_iteration": 2})
    exp.close()
    restored = tune.Experiment.restore(exp.path, stop=None)
    assert restored.stop is None
    trial = restored.ask()
    assert all(restored.report(trial, {"loss": 1.0}) is tune.Decision.CONTINUE for _ in range(4))
    restored.close()
    # each run keeps the stop criteria of the run before unless given: the history replays with those in effect
    for stop, expected in ((NOT_GIVEN, None), ({"training_iteration": 9}, {"training_iteration": 9}),
                           (NOT_GIVEN, {"training_iteration": 9}), (None, None)):
        tuner = tune.Tuner.restore(exp.path, print, stop=stop)
        tuner._experiment.close()
        assert tuner.run_config.stop == expected


@pytest.mark.parametrize("where", ["dotdot", "absolute", "symlink"])
def test_a_checkpoint_outside_the_folder_is_never_read_or_deleted(tmp_path, where):
    victim_dir = tmp_path / "victim"
    victim_dir.mkdir()
    victims = []
    for it in range(1, 5):
        victim = victim_dir / f"checkpoint_{it:06d}.safetensors"
        victim.write_text("precious")
        victims.append(victim)
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=2, seed=0, storage_path=str(tmp_path / "runs"),
                          name="e", checkpoint_config=tune.CheckpointConfig(num_to_keep=1))
    run_trials(exp, 1, leave_last_running=True)  # killed while trial 00000 runs: its checkpoints are managed
    records = journal_lines(exp.path)
    if where == "symlink":  # the trial's folder replaced by a link to the victim's folder
        trial_dir = os.path.join(exp.path, "trial_00000")
        for f in os.listdir(trial_dir):
            os.remove(os.path.join(trial_dir, f))
        os.rmdir(trial_dir)
        os.symlink(victim_dir, trial_dir)
    else:
        for record in records:
            if record.get("c") and record["e"] == "report":
                name = os.path.basename(record["c"])
                record["c"] = ("../../victim/" + name) if where == "dotdot" else str(victim_dir / name)
        write_journal(exp.path, records)
    with pytest.raises(JournalError, match=r"journal.jsonl: line 3: checkpoint .* (is not|leads out)"):
        tune.Experiment.restore(exp.path)
    assert all(v.read_text() == "precious" for v in victims)
    if where == "symlink":  # with no checkpoint recorded, the linked folder is refused all the same
        write_journal(exp.path, [{k: v for k, v in r.items() if k != "c"} for r in records])
        with pytest.raises(ValueError, match="trial_00000 leads out of the experiment's folder"):
            tune.Experiment.restore(exp.path)
        assert all(v.read_text() == "precious" for v in victims)


def test_a_different_trainable_is_refused_and_the_journal_left_as_it_was(tmp_path):
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=2, seed=0, storage_path=str(tmp_path), name="t")
    exp.close()
    records = journal_lines(exp.path)
    records[0]["tuner"] = {"executor": {"json": {"name": "local", "args": [], "kwargs": {}}},
                           "trainable": "builtins.print", "max_concurrent_trials": None, "verbose": 0,
                           "progress_interval": 5.0}
    write_journal(exp.path, records)
    before = (tmp_path / "t" / "journal.jsonl").read_bytes()
    with pytest.raises(ValueError, match=r"ran the trainable 'builtins.print', not 'builtins.repr'"):
        tune.Tuner.restore(exp.path, repr)
    assert (tmp_path / "t" / "journal.jsonl").read_bytes() == before
    tuner = tune.Tuner.restore(exp.path, print)
    assert tuner.run_config.verbose == 0
    tuner._experiment.close()
    # an ask/tell experiment: the trainable of the first Tuner.restore is the one recorded
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=2, seed=0, storage_path=str(tmp_path), name="a")
    exp.close()
    tune.Tuner.restore(exp.path, print)._experiment.close()
    with pytest.raises(ValueError, match=r"ran the trainable 'builtins.print', not 'builtins.repr'"):
        tune.Tuner.restore(exp.path, repr)


@pytest.mark.parametrize("content", [b'{"a": 1}\n{"b": 2', b'{"e": "ask", "t": "00000"}\n{"e": "tel',
                                     b'{"e":"experiment","version":99}\n{"e": "x'])
def test_a_folder_that_is_not_an_experiment_is_left_unchanged(tmp_path, content):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "journal.jsonl").write_bytes(content)
    for restore in (tune.Experiment.restore, lambda p: tune.Tuner.restore(p, print)):
        with pytest.raises(JournalError, match="line 1: not the journal of an ember-tune experiment"):
            restore(str(folder))
    assert (folder / "journal.jsonl").read_bytes() == content and os.listdir(folder) == ["journal.jsonl"]
    with pytest.raises(FileExistsError, match="already exists"):  # nor is it overwritten by a new experiment
        tune.Experiment(SPACE, "loss", "min", storage_path=str(tmp_path), name="notes")
    assert (folder / "journal.jsonl").read_bytes() == content


def test_two_experiments_started_with_one_name_one_wins_and_it_restores(tmp_path):
    for round_ in range(30):
        barrier, outcomes = threading.Barrier(2), []

        def create():
            barrier.wait()
            try:
                exp = tune.Experiment(SPACE, "loss", "min", num_samples=2, seed=0, storage_path=str(tmp_path),
                                      name=f"race{round_}")
            except FileExistsError as e:
                outcomes.append(str(e))
            else:
                exp.ask()
                exp.close()
                outcomes.append("created")

        threads = [threading.Thread(target=create) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes)[1] == "created" and "an experiment already exists" in sorted(outcomes)[0], outcomes
        restored = tune.Experiment.restore(str(tmp_path / f"race{round_}"))
        assert len(restored.trials) == 1
        restored.close()


def _mutations(value):
    """Values of other types than ``value`` (and an unknown trial id)."""
    others = [None, "99999", -1, 1.5, True, [], {}, {"json": None}]
    return [v for v in others if type(v) is not type(value) or v != value]


@pytest.mark.timeout(300)
def test_a_mutated_journal_is_a_journal_error_naming_file_and_line(tmp_path):
    exp = tune.Experiment(SPACE, "loss", "min", num_samples=3, seed=0, storage_path=str(tmp_path), name="real",
                          scheduler=tune.ASHAScheduler(max_t=3, grace_period=1, reduction_factor=2),
                          max_failures=1, checkpoint_config=tune.CheckpointConfig(num_to_keep=1))
    trial = exp.ask()
    exp.report(trial, {"loss": 1.0}, checkpoint={"it": 1})
    exp.tell(trial, error="RuntimeError: flaky")
    run_trials(exp, 2, iterations=2, leave_last_running=True)
    original = journal_lines(exp.path)
    journal_path = os.path.join(exp.path, "journal.jsonl")
    mutants = []
    for n, record in enumerate(original):
        mutants += [(n, None), (n, []), (n, "text")]
        for key, value in record.items():
            mutants.append((n, {k: v for k, v in record.items() if k != key}))
            mutants += [(n, {**record, key: v}) for v in _mutations(value)]
            if isinstance(value, dict):  # one level down: metrics, the specification
                for sub, subvalue in value.items():
                    mutants.append((n, {**record, key: {k: v for k, v in value.items() if k != sub}}))
                    mutants += [(n, {**record, key: {**value, sub: v}}) for v in _mutations(subvalue)]
    escaped = []
    for n, mutant in mutants:
        records = list(original)
        records[n] = mutant
        write_journal(exp.path, records)
        try:
            tune.Experiment.restore(exp.path).close()
        except JournalError as e:
            assert str(e).startswith(f"{journal_path}: line "), str(e)
        except Exception as e:
            escaped.append(f"line {n + 1} as {mutant!r}: {type(e).__name__}: {e}")
    assert not escaped, "\n".join(escaped[:10])
    with open(journal_path, "w") as f:  # bad JSON before the last line
        f.write(json.dumps(original[0]) + "\n{not json\n" + json.dumps(original[1]) + "\n")
    with pytest.raises(JournalError, match=f"{journal_path}: line 2 is not a JSON record"):
        tune.Experiment.restore(exp.path)
