"""The journal is untrusted input: what each record must hold before an experiment replays it.

A journal copied from elsewhere (or edited) must not make a restore read or delete files outside the
experiment's folder, nor fail with a bare ``KeyError`` deep inside a searcher. Every check here raises a
:class:`~ember.tune.journal.JournalError` naming the journal file and the line.

>>> check_header([{"e": "experiment", "version": 2, "metric": "loss", "mode": "min", "num_samples": 4,
...                "seed": 0, "max_failures": 0, "spec": {}}], "j.jsonl")["metric"]
'loss'
>>> check_header([{"e": "ask"}], "j.jsonl")
Traceback (most recent call last):
...
ember.tune.journal.JournalError: j.jsonl: line 1: not the journal of an ember-tune experiment ...
"""
from __future__ import annotations

import os

from ._objective import objectives
from .checkpoint import checkpoint_path
from .journal import JournalError

#: journal versions this ember-tune reads (1: components pickled beside the journal, no longer read)
VERSIONS = (1, 2)


def _fail(journal_path: str, line: int, what: str):
    raise JournalError(f"{journal_path}: line {line}: {what}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_header(records: list, journal_path: str) -> dict:
    """The first record, checked to be an ember-tune experiment header with well-typed settings."""
    header = records[0] if records else None
    if not isinstance(header, dict) or header.get("e") != "experiment" \
            or not _is_int(header.get("version")) or header["version"] not in VERSIONS:
        _fail(journal_path, 1, "not the journal of an ember-tune experiment (its first record is not an "
                               f"'experiment' record of version {' or '.join(map(str, VERSIONS))})")
    try:
        objectives(header.get("metric"), header.get("mode"))
    except (TypeError, ValueError) as e:
        _fail(journal_path, 1, f"the experiment header's metric and mode are not valid objectives ({e})")
    expected = {"num_samples": (int, "an int"),
                "seed": (int, "an int"), "max_failures": (int, "an int")}
    for key, (kind, words) in expected.items():
        value = header.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            _fail(journal_path, 1, f"the experiment header's {key!r} must be {words}, got {value!r}")
    for key in ("spec", "tuner"):
        if key in header and not isinstance(header[key], dict):
            _fail(journal_path, 1, f"the experiment header's {key!r} must be a dict, got {header[key]!r}")
    tuner = header.get("tuner", {})
    for key, ok, words in (
            ("max_concurrent_trials", lambda v: v is None or _is_int(v) and v >= 1, "an int >= 1 or null"),
            ("verbose", lambda v: isinstance(v, int), "an int"),
            ("progress_interval", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0,
             "seconds >= 0"),
            ("trainable", lambda v: isinstance(v, str), "a str"),
            ("reuse_actors", lambda v: v is None or isinstance(v, bool), "true, false or null"),
            *((key, lambda v: v is None or isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0,
               "seconds > 0 or null") for key in ("time_budget_s", "trial_timeout_s"))):
        if key in tuner and not ok(tuner[key]):
            _fail(journal_path, 1, f"the experiment header's tuner {key!r} must be {words}, got {tuner[key]!r}")
    return header


def check_record(record, trials: dict, journal_path: str, line: int):
    """The trial a record (after the header) is about, or None; its fields checked."""
    if not isinstance(record, dict):
        _fail(journal_path, line, f"a record must be a JSON object, got {type(record).__name__}")
    kind = record.get("e")
    if kind == "restore":
        return None
    if kind == "halt":
        if not isinstance(record.get("why"), str):
            _fail(journal_path, line, f"a 'halt' record needs its reason 'why' as a str, got {record.get('why')!r}")
        return None
    if kind not in ("ask", "report", "tell", "exploit"):
        _fail(journal_path, line, f"unknown record kind {kind!r}")
    if "t" not in record:
        _fail(journal_path, line, f"a {kind!r} record needs a trial id 't'")
    trial_id = record["t"]
    if kind == "ask":
        if trial_id is not None and not isinstance(trial_id, str):
            _fail(journal_path, line, f"trial id 't' must be a str or null, got {trial_id!r}")
        if "c" in record and not isinstance(record["c"], dict):
            _fail(journal_path, line, f"config 'c' must be a dict, got {record['c']!r}")
        return None
    if not isinstance(trial_id, str) or trial_id not in trials:
        _fail(journal_path, line, f"unknown trial id {trial_id!r} (the journal created {len(trials)} trials so far)")
    trial = trials[trial_id]
    if trial.status != ("PAUSED" if kind == "exploit" else "RUNNING"):
        _fail(journal_path, line, f"a {kind!r} record of trial {trial_id} while it is {trial.status}, not "
                                  f"{'PAUSED' if kind == 'exploit' else 'RUNNING'}")
    if kind == "exploit":  # compared as a whole with the exploit the restored scheduler makes
        return trial
    if kind == "tell":
        if not isinstance(record.get("err", None), (str, type(None))):
            _fail(journal_path, line, f"'err' must be a traceback text or null, got {record['err']!r}")
        return trial
    metrics = record.get("m")
    if not isinstance(metrics, dict):
        _fail(journal_path, line, f"a report's metrics 'm' must be a dict, got {metrics!r}")
    iteration = metrics.get("training_iteration")
    if not _is_int(iteration) or iteration <= trial.run_iteration:
        _fail(journal_path, line, f"training_iteration must be an int above {trial.run_iteration} (the iteration "
                                  f"trial {trial_id} reached), got {iteration!r}")
    total = metrics.get("time_total_s", 0.0)  # where a resumed run's clock continues from
    if isinstance(total, bool) or not isinstance(total, (int, float)):
        _fail(journal_path, line, f"time_total_s must be a number, got {total!r}")
    return trial


def checkpoint_file(recorded, trial, iteration: int, experiment_dir: str, journal_path: str, line: int) -> str:
    """The checkpoint file a report record names: exactly the one the run writes for that trial and iteration
    (``trial_<id>/checkpoint_<iteration>.safetensors``), and inside the experiment's folder once symbolic
    links are followed; anything else (``../victim``, an absolute path, a link out) is a JournalError, so
    a restore never reads or deletes it."""
    expected = checkpoint_path(trial.trial_dir, iteration)
    if not isinstance(recorded, str) or os.path.isabs(recorded) \
            or os.path.normpath(os.path.join(experiment_dir, recorded)) != os.path.normpath(expected):
        _fail(journal_path, line, f"checkpoint {recorded!r} of trial {trial.trial_id} is not "
                                  f"{os.path.relpath(expected, experiment_dir)!r}, the file its run writes; a "
                                  "journal may not name files elsewhere")
    folder = os.path.realpath(experiment_dir)
    if os.path.commonpath([folder, os.path.realpath(expected)]) != folder:
        _fail(journal_path, line, f"checkpoint {recorded!r} of trial {trial.trial_id} leads out of the "
                                  f"experiment's folder through a symbolic link (to {os.path.realpath(expected)!r})")
    return expected


def check_trial_dirs(trials, experiment_dir: str) -> None:
    """Trial folders that lead out of the experiment's folder (a planted symbolic link) are refused before a
    resumed trial writes or deletes checkpoints through them."""
    folder = os.path.realpath(experiment_dir)
    for trial in trials:
        real = os.path.realpath(trial.trial_dir)
        if os.path.commonpath([folder, real]) != folder:
            raise ValueError(f"{trial.trial_dir} leads out of the experiment's folder (to {real!r}, through a "
                             "symbolic link): restore refuses to write or delete checkpoints there")
