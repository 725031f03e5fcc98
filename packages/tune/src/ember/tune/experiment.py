"""The experiment: trials and their states, driven by a searcher and a scheduler, recorded in a journal.

:class:`Experiment` is the ask/tell interface for users who run trials themselves, and what
:class:`ember.tune.Tuner` runs on. ``ask()`` hands out a trial to run (new, or one to resume),
``report()`` records a result and answers with a :class:`~ember.tune.Decision`, ``tell()`` ends the trial:

>>> from ember import tune
>>> exp = tune.Experiment({"x": tune.uniform(-1, 1)}, metric="loss", mode="min", num_samples=5, seed=0)
>>> while (trial := exp.ask()) is not None:
...     for step in range(3):
...         decision = exp.report(trial, {"loss": (trial.config["x"] - 0.2) ** 2 + 1 / (step + 1)})
...     exp.tell(trial)
>>> exp.is_finished(), len(exp.trials), exp.best_trial.last_result["training_iteration"]
(True, 5, 3)

With ``storage_path`` every call is appended to ``<storage_path>/<name>/journal.jsonl``;
:meth:`Experiment.restore` replays it into fresh searcher and scheduler instances, so a killed experiment
continues exactly where it stopped: the same trials, states and results, and the same configurations to come.
Trials that were running when it was killed restart from their latest checkpoint; results they report again
(iterations the searcher and scheduler already saw) are recorded but not fed to them twice.
"""
from __future__ import annotations

import collections
import os
import secrets
import time

from . import journal_checks, registry, stoppers
from ._objective import loss, objectives
from .checkpoint import Checkpoint, CheckpointManager, write_checkpoint
from .config import CheckpointConfig
from .exploit import apply_exploit, check_replayed_exploits
from .journal import Journal, JournalError, normalized
from .results import ResultGrid
from .schedulers.base import Decision
from .searchers.base import FINISHED
from .spec import build, checkpoint_config_spec, component_spec, space_spec, value_spec
from .trial import Trial

JOURNAL = "journal.jsonl"
#: how every journal starts (the header record's first key): a file not starting so is not an experiment's
HEADER_PREFIX = b'{"e":"experiment",'
_RESTORABLE = ("param_space", "search_alg", "scheduler", "stop", "checkpoint_config")


class Experiment:
    """Trials of ``param_space`` proposed by ``search_alg``, continued, paused or stopped by ``scheduler``.

    ``metric``/``mode``: the reported key to optimise, "min" or "max" (several objectives: a list of keys
    and a list of as many modes; see :meth:`ResultGrid.get_pareto_front`). ``search_alg``/``scheduler``: an
    instance or a registered name (None: "random", "fifo"). ``num_samples``: trials to create (each
    grid_search point that many times; -1: until the searcher is finished). ``seed``: the searcher's seed
    (None: drawn once and journaled, so a restore still continues the same sequence). ``storage_path`` /
    ``name``: where the journal and trial folders go (None: kept in memory only). ``max_failures``: retries
    of a failing trial (-1: no limit). ``stop``: ``{key: threshold}``, ``stop(trial_id, result) -> bool``
    or a :class:`~ember.tune.Stopper` (whose ``stop_all()`` halts the experiment: see :meth:`halt`).
    ``checkpoint_config``: an :class:`ember.tune.CheckpointConfig` (keep the best k checkpoints per trial;
    default: the two most recent).

    The journal's first line is the experiment's specification as JSON (see :mod:`ember.tune.spec`), from
    which :meth:`restore` rebuilds it. Creating an experiment whose folder already holds a journal is a
    FileExistsError, also when two processes create it at the same moment: one of them gets it.
    """

    def __init__(self, param_space, metric: str, mode: str, search_alg=None, scheduler=None, num_samples: int = 1,
                 seed: int | None = None, storage_path: str | None = None, name: str | None = None,
                 max_failures: int = 0, stop=None, checkpoint_config=None, _tuner: dict | None = None):
        if seed is None:
            seed = secrets.randbits(31)
        given = dict(param_space=param_space, search_alg=search_alg, scheduler=scheduler, stop=stop,
                     checkpoint_config=checkpoint_config)
        self._configure(metric=metric, mode=mode, num_samples=num_samples, seed=seed, max_failures=max_failures,
                        **given)
        if storage_path is None:
            if name is not None:
                raise ValueError("Experiment: name is the folder under storage_path; give storage_path too")
            self.path = None
            return
        self.path = os.path.join(os.path.expanduser(storage_path), name or time.strftime("tune_%Y%m%d_%H%M%S"))
        header = {"e": "experiment", "version": 2, "metric": self.metric, "mode": self.mode, "num_samples": num_samples,
                  "seed": seed, "max_failures": max_failures,
                  "spec": {"param_space": space_spec(self.space),
                           "search_alg": component_spec("searcher", self.searcher),
                           "scheduler": component_spec("scheduler", self.scheduler),
                           "stop": value_spec(stop, "stop"),
                           "checkpoint_config": checkpoint_config_spec(checkpoint_config)},
                  **({} if _tuner is None else {"tuner": _tuner}), "time": time.time()}
        os.makedirs(self.path, exist_ok=True)
        try:
            self._journal = Journal.create(os.path.join(self.path, JOURNAL), HEADER_PREFIX)
        except FileExistsError as e:
            raise FileExistsError(f"an experiment already exists at {self.path!r} ({e}): continue it with "
                                  "Experiment.restore(path) (or Tuner.restore), or choose another name") from None
        self._journal.append(header, sync=True)

    def _configure(self, *, param_space, metric, mode, search_alg, scheduler, num_samples, seed, max_failures,
                   stop, checkpoint_config):
        from .space import SearchSpace  # here, not at import: `import ember.tune` stays cheap
        metrics, modes = objectives(metric, mode, "Experiment")
        if len(metrics) == 1:  # one objective, however given
            metric, mode = metrics[0], modes[0]
        else:
            metric, mode = metrics, modes
        for what, value, low in (("num_samples", num_samples, 1), ("max_failures", max_failures, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or (value < low and value != -1):
                raise ValueError(f"Experiment: {what} must be an int >= {low} or -1 (no limit), got {value!r}")
        _checked_stop(stop, "Experiment")
        self.space = param_space if isinstance(param_space, SearchSpace) else SearchSpace(param_space)
        self.metric, self.mode, self.seed = metric, mode, seed
        self.num_samples, self.max_failures, self.stop = num_samples, max_failures, stop
        if checkpoint_config is None:  # the Tuner's default too: each trial's two most recent checkpoints
            checkpoint_config = CheckpointConfig()
        self.checkpoint_config = checkpoint_config
        self.searcher = registry.resolve("searcher", search_alg)
        self.scheduler = registry.resolve("scheduler", scheduler)
        self.searcher.setup(self.space, metric, mode, seed=seed, num_samples=None if num_samples == -1 else num_samples)
        # trials to create at most: a searcher that knows its own count (``total``, e.g. an exhaustive grid)
        # decides alone; for the others, num_samples per grid_search point, as in Ray Tune
        own_count = isinstance(getattr(self.searcher, "total", None), int)
        self._limit = float("inf") if num_samples == -1 or own_count else num_samples * self.space.grid_size()
        self.scheduler.setup(metric, mode, "training_iteration")
        self.scheduler.set_seed(seed)
        self._trials: dict = {}
        self._running: set = set()
        self._paused: dict = {}  # trial_id -> None, oldest pause first
        self._queue = collections.deque()  # PENDING trial ids: retried, continued after a pause, interrupted
        self._actions: dict = {}
        self._searcher_finished = False
        self._halted: str | None = None  # why the experiment was ended early (halt), until a restore
        self._journal = None
        self.closed = False
        self._ended = False  # a trial ended since the journal was last forced to disk
        self._checkpoints: dict = {}  # trial_id -> CheckpointManager, when only the best k are kept
        self._replayed_exploits: tuple = ([], [])  # a restore's exploit records: (line, record) read, records made

    # ---------------------------------------------------------------- the public API

    @property
    def trials(self) -> list:
        """Every trial so far, in order of creation."""
        return list(self._trials.values())

    def get_trial(self, trial_id: str) -> Trial:
        """The trial with id ``trial_id``."""
        try:
            return self._trials[trial_id]
        except KeyError:
            raise KeyError(f"no trial {trial_id!r} in this experiment (it has {len(self._trials)})") from None

    def ask(self) -> Trial | None:
        """A trial to run now: a new one, or a PENDING/PAUSED one to resume (from ``trial.checkpoint``).

        None when there is nothing to run right now (the searcher waits for results, or trials are still
        running) or ever again (:meth:`is_finished`).
        """
        return self._ask()

    def report(self, trial: Trial, metrics: dict, checkpoint=None) -> Decision:
        """Record a result of a running trial and answer whether it continues, pauses or stops.

        Values are stored as the journal holds them (NumPy scalars and 0-d tensors become numbers, tuples
        lists). ``training_iteration`` (the run's count of reports), ``trial_id``, ``timestamp`` and ``time_total_s``
        are filled in when missing. ``checkpoint``: a dict of tensors and plain values (saved with
        ``ember.save`` in the trial's folder), a :class:`ember.tune.Checkpoint`, or a path (with storage,
        copied into the trial's folder). After STOP or PAUSE the
        trial is no longer running: end its run (a later :meth:`tell` is ignored). A report about a trial
        that is not running is ignored and answered with STOP.
        """
        if not isinstance(metrics, dict):
            raise TypeError(f"report: metrics must be a dict of reported values, got {type(metrics).__name__}")
        if trial.status != "RUNNING":
            return Decision.STOP
        result = normalized(metrics)  # as a restore will read it back: plain numbers, lists, strings
        now = time.time()
        iteration = result.setdefault("training_iteration", trial.run_iteration + 1)
        if isinstance(iteration, bool) or not isinstance(iteration, int) or iteration <= trial.run_iteration:
            raise ValueError(f"report: training_iteration must be an int that grows with each report of a run "
                             f"(trial {trial.trial_id} is at {trial.run_iteration}), got {iteration!r}; leave it "
                             "out to have it counted")
        result.setdefault("trial_id", trial.trial_id)
        result.setdefault("timestamp", now)
        result.setdefault("time_total_s", trial.time_base + now - trial.run_started)
        decision = self._report(trial, result, self._checkpoint_path(trial, checkpoint, result["training_iteration"]))
        if stoppers.stop_all(self.stop):
            self.halt(f"{type(self.stop).__name__}.stop_all() returned True")
            return Decision.STOP
        return decision

    def tell(self, trial: Trial, metrics: dict | None = None, *, error: str | BaseException | None = None) -> None:
        """The trial's run ended: it finished (a final ``metrics`` result is reported first), or failed with
        ``error`` (a traceback text or an exception). A failed trial is retried (``ask`` returns it again)
        up to ``max_failures`` times, then recorded as ERROR with its traceback."""
        if metrics is not None:
            self.report(trial, metrics)
        if trial.status != "RUNNING":
            return
        if isinstance(error, BaseException):
            import traceback
            error = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        elif error is not None and not isinstance(error, str):
            raise TypeError(f"tell: error must be a traceback text or an exception, got {type(error).__name__}")
        self._tell(trial, error)

    def take_decisions(self) -> dict:
        """``{trial_id: Decision}``: running trials the experiment paused or stopped because of results of
        other trials (the scheduler's :meth:`~ember.tune.Scheduler.take_decisions`). End their runs; each
        is returned once."""
        actions, self._actions = self._actions, {}
        return actions

    def is_finished(self) -> bool:
        """True when no trial will run again: the searcher is done (or the experiment was halted) and no trial
        is running, paused or pending."""
        return (self._searcher_finished or self._halted is not None) \
            and not (self._running or self._paused or self._queue)

    def halt(self, reason: str) -> None:
        """End the experiment now (a time budget ran out, a stopper's ``stop_all()``): every trial not yet
        ended is TERMINATED with the results it has (its best checkpoints kept), running ones are handed out
        by :meth:`take_decisions` as STOP, and :meth:`ask` gives nothing more. ``reason`` is journaled. A
        restore lifts the halt: the search goes on with new trials.

        >>> from ember import tune
        >>> exp = tune.Experiment({"x": tune.uniform(0, 1)}, metric="y", mode="min", num_samples=9, seed=0)
        >>> trial = exp.ask()
        >>> exp.halt("out of time")
        >>> exp.take_decisions(), trial.status, exp.ask(), exp.is_finished()
        ({'00000': <Decision.STOP: 'stop'>}, 'TERMINATED', None, True)
        """
        if not isinstance(reason, str):
            raise TypeError(f"halt: reason must be a str, got {type(reason).__name__}")
        if self._halted is None and not self.is_finished():
            self._log({"e": "halt", "why": reason, "time": time.time()}, sync=True)
            self._halt(reason)

    @property
    def best_trial(self) -> Trial | None:
        """The trial whose last result is best in ``metric`` (with several objectives: in the first one;
        None before any result has it)."""
        (metric, *_), (mode, *_) = objectives(self.metric, self.mode)
        best, best_loss = None, None
        for trial in self._trials.values():
            last = trial.last_result
            if last is None or metric not in last:
                continue
            value = loss(last, metric, mode)  # NaN is the worst: never best while another value is
            if best is None or value < best_loss:
                best, best_loss = trial, value
        return best

    def results(self):
        """The trials so far as a :class:`ember.tune.ResultGrid`."""
        return ResultGrid.from_trials(self.trials, self.metric, self.mode, self.path)

    def close(self) -> None:
        """Sync and close the journal: the experiment can still be read, not run (restore it to go on)."""
        if self._journal is not None:
            self._journal.close()
        self.closed = True

    @classmethod
    def restore(cls, path: str, *, _note: dict | None = None, **given) -> Experiment:
        """Continue the experiment stored at ``path`` (the folder holding ``journal.jsonl``).

        The param space, searcher, scheduler, stop criteria and checkpoint config are rebuilt from the JSON
        specification in the journal's first line: no code is read from disk. What has no JSON form (a
        ``sample_from`` function, a callable ``stop``, a searcher built with a function such as a custom
        ``gamma``, an unregistered plugin) is taken from ``param_space=``, ``search_alg=``, ``scheduler=``,
        ``stop=`` or ``checkpoint_config=`` (built as in the original run); restore says which is missing. An
        argument passed wins over the recorded one, None included (``stop=None``: no stop criteria). The
        journal is replayed into them, so the sequence of configurations continues exactly.

        The journal is checked as untrusted input: a record that is not what the run writes (bad JSON, wrong
        types, an unknown trial, a checkpoint outside the trial's folder) is a
        :class:`~ember.tune.journal.JournalError` naming the file and line, and a folder that is not an
        experiment is left unchanged.
        """
        unknown = set(given) - set(_RESTORABLE)
        if unknown:
            raise TypeError(f"Experiment.restore: unexpected arguments {sorted(unknown)}; expected {_RESTORABLE}")
        path = os.path.expanduser(path)
        journal_path = os.path.join(path, JOURNAL)
        # locked against a second runner; a torn line is cut off only once the header is an experiment's
        journal, records = Journal.open(journal_path,
                                        check=lambda records: journal_checks.check_header(records, journal_path))
        try:
            header = records[0]
            spec = header.get("spec", {})
            if header["version"] == 1:  # its components were pickled beside the journal: never read
                spec = {key: {"missing": "written by an ember-tune that pickled it; pickles are not read"}
                        for key in _RESTORABLE}
            # the stop criteria may change from one run to the next: the history replays with those in effect
            # then (the header's, or those a later restore record names), the caller's apply from now on
            history = {key: value for key, value in given.items() if key != "stop" or _missing(spec.get("stop"))}
            components = {key: build(key, spec.get(key), history, f"{journal_path}: line 1") for key in _RESTORABLE}
            self = cls.__new__(cls)
            try:
                self._configure(metric=header["metric"], mode=header["mode"], num_samples=header["num_samples"],
                                seed=header["seed"], max_failures=header["max_failures"], **components)
            except (TypeError, ValueError) as e:
                raise JournalError(f"{journal_path}: line 1: the experiment cannot be set up from its header "
                                   f"({type(e).__name__}: {e})") from None
            self.path = path
            for i, record in enumerate(records[1:], start=2):
                self._replay(record, i, journal_path, given)
            unwritten = check_replayed_exploits(*self._replayed_exploits, journal_path)
            journal_checks.check_trial_dirs(self._trials.values(), path)
            record = {"e": "restore", **(_note or {}), "time": time.time()}  # (_note: what the Tuner adds)
            if "stop" in given:
                self.stop = _checked_stop(given["stop"], "Experiment.restore")
                record["stop"] = value_spec(self.stop, "stop")
        except BaseException:
            journal.close()
            raise
        self._actions = {}
        self._journal = journal
        for exploit in unwritten:  # made by a run killed before it wrote their lines
            self._log({**exploit, "time": time.time()})
        self._restart_interrupted()
        self._journal.append(record, sync=True)
        return self

    # ---------------------------------------------------------------- the state machine
    # Each primitive below is one journal record; replaying the records calls the same primitives in the
    # same order, so the searcher and scheduler see exactly the calls of the original run.

    def _log(self, record: dict, sync: bool = False) -> None:
        if self.closed:
            raise RuntimeError("this experiment was closed: continue it with Experiment.restore(path)"
                               + ("" if self.path is None else f" (path {self.path!r})"))
        if self._journal is not None:
            self._journal.append(record, sync)

    def _ask(self):
        if self._halted is not None:
            return None
        while True:
            if self._queue:
                return self._start(self._trials[self._queue.popleft()], {"e": "ask"})
            chosen = self.scheduler.choose_trial_to_run(list(self._paused), self._searcher_finished)
            self._drain()
            if chosen is not None:
                if chosen not in self._paused:
                    raise RuntimeError(f"{type(self.scheduler).__name__}.choose_trial_to_run returned {chosen!r}, "
                                       f"which is not a paused trial (paused: {list(self._paused)})")
                return self._start(self._trials[chosen], {"e": "ask"})
            if self._queue:  # the scheduler let paused trials continue
                continue
            if self._searcher_finished:
                if self._paused and not self._running:
                    self._stop_stranded()
                self._log({"e": "ask", "t": None})
                return None
            if len(self._trials) >= self._limit:
                self._searcher_finished = True
                continue
            trial_id = f"{len(self._trials):05d}"
            config = self.searcher.suggest(trial_id)
            if isinstance(config, str) and config == FINISHED:
                self._searcher_finished = True
                continue
            if config is None:
                self._log({"e": "ask", "t": None})
                return None
            if not isinstance(config, dict):
                raise TypeError(f"{type(self.searcher).__name__}.suggest returned {type(config).__name__}; "
                                "expected a config dict, None or FINISHED")
            trial_dir = os.path.join(self.path, f"trial_{trial_id}") if self.path else None
            trial = self._trials[trial_id] = Trial(trial_id, config, trial_dir)
            self.scheduler.on_trial_add(trial_id, config)
            return self._start(trial, {"e": "ask", "c": config})

    def _start(self, trial: Trial, record: dict) -> Trial:
        self._paused.pop(trial.trial_id, None)
        self._running.add(trial.trial_id)
        trial.status = "RUNNING"
        trial.run_iteration = trial.checkpoint_iteration
        trial.run_started = time.time()
        trial.time_base = trial.last_result.get("time_total_s", 0.0) if trial.results else 0.0
        if trial.trial_dir is not None and not os.path.isdir(trial.trial_dir):
            os.makedirs(trial.trial_dir, exist_ok=True)
        record["t"] = trial.trial_id
        self._log(record)
        return trial

    def _report(self, trial: Trial, result: dict, checkpoint: str | None) -> Decision:
        # first what may raise (a scheduler refusing the result, a stop callable), then the journal line,
        # then what changes files (checkpoints deleted): a kill in between loses nothing the journal names
        iteration = result["training_iteration"]
        if iteration > trial.fed_iteration:  # not a result the searcher and scheduler saw before a restart
            self.searcher.on_result(trial.trial_id, result)
            if checkpoint is not None:
                self.scheduler.on_checkpoint(trial.trial_id, iteration)
            decision = Decision(self.scheduler.on_result(trial.trial_id, result))
            trial.fed_iteration = iteration
        else:
            decision = Decision.CONTINUE
        if self._stop_reached(trial.trial_id, result):
            decision = Decision.STOP
        trial.run_iteration = iteration
        _store_result(trial.results, result)
        record = {"e": "report", "t": trial.trial_id, "m": result}
        if checkpoint is not None and self._journal is not None:  # relative: the folder may move
            record["c"] = os.path.relpath(checkpoint, self.path)
        self._log(record, sync=decision is not Decision.CONTINUE)
        if checkpoint is not None:
            trial.checkpoint, trial.checkpoint_iteration = checkpoint, iteration
            if trial.trial_dir is not None and self.checkpoint_config is not None \
                    and self.checkpoint_config.num_to_keep is not None:
                self._checkpoint_manager(trial).register(checkpoint, result)
        if decision is Decision.STOP:
            self._end(trial, "TERMINATED")
            self._ended = False  # its line is on disk already
        elif decision is Decision.PAUSE:
            self._pause(trial)
        self._drain()
        self._sync_if_ended()
        return decision

    def _tell(self, trial: Trial, error: str | None) -> None:
        self._log({"e": "tell", "t": trial.trial_id, "err": error}, sync=True)
        if error is None:
            self._end(trial, "TERMINATED")
        else:
            trial.error = error
            trial.num_failures += 1
            if self.max_failures == -1 or trial.num_failures <= self.max_failures:
                self._running.discard(trial.trial_id)
                trial.status = "PENDING"
                self._queue.append(trial.trial_id)
            else:
                self._end(trial, "ERROR")
        self._ended = False  # its line is on disk already
        self._drain()
        self._sync_if_ended()

    def _halt(self, reason: str) -> None:
        self._halted = reason
        queued, self._queue = list(self._queue), collections.deque()
        for trial_id in sorted(self._running) + list(self._paused) + queued:
            trial = self._trials[trial_id]
            if trial.status == "RUNNING":
                self._actions[trial_id] = Decision.STOP
            self._end(trial, "TERMINATED")
        self._ended = False  # the halt's line is on disk already
        self._drain()

    def _sync_if_ended(self) -> None:
        """Force the journal to disk if a trial ended since the last time (decided about by the scheduler)."""
        if self._ended and self._journal is not None:
            self._journal.request_sync()
        self._ended = False

    def _restart_interrupted(self) -> None:
        """After a restore: trials that were running when the experiment was killed start again; a halt
        is lifted."""
        self._halted = None
        for trial_id in sorted(self._running):
            self._trials[trial_id].status = "PENDING"
            self._queue.append(trial_id)
        self._running.clear()

    def _replay(self, record, line: int, journal_path: str, given: dict) -> None:
        trial = journal_checks.check_record(record, self._trials, journal_path, line)
        kind = record["e"]
        try:
            if kind == "ask":
                trial = self._ask()
                got = trial.trial_id if trial is not None else None
                if got != record["t"] or ("c" in record and normalized(trial.config) != record["c"]):
                    raise JournalError(
                        f"{journal_path}: line {line}: the restored searcher/scheduler gave trial {got!r} (config "
                        f"{trial.config if trial else None!r}) where the run gave {record['t']!r} (config "
                        f"{record.get('c')!r}); restore needs components built as in the original run (same "
                        "classes and arguments, deterministic given the seed)")
            elif kind == "report":
                checkpoint = record.get("c")
                if checkpoint is not None:
                    checkpoint = journal_checks.checkpoint_file(
                        checkpoint, trial, record["m"]["training_iteration"], self.path, journal_path, line)
                self._report(trial, record["m"], checkpoint)
            elif kind == "tell":
                self._tell(trial, record.get("err"))
            elif kind == "halt":
                self._halt(record["why"])
            elif kind == "exploit":  # checked once replayed: a synchronous scheduler makes it at the next ask
                self._replayed_exploits[0].append((line, record))
            else:  # "restore", maybe with the stop criteria of the run it began
                if "stop" in record:
                    entry = record["stop"]
                    self.stop = build("stop", entry, given if _missing(entry) else {}, f"{journal_path}: line {line}")
                self._restart_interrupted()
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            # what the checks above cannot see: a value the searcher or scheduler refuses
            raise JournalError(f"{journal_path}: line {line}: replaying this {kind!r} record failed "
                               f"({type(e).__name__}: {e})") from e

    def _end(self, trial: Trial, status: str) -> None:
        """The trial ended for good: tell the searcher and scheduler; keep only its best checkpoints."""
        self._running.discard(trial.trial_id)
        self._paused.pop(trial.trial_id, None)
        trial.status = status
        self._ended = True
        error = status == "ERROR"
        self.searcher.on_complete(trial.trial_id, trial.last_result, error=error)
        self.scheduler.on_complete(trial.trial_id, trial.last_result, error=error)
        manager = self._checkpoints.pop(trial.trial_id, None)
        if manager is not None:  # the trial will not resume: its latest checkpoint may go if not among the best
            manager.finish()
            trial.checkpoint = manager.latest

    def _checkpoint_manager(self, trial: Trial):
        manager = self._checkpoints.get(trial.trial_id)
        if manager is None:
            cc = self.checkpoint_config
            manager = self._checkpoints[trial.trial_id] = CheckpointManager(
                cc.num_to_keep, cc.checkpoint_score_attribute, cc.checkpoint_score_order)
        return manager

    def _pause(self, trial: Trial) -> None:
        self._running.discard(trial.trial_id)
        trial.status = "PAUSED"
        self._paused[trial.trial_id] = None

    def _drain(self) -> None:
        """Apply the scheduler's exploits, then its decisions about trials other than the one reporting."""
        for trial_id, (source_id, config) in self.scheduler.take_exploits().items():
            replaying = self.path is not None and self._journal is None
            record = apply_exploit(self._trials[trial_id], self._trials[source_id], config, self.path, replaying)
            if record is not None:
                self._checkpoints.pop(trial_id, None)  # its old checkpoints are not where it resumes from
                if replaying:
                    self._replayed_exploits[1].append(record)
                self._log({**record, "time": time.time()}, sync=True)
        while decisions := self.scheduler.take_decisions():
            for trial_id, decision in decisions.items():
                trial = self._trials.get(trial_id)
                if trial is None or trial.is_finished:
                    continue
                decision = Decision(decision)
                if decision is Decision.STOP:
                    if trial.status == "RUNNING":
                        self._actions[trial_id] = decision
                    if trial.status == "PENDING":
                        self._queue.remove(trial_id)
                    self._end(trial, "TERMINATED")
                elif decision is Decision.PAUSE and trial.status == "RUNNING":
                    self._actions[trial_id] = decision
                    self._pause(trial)
                elif decision is Decision.CONTINUE and trial.status == "PAUSED":
                    del self._paused[trial_id]
                    trial.status = "PENDING"
                    self._queue.append(trial_id)

    def _stop_stranded(self) -> None:
        """The searcher is done, nothing runs, and the scheduler resumes none of the paused trials: they
        would wait forever, so they end as they are (TERMINATED, their last result final)."""
        for trial_id in list(self._paused):
            self._end(self._trials[trial_id], "TERMINATED")
        self._drain()

    def _stop_reached(self, trial_id: str, result: dict) -> bool:
        if self.stop is None:
            return False
        if isinstance(self.stop, dict):
            return any(key in result and result[key] >= threshold for key, threshold in self.stop.items())
        return bool(self.stop(trial_id, result))

    def _checkpoint_path(self, trial: Trial, checkpoint, iteration: int) -> str | None:
        """The path the journal records for ``checkpoint``: with storage, the file in the trial's folder
        (a dict or in-memory Checkpoint is saved there, another file copied in, so keeping the best k never
        deletes a file of the user's); without, the path given."""
        if checkpoint is None:
            return None
        if trial.trial_dir is None:
            if isinstance(checkpoint, (str, os.PathLike)) and getattr(checkpoint, "_contents", None) is None:
                return os.fspath(checkpoint)
            raise ValueError("report: a checkpoint dict needs a folder to be saved in; create the Experiment "
                             "with storage_path, or pass the path of a checkpoint you saved")
        if isinstance(checkpoint, (str, os.PathLike)) and not isinstance(checkpoint, Checkpoint):
            checkpoint = Checkpoint(checkpoint)
        if not isinstance(checkpoint, (dict, Checkpoint)):
            raise TypeError("report: checkpoint must be a dict of tensors and plain values, a tune.Checkpoint "
                            f"or a path, got {type(checkpoint).__name__}")
        return write_checkpoint(checkpoint, trial.trial_dir, iteration).path


def _missing(entry) -> bool:
    """Whether a specification entry says the value had no JSON form (so the caller passes it)."""
    return isinstance(entry, dict) and "missing" in entry


def _checked_stop(stop, owner: str):
    if stop is not None and not (isinstance(stop, dict) or callable(stop)):
        raise TypeError(f"{owner}: stop must be a dict {{reported key: threshold}}, a tune.Stopper or a callable "
                        f"stop(trial_id, result) -> bool, got {type(stop).__name__}")
    return stop


def _store_result(results: list, result: dict) -> None:
    """Append ``result``, or replace the result of the same iteration reported before a restart."""
    iteration = result["training_iteration"]
    if results and results[-1]["training_iteration"] >= iteration:
        for i in range(len(results) - 1, -1, -1):
            if results[i]["training_iteration"] == iteration:
                results[i] = result
                return
    results.append(result)
