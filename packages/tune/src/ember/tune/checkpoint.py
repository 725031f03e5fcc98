"""Trial checkpoints: :class:`Checkpoint` (one safetensors file) and :class:`CheckpointManager` (keep the best k).

A trial saves a checkpoint by handing a dict of tensors and plain values to
``tune.report(metrics, checkpoint=...)``. It is written with :func:`ember.save`
(safetensors, atomic: a trial killed mid-write leaves no half file) as
``<trial_dir>/checkpoint_<iteration:06d>.safetensors``, where ``iteration`` is the
``training_iteration`` of that report.

>>> import tempfile, ember
>>> from ember.tune.checkpoint import Checkpoint, write_checkpoint
>>> trial_dir = tempfile.mkdtemp()
>>> ckpt = write_checkpoint({"step": 7, "w": ember.ones(2)}, trial_dir, iteration=7)
>>> os.path.basename(ckpt.path)
'checkpoint_000007.safetensors'
>>> ckpt.to_dict()
{'step': 7, 'w': tensor([1., 1.])}
"""
from __future__ import annotations

import os
import shutil

import ember  # cheap: the core loads when ember.save/ember.load are first used

from ._objective import check_mode, value_loss

__all__ = ["Checkpoint", "CheckpointManager", "checkpoint_path", "write_checkpoint"]


def checkpoint_path(trial_dir: str, iteration: int) -> str:
    """Where the checkpoint reported with ``training_iteration == iteration`` lives."""
    return os.path.join(os.fspath(trial_dir), f"checkpoint_{int(iteration):06d}.safetensors")


class Checkpoint:
    """A trial checkpoint: a safetensors file (``path``), or a dict not yet written (:meth:`from_dict`).

    ``tune.get_checkpoint()`` returns one; ``.to_dict()`` loads it with :func:`ember.load`.

    >>> ckpt = Checkpoint.from_dict({"epoch": 3})
    >>> ckpt.path is None, ckpt.to_dict()
    (True, {'epoch': 3})
    """

    def __init__(self, path):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"Checkpoint(path) expects the path of a safetensors file, got {type(path).__name__}; "
                            "use Checkpoint.from_dict(data) for an in-memory dict")
        self.path = os.fspath(path)
        self._contents = None

    @classmethod
    def from_dict(cls, data: dict) -> "Checkpoint":
        """A checkpoint holding ``data`` (tensors and plain values); ``tune.report`` writes it to the trial dir."""
        if not isinstance(data, dict):
            raise TypeError(f"Checkpoint.from_dict expects a dict, got {type(data).__name__}")
        ckpt = cls.__new__(cls)
        ckpt.path, ckpt._contents = None, data
        return ckpt

    def to_dict(self) -> dict:
        """The checkpoint's contents: loaded from ``path`` with :func:`ember.load`, or the dict it was made from."""
        if self._contents is not None:
            return self._contents
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"checkpoint file {self.path!r} does not exist (was it deleted by "
                                    "CheckpointConfig(num_to_keep=...)?)")
        return ember.load(self.path)

    def __fspath__(self):
        if self.path is None:
            raise TypeError("this Checkpoint holds an in-memory dict and has no path yet")
        return self.path

    def __eq__(self, other):
        return isinstance(other, Checkpoint) and self.path is not None and self.path == other.path

    def __hash__(self):
        return hash(self.path) if self.path is not None else id(self)

    def __repr__(self):
        return f"Checkpoint(path={self.path!r})" if self.path is not None else "Checkpoint(<in-memory dict>)"


def write_checkpoint(checkpoint, trial_dir: str, iteration: int) -> Checkpoint:
    """Write ``checkpoint`` (a dict, or a :class:`Checkpoint`) as the checkpoint of report ``iteration``.

    A dict is saved with :func:`ember.save` (atomic). A :class:`Checkpoint` file elsewhere is copied in
    atomically (temporary file, fsync, rename), so that keeping the best k never deletes a user's own file.
    """
    target = checkpoint_path(trial_dir, iteration)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if isinstance(checkpoint, Checkpoint) and checkpoint._contents is not None:
        checkpoint = checkpoint._contents
    if isinstance(checkpoint, dict):
        ember.save(checkpoint, target)
    elif isinstance(checkpoint, Checkpoint):
        if os.path.abspath(checkpoint.path) != os.path.abspath(target):
            _atomic_copy(checkpoint.path, target)
    else:
        raise TypeError("checkpoint must be a dict of tensors and plain values or a tune.Checkpoint, got "
                        f"{type(checkpoint).__name__}")
    return Checkpoint(target)


def _atomic_copy(src: str, dst: str) -> None:
    if not os.path.isfile(src):
        raise FileNotFoundError(f"checkpoint file {src!r} does not exist")
    from ember.serialization.atomic import write_atomically  # here: importing it loads ember's core

    with open(src, "rb") as inp:
        write_atomically(dst, lambda out: shutil.copyfileobj(inp, out))


class CheckpointManager:
    """Keeps the best ``num_to_keep`` checkpoints of one trial and deletes the others' files.

    Checkpoints are ranked by ``metrics[score_attribute]`` (``score_order`` "max" or "min"); without a
    ``score_attribute`` the most recent ones are the best. A checkpoint whose metrics lack the attribute (or
    hold NaN) ranks below every scored one; ties keep the newer. The latest checkpoint is kept as well, even
    when it is not among the best, as long as the trial may resume: :meth:`finish` (the trial ended for
    good) lets it go. ``num_to_keep=None`` keeps everything. The driver keeps one manager per trial.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> m = CheckpointManager(num_to_keep=1, score_attribute="acc", score_order="max")
    >>> for it, acc in [(1, 0.5), (2, 0.9), (3, 0.7)]:
    ...     _ = write_checkpoint({"it": it}, d, it)
    ...     deleted = m.register(checkpoint_path(d, it), {"acc": acc})
    >>> [os.path.basename(p) for p in m.paths]   # the best (0.9) and the latest (iteration 3)
    ['checkpoint_000002.safetensors', 'checkpoint_000003.safetensors']
    >>> [os.path.basename(p) for p in m.finish()]
    ['checkpoint_000003.safetensors']
    >>> sorted(os.listdir(d))
    ['checkpoint_000002.safetensors']
    """

    def __init__(self, num_to_keep: int | None = None, score_attribute: str | None = None,
                 score_order: str = "max"):
        if num_to_keep is not None and (isinstance(num_to_keep, bool) or not isinstance(num_to_keep, int)
                                        or num_to_keep < 1):
            raise ValueError(f"num_to_keep must be a positive int or None (keep all), got {num_to_keep!r}")
        check_mode(score_order, name="checkpoint_score_order")
        self.num_to_keep, self.score_attribute, self.score_order = num_to_keep, score_attribute, score_order
        self._entries: list = []  # [path, score] in the order registered (oldest first)
        self._finished = False

    @property
    def paths(self) -> list:
        """Paths of the checkpoints kept, oldest first."""
        return [path for path, _ in self._entries]

    @property
    def latest(self) -> str | None:
        """The most recent checkpoint's path (the one a resumed trial starts from), or None."""
        return self._entries[-1][0] if self._entries else None

    @property
    def best(self) -> str | None:
        """The best checkpoint's path by the score (the latest without a ``score_attribute``), or None."""
        ranked = self._ranked()
        return self._entries[ranked[0]][0] if ranked else None

    def _loss(self, metrics) -> float:
        """The checkpoint's rank as a loss (lower is better; not reported or NaN: the worst)."""
        if self.score_attribute is None:
            return 0.0  # ties everywhere: the newer wins
        return value_loss((metrics or {}).get(self.score_attribute), self.score_order)

    def _ranked(self) -> list:
        """Indexes into ``_entries``, best first (ties: newer first)."""
        return sorted(range(len(self._entries)), key=lambda i: (self._entries[i][1], -i))

    def register(self, path: str, metrics: dict | None = None) -> list:
        """Record the trial's new checkpoint (its latest) with the metrics reported with it; delete the files
        that fall out of the best ``num_to_keep``. Returns the deleted paths."""
        path = os.fspath(path)
        self._entries = [e for e in self._entries if e[0] != path]
        self._entries.append([path, self._loss(metrics)])
        self._finished = False
        return self._prune()

    def finish(self) -> list:
        """The trial ended for good: the latest checkpoint no longer needs keeping beyond the best k.
        Returns the deleted paths."""
        self._finished = True
        return self._prune()

    def _prune(self) -> list:
        if self.num_to_keep is None:
            return []
        keep = set(self._ranked()[:self.num_to_keep])
        if not self._finished and self._entries:
            keep.add(len(self._entries) - 1)
        deleted = [path for i, (path, _) in enumerate(self._entries) if i not in keep]
        self._entries = [e for i, e in enumerate(self._entries) if i in keep]
        for path in deleted:
            try:
                os.remove(path)
            except FileNotFoundError:  # already gone (e.g. deleted before a restore replayed this)
                pass
        return deleted

    def state_dict(self) -> dict:
        """JSON-serialisable state (for the experiment's journal)."""
        return {"entries": [[p, s if s != float("-inf") else None] for p, s in self._entries],
                "finished": self._finished}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        self._entries = [[p, float("-inf") if s is None else s] for p, s in state["entries"]]
        self._finished = bool(state["finished"])
