"""Training helpers: stop early when a watched metric stops improving, keep the best-k checkpoints.

Both watch one metric (``monitor``, e.g. ``'val_loss'``) in a direction
(``mode='min'`` or ``'max'``), as in the usual recipe of saving each epoch's
``{'epoch', 'model_state_dict', 'optimizer_state_dict', 'loss'}`` and stopping
once the validation loss has not improved for a few epochs:

>>> import tempfile, ember
>>> from ember.nn.callbacks import EarlyStopping, BestCheckpoints
>>> model = ember.nn.Linear(2, 1)
>>> with tempfile.TemporaryDirectory() as tmp:
...     stopper = EarlyStopping(monitor='val_loss', patience=2)
...     keeper = BestCheckpoints(tmp, monitor='val_loss', save_top_k=2)
...     for epoch, val_loss in enumerate([0.9, 0.7, 0.8, 0.75, 0.72]):
...         _ = keeper.step({'epoch': epoch, 'val_loss': val_loss},
...                         {'epoch': epoch, 'model_state_dict': model.state_dict(), 'loss': val_loss})
...         if stopper.step(val_loss):
...             break
...     print(epoch, stopper.best, sorted(p.split('/')[-1] for p in keeper.best_k_models))
3 0.7 ['epoch=1-0.7000.safetensors', 'epoch=3-0.7500.safetensors']
"""
from __future__ import annotations

import math
import os
import string

import ember

__all__ = ["EarlyStopping", "BestCheckpoints", "ModelCheckpoint"]


def _check_mode(mode):
    if mode not in ("min", "max"):
        raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
    return mode


def _as_float(value, monitor) -> float:
    """A metric value (a number or a one-element tensor) as a Python float."""
    if isinstance(value, dict):
        if monitor not in value:
            raise KeyError(f"the metrics have no {monitor!r} to monitor (got {sorted(map(str, value))})")
        value = value[monitor]
    if isinstance(value, ember.Tensor):
        if value.numel() != 1:
            raise ValueError(f"the monitored metric {monitor!r} must be one number, got a tensor of shape "
                             f"{tuple(value.shape)}")
        value = value.item()
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"the monitored metric {monitor!r} must be a number, got {type(value).__name__}") from None


class EarlyStopping:
    """Say when to stop: the monitored metric has not improved by more than ``min_delta`` for ``patience`` steps.

    Call :meth:`step` once per epoch with the metric (a number, a one-element
    tensor, or a dict of metrics holding ``monitor``); it returns ``True`` when
    training should stop. An improvement means ``value < best - min_delta``
    (``mode='min'``) or ``value > best + min_delta`` (``mode='max'``).
    ``stopping_threshold`` stops as soon as the metric reaches it,
    ``divergence_threshold`` as soon as it is worse than it, and a non-finite
    value stops at once when ``check_finite``. The names and defaults are
    PyTorch Lightning's. :attr:`stop_reason` says why it stopped.

    >>> from ember.nn.callbacks import EarlyStopping
    >>> stopper = EarlyStopping(monitor='val_acc', mode='max', patience=2, min_delta=0.01)
    >>> [stopper.step(acc) for acc in [0.50, 0.60, 0.605, 0.61]]
    [False, False, False, True]
    >>> stopper.best, stopper.wait
    (0.6, 2)
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 3, mode: str = "min",
                 check_finite: bool = True, stopping_threshold: float | None = None,
                 divergence_threshold: float | None = None, verbose: bool = False):
        if patience < 0:
            raise ValueError(f"patience must be >= 0, got {patience}")
        self.monitor = monitor
        self.min_delta = abs(float(min_delta))
        self.patience = int(patience)
        self.mode = _check_mode(mode)
        self.check_finite = check_finite
        self.stopping_threshold = stopping_threshold
        self.divergence_threshold = divergence_threshold
        self.verbose = verbose
        self.reset()

    def reset(self) -> None:
        """Forget everything seen so far."""
        self.best = math.inf if self.mode == "min" else -math.inf
        self.wait = 0
        self.steps = 0
        self.stopped_step = None
        self.stop_reason = None

    def _better(self, value, than, delta=0.0) -> bool:
        return value < than - delta if self.mode == "min" else value > than + delta

    @property
    def should_stop(self) -> bool:
        """Whether a call to :meth:`step` has said stop."""
        return self.stop_reason is not None

    def step(self, value) -> bool:
        """Record this epoch's metric; ``True`` means stop training."""
        value = _as_float(value, self.monitor)
        self.steps += 1
        reason = None
        if self.check_finite and not math.isfinite(value):
            reason = f"{self.monitor} = {value} is not finite; best was {self.best:.6g}"
        elif self.stopping_threshold is not None and not self._better(self.stopping_threshold, value):
            reason = f"{self.monitor} = {value:.6g} reached the stopping threshold {self.stopping_threshold}"
        elif self.divergence_threshold is not None and self._better(self.divergence_threshold, value):
            reason = f"{self.monitor} = {value:.6g} is worse than the divergence threshold {self.divergence_threshold}"
        elif self._better(value, self.best, self.min_delta):
            self.best, self.wait = value, 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                reason = (f"{self.monitor} did not improve by more than {self.min_delta} for {self.wait} "
                          f"steps; best is {self.best:.6g}")
        if reason is not None:
            self.stop_reason, self.stopped_step = reason, self.steps
            if self.verbose:
                print(f"EarlyStopping: {reason}")
        return reason is not None

    def state_dict(self) -> dict:
        """The progress so far (save it in a checkpoint to resume)."""
        return {"best": self.best, "wait": self.wait, "steps": self.steps, "stopped_step": self.stopped_step,
                "stop_reason": self.stop_reason, "patience": self.patience, "monitor": self.monitor,
                "mode": self.mode, "min_delta": self.min_delta}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        for key in ("best", "wait", "steps", "stopped_step", "stop_reason", "patience", "monitor", "mode",
                    "min_delta"):
            if key in state_dict:
                setattr(self, key, state_dict[key])

    def __repr__(self):
        return (f"EarlyStopping(monitor={self.monitor!r}, mode={self.mode!r}, patience={self.patience}, "
                f"min_delta={self.min_delta}, best={self.best}, wait={self.wait})")


class BestCheckpoints:
    """Keep the ``save_top_k`` best checkpoints by a monitored metric, deleting those that drop out.

    Call :meth:`step` with the epoch's metrics (a dict holding ``monitor``)
    and the checkpoint to save (anything :func:`ember.save` takes). The
    checkpoint is written (atomically) to ``dirpath/filename``, where
    ``filename`` is formatted with the metrics (and ``epoch``, counted from 0
    if the metrics lack it), only when it ranks among the best ``save_top_k``;
    the file it pushes out of the top k is deleted. ``save_top_k=-1`` keeps
    every checkpoint, ``0`` none. ``save_last=True`` also writes each
    checkpoint to ``last.safetensors`` (:attr:`last_model_path`). A NaN metric
    ranks worst. Equal names get ``-v1``, ``-v2``, ... suffixes. The names
    follow PyTorch Lightning's ``ModelCheckpoint`` (also available under that
    name).

    Attributes: :attr:`best_model_path`, :attr:`best_model_score`,
    :attr:`best_k_models` (``{path: score}``), :attr:`kth_best_model_path`,
    :attr:`last_model_path`.

    >>> import os, tempfile, ember
    >>> from ember.nn.callbacks import BestCheckpoints
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     keeper = BestCheckpoints(tmp, monitor='acc', mode='max', save_top_k=1,
    ...                              filename='best-{acc:.2f}.safetensors')
    ...     for epoch, acc in enumerate([0.5, 0.8, 0.7]):
    ...         _ = keeper.step({'acc': acc}, {'epoch': epoch, 'weights': ember.ones(2)})
    ...     print(os.listdir(tmp), keeper.best_model_score, ember.load(keeper.best_model_path)['epoch'])
    ['best-0.80.safetensors'] 0.8 1
    """

    def __init__(self, dirpath, monitor: str = "val_loss", mode: str = "min", save_top_k: int = 1,
                 filename: str = "epoch={epoch}-{val_loss:.4f}.safetensors", save_last: bool = False):
        if not isinstance(save_top_k, int) or save_top_k < -1:
            raise ValueError(f"save_top_k must be an int >= -1 (-1 keeps all), got {save_top_k!r}")
        self.dirpath = os.fspath(dirpath)
        self.monitor = monitor
        self.mode = _check_mode(mode)
        self.save_top_k = save_top_k
        self.filename = filename
        self.save_last = save_last
        self._fields = {name for _, name, _, _ in string.Formatter().parse(filename) if name}
        self.best_k_models: dict = {}
        self.last_model_path = None
        self.steps = 0

    # -- ranking -----------------------------------------------------------------------------------------------
    def _key(self, score):
        """Sort key: smaller is better; NaN ranks last."""
        if math.isnan(score):
            return math.inf
        return score if self.mode == "min" else -score

    def _ranked(self):
        return sorted(self.best_k_models, key=lambda p: self._key(self.best_k_models[p]))

    @property
    def best_model_path(self):
        """The path of the best checkpoint kept (``None`` before any)."""
        ranked = self._ranked()
        return ranked[0] if ranked else None

    @property
    def best_model_score(self):
        """The monitored value of the best checkpoint kept (``None`` before any)."""
        path = self.best_model_path
        return None if path is None else self.best_k_models[path]

    @property
    def kth_best_model_path(self):
        """The path of the worst of the checkpoints kept: the next to go."""
        ranked = self._ranked()
        return ranked[-1] if ranked else None

    def _qualifies(self, score) -> bool:
        if self.save_top_k == 0:
            return False
        if self.save_top_k == -1 or len(self.best_k_models) < self.save_top_k:
            return True
        worst = self.best_k_models[self.kth_best_model_path]
        return self._key(score) < self._key(worst)

    # -- saving ------------------------------------------------------------------------------------------------
    def _format(self, metrics, replacing) -> str:
        values = {k: (v.item() if isinstance(v, ember.Tensor) else v) for k, v in metrics.items()}
        values.setdefault("epoch", self.steps)
        missing = sorted(self._fields - set(values))
        if missing:
            raise KeyError(f"filename {self.filename!r} uses {{{missing[0]}}}, which the metrics do not have "
                           f"(got {sorted(values)})")
        name = self.filename.format(**values)
        path = os.path.join(self.dirpath, name)
        stem, ext = os.path.splitext(path)
        version = 1
        while (path in self.best_k_models and path != replacing) or path == self.last_model_path:
            path = f"{stem}-v{version}{ext}"
            version += 1
        return path

    def step(self, metrics: dict, checkpoint) -> str | None:
        """Save ``checkpoint`` if ``metrics[monitor]`` ranks among the best k; returns its path, or ``None``."""
        score = _as_float(metrics, self.monitor)
        saved = None
        os.makedirs(self.dirpath, exist_ok=True)
        if self._qualifies(score):
            full = self.save_top_k != -1 and len(self.best_k_models) >= self.save_top_k
            dropped = self.kth_best_model_path if full else None
            saved = self._format(metrics, replacing=dropped)
            ember.save(checkpoint, saved)  # written (atomically) before anything is deleted
            if dropped is not None:
                del self.best_k_models[dropped]
                if dropped != saved:
                    self._remove(dropped)
            self.best_k_models[saved] = score
        if self.save_last:
            last = os.path.join(self.dirpath, "last.safetensors")
            ember.save(checkpoint, last)
            self.last_model_path = last
        self.steps += 1
        return saved

    @staticmethod
    def _remove(path):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass

    def state_dict(self) -> dict:
        """What to keep in a checkpoint to resume: the kept paths and scores, the last path, the step count."""
        return {"best_k_models": dict(self.best_k_models), "last_model_path": self.last_model_path,
                "steps": self.steps, "monitor": self.monitor, "mode": self.mode, "save_top_k": self.save_top_k}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.best_k_models = dict(state_dict["best_k_models"])
        self.last_model_path = state_dict.get("last_model_path")
        self.steps = state_dict.get("steps", 0)

    def __repr__(self):
        return (f"BestCheckpoints(dirpath={self.dirpath!r}, monitor={self.monitor!r}, mode={self.mode!r}, "
                f"save_top_k={self.save_top_k}, best_model_path={self.best_model_path!r})")


#: PyTorch Lightning's name for :class:`BestCheckpoints`
ModelCheckpoint = BestCheckpoints
