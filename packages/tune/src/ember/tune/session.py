"""Inside a trial: ``tune.report``, ``tune.get_checkpoint``, ``tune.get_trial_id``.

An executor runs a trial with :func:`run_trial`, which opens the trial's session for the
trainable's duration. ``tune.report(metrics, checkpoint=None)`` fills in the bookkeeping
keys, writes the checkpoint (:func:`ember.save`: safetensors, atomic), hands both to the
executor's ``channel`` and blocks until the experiment answers. On PAUSE or STOP it raises
an internal exception, a subclass of ``BaseException`` (a trainable's ``except Exception``
does not swallow it), that ends the trainable.

The channel is how an executor talks to the experiment: a callable
``channel(metrics, checkpoint_path_or_None) -> Decision``. :func:`run_trial` works in any
process, so the local and Ray executors share it, and it runs in-process too:

>>> import tempfile
>>> from ember import tune
>>> from ember.tune import Decision, TrialRun
>>> def trainable(config):
...     for step in range(10):
...         tune.report({"loss": config["x"] / (step + 1)})
>>> answers = []
>>> def channel(metrics, checkpoint):
...     answers.append(metrics["training_iteration"])
...     return Decision.STOP if metrics["training_iteration"] == 3 else Decision.CONTINUE
>>> run_trial(trainable, TrialRun("t0", {"x": 1.0}, trial_dir=tempfile.mkdtemp()), channel)
TrialOutcome(kind='stopped', metrics=None, error=None)
>>> answers
[1, 2, 3]
>>> tune.report({"loss": 0.0})
Traceback (most recent call last):
...
RuntimeError: tune.report() was called outside a trial: it works only inside a trainable ...
"""
from __future__ import annotations

import threading
import time
import traceback
import typing

import numpy as np

import ember

from .checkpoint import Checkpoint, write_checkpoint
from .schedulers.base import Decision

__all__ = ["report", "get_checkpoint", "get_trial_id", "run_trial", "TrialOutcome", "AUTO_KEYS"]

#: result keys that ``tune.report`` fills in (a trainable may not report them itself)
AUTO_KEYS = ("training_iteration", "time_this_iter_s", "time_total_s", "timestamp", "trial_id")


class TrialOutcome(typing.NamedTuple):
    """How a trial ended: ``kind`` is an :class:`~ember.tune.ExecutorEvent` kind ("complete", "paused",
    "stopped" or "error"); ``metrics`` is the trainable's returned dict (with the bookkeeping keys) if it
    returned one; ``error`` is the traceback text of an error."""
    kind: str
    metrics: dict | None = None
    error: str | None = None


class _TrialEnd(BaseException):
    """Raised inside ``tune.report`` after a PAUSE or STOP answer; ends the trainable. Internal: not an
    ``Exception``, so a trainable's ``except Exception`` does not swallow it."""

    def __init__(self, decision: Decision):
        super().__init__(f"the experiment answered {decision.value.upper()}; the trainable must end")
        self.decision = decision


class _Session:
    def __init__(self, run, channel):
        self.trial_id, self.trial_dir, self.channel = run.trial_id, run.trial_dir, channel
        self.iteration = int(run.iteration)
        self.checkpoint = Checkpoint(run.checkpoint) if run.checkpoint is not None else None
        self.start = self.last = time.monotonic()
        # time spent in earlier runs of this trial, where the executor knows it
        self.time_before = float(getattr(run, "time_total_s", 0.0) or 0.0)
        self.decision = Decision.CONTINUE
        self.lock = threading.Lock()

    def fill(self, metrics) -> dict:
        """A copy of ``metrics`` with plain-number values and the bookkeeping keys of the next report."""
        if not isinstance(metrics, dict):
            raise TypeError(f"tune.report expects a dict of metrics, got {type(metrics).__name__}")
        taken = [key for key in AUTO_KEYS if key in metrics]
        if taken:
            raise ValueError(f"tune.report fills in {taken[0]!r} itself; report your value under another name "
                             f"(reserved keys: {', '.join(AUTO_KEYS)})")
        result = {}
        for key, value in metrics.items():
            if not isinstance(key, str):
                raise TypeError(f"metric names must be strings, got {key!r}")
            result[key] = _plain(value)
        now = time.monotonic()
        self.iteration += 1
        result.update(training_iteration=self.iteration, time_this_iter_s=now - self.last,
                      time_total_s=self.time_before + (now - self.start), timestamp=time.time(),
                      trial_id=self.trial_id)
        self.last = now
        return result


def _plain(value):
    """Numbers as Python numbers: NumPy scalars and one-element arrays or tensors become floats/ints."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray) and value.size == 1 or isinstance(value, ember.Tensor) and value.numel() == 1:
        return value.item()
    return value


_session: _Session | None = None


def _current(name: str) -> _Session:
    if _session is None:
        raise RuntimeError(f"tune.{name}() was called outside a trial: it works only inside a trainable run by "
                           "tune.Tuner or an executor")
    return _session


def report(metrics: dict, checkpoint=None) -> None:
    """Report ``metrics`` (a dict of numbers and other JSON-friendly values) and, optionally, a checkpoint.

    ``checkpoint`` is a dict of tensors and plain values (or a :class:`~ember.tune.Checkpoint`); it is
    saved as ``<trial_dir>/checkpoint_<training_iteration:06d>.safetensors`` and becomes what
    :func:`get_checkpoint` returns. The result gets ``training_iteration`` (continuing across pauses),
    ``time_this_iter_s``, ``time_total_s``, ``timestamp`` and ``trial_id``. Blocks until the experiment
    answers; after PAUSE or STOP it raises an exception (not an ``Exception``) that ends the trainable.
    """
    session = _current("report")
    with session.lock:
        if session.decision is not Decision.CONTINUE:  # the trainable swallowed the end and reported again
            raise _TrialEnd(session.decision)
        result = session.fill(metrics)
        path = None
        if checkpoint is not None:
            session.checkpoint = write_checkpoint(checkpoint, session.trial_dir, session.iteration)
            path = session.checkpoint.path
        decision = Decision(session.channel(result, path))
        if decision is not Decision.CONTINUE:
            session.decision = decision
            raise _TrialEnd(decision)


def get_checkpoint() -> Checkpoint | None:
    """The trial's latest checkpoint (the one it resumed from, or the last one it reported), or None."""
    return _current("get_checkpoint").checkpoint


def get_trial_id() -> str:
    """The id of the trial this code runs in."""
    return _current("get_trial_id").trial_id


def run_trial(trainable, run, channel) -> TrialOutcome:
    """Run ``trainable(run.config)`` with its session open; return how it ended (never raises an Exception).

    A dict returned by the trainable becomes the outcome's ``metrics`` (with the bookkeeping keys of one
    more report). ``sys.exit(0)`` counts as completing, other exit codes as errors.
    """
    global _session
    if _session is not None:
        raise RuntimeError(f"a trial ({_session.trial_id}) is already running in this process; "
                           "trials cannot be nested")
    session = _session = _Session(run, channel)
    try:
        returned = trainable(run.config)
        metrics = session.fill(returned) if isinstance(returned, dict) else None
        if session.decision is not Decision.CONTINUE:  # it caught the end and returned
            return TrialOutcome(_ENDED[session.decision])
        return TrialOutcome("complete", metrics)
    except _TrialEnd as end:
        return TrialOutcome(_ENDED[end.decision])
    except SystemExit as exit_:
        if exit_.code in (None, 0):
            return TrialOutcome("complete")
        return TrialOutcome("error", error=f"the trainable called sys.exit({exit_.code!r})\n"
                                           + traceback.format_exc())
    except Exception:
        return TrialOutcome("error", error=traceback.format_exc())
    finally:
        _session = None


_ENDED = {Decision.PAUSE: "paused", Decision.STOP: "stopped"}
