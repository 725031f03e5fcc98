"""TBXLoggerCallback: TensorBoard event files per trial, through tensorboardX (extra ``ember-tune[tensorboard]``).

>>> from ember import tune
>>> run_config = tune.RunConfig(callbacks=[tune.TBXLoggerCallback()])  # doctest: +SKIP

Each trial's folder gets an event file: every numeric result key (flattened with "/") as a scalar
``tune/<key>`` at step ``training_iteration``, and, when the trial ends, its configuration and last
metrics as TensorBoard hyperparameters (the HPARAMS tab compares trials). Point TensorBoard at the
experiment's folder: ``tensorboard --logdir ~/ember_results/<name>``.
"""
from __future__ import annotations

from .cells import flatten, numbers
from .loggers import LoggerCallback


class TBXLoggerCallback(LoggerCallback):
    """Writes TensorBoard events in each trial's folder. ``flush_secs``: how often the writer flushes."""

    def __init__(self, flush_secs: float = 10):
        try:
            import tensorboardX  # noqa: F401
        except ImportError:
            raise ImportError("TBXLoggerCallback needs tensorboardX: pip install 'ember-tune[tensorboard]'") from None
        self.flush_secs = flush_secs
        self._writers: dict = {}

    def log_trial_start(self, trial):
        if trial.trial_dir is not None and trial.trial_id not in self._writers:
            from tensorboardX import SummaryWriter
            self._writers[trial.trial_id] = SummaryWriter(trial.trial_dir, flush_secs=self.flush_secs)

    def log_trial_result(self, iteration, trial, result):
        writer = self._writers.get(trial.trial_id)
        if writer is None:
            return
        step = result.get("training_iteration", 0)
        for key, value in numbers(result).items():
            writer.add_scalar(f"tune/{key}", value, global_step=step)

    def log_trial_end(self, trial, failed=False):
        writer = self._writers.pop(trial.trial_id, None)
        if writer is None:
            return
        hparams_dict = {k: v if isinstance(v, (int, float, str, bool)) else str(v)
                        for k, v in flatten(trial.config).items()}
        metrics = {f"tune/{k}": v for k, v in numbers(trial.last_result or {}).items()}
        from tensorboardX.summary import hparams  # the HPARAMS tab's records, without repeating the scalars
        for summary in hparams(hparams_dict, metrics):
            writer._get_file_writer().add_summary(summary)
        writer.close()

    def on_experiment_end(self, trials, **info):
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
