"""LRScheduler: the base of the epoch-driven schedulers (``last_epoch``, ``step``, ``get_last_lr``, state dicts)."""
from __future__ import annotations

import warnings

import ember

from ..optimizer import Optimizer, deep_copy

__all__ = ["LRScheduler"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please "
    "use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available.")


class LRScheduler:
    """Base class of the learning-rate schedulers: sets each group's ``lr`` as the epochs go by.

    A subclass implements ``get_lr()``: the learning rates for epoch
    ``last_epoch`` (usually from the groups' current ``lr``, PyTorch's
    chainable form), and may add ``_get_closed_form_lr()`` for
    ``step(epoch)``. Making a scheduler stores ``initial_lr`` in each group
    (unless resuming: ``last_epoch >= 0``) and takes the first step, to epoch 0.

    ``state_dict()`` holds every attribute but the optimizer; save the
    optimizer's state with it, and load the optimizer's after making the
    scheduler (making a scheduler sets the groups' ``lr``).

    >>> import ember
    >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> for epoch in range(5):
    ...     opt.step(); sched.step()
    ...     print(epoch, sched.get_last_lr())
    0 [1.0]
    1 [0.5]
    2 [0.5]
    3 [0.25]
    4 [0.25]
    """

    _is_initial = False
    _get_lr_called_within_step = False

    def __init__(self, optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy_value(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0.\nThis typically happens when:\n1. You're trying "
                                   "to resume training from a checkpoint but haven't properly loaded the optimizer "
                                   "state\n2. You're using last_epoch >= 0 for a fresh training run (not "
                                   "recommended)")
        self.base_lrs = group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def __ember_setstate__(self, state: dict) -> None:
        """Restore a scheduler ``ember.load`` made (without ``__init__``) from its saved attributes.

        >>> import io, ember
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.ones(1))], lr=1.0)
        >>> buf = io.BytesIO(); ember.save(ember.optim.lr_scheduler.StepLR(opt, 2), buf); _ = buf.seek(0)
        >>> ember.load(buf).step_size
        2
        """
        if not isinstance(state.get("optimizer"), Optimizer):
            raise TypeError(f"a scheduler needs its optimizer, got {state.get('optimizer')!r:.100}")
        self.__dict__.update(state)

    def _initial_step(self) -> None:
        """Start counting steps and take the first one (to ``last_epoch + 1``)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list:
        """The learning rates for ``last_epoch`` (called by ``step``; use :meth:`get_last_lr` to read them)."""
        raise NotImplementedError

    def get_last_lr(self) -> list:
        """The learning rates the last ``step`` set, one per parameter group."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Move to the next epoch (or, deprecated, to ``epoch``) and set the groups' learning rates.

        Call it after ``optimizer.step()``.
        """
        if self._step_count == 1:
            opt = self.optimizer
            if "step" in vars(opt) and not getattr(opt.step, "_hooked", False):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                              "initialization. Please, make sure to call `optimizer.step()` before "
                              "`lr_scheduler.step()`.", UserWarning, stacklevel=2)
            elif not getattr(opt, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. You should call "
                              "them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`. "
                              "Failure to do this will result in skipping the first value of the learning rate "
                              "schedule.", UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        groups = self.optimizer.param_groups
        if len(values) != len(groups):
            raise ValueError(f"{type(self).__name__} computed {len(values)} learning rates for {len(groups)} "
                             "parameter groups")
        for group, lr in zip(groups, values):
            set_group_value(group, "lr", lr)
        self._last_lr = group_values(self.optimizer, "lr")

    def _warn_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)

    def state_dict(self) -> dict:
        """Every attribute of the scheduler except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` returned (copied)."""
        self.__dict__.update(deep_copy(state_dict))


def _copy_value(value):
    return value.clone() if isinstance(value, ember.Tensor) else value


def group_values(optimizer, key: str) -> list:
    """``group[key]`` of each parameter group (tensors copied, so that they never alias the group's)."""
    return [_copy_value(group[key]) for group in optimizer.param_groups]


def set_group_value(group: dict, key: str, value) -> None:
    """Set ``group[key]``; a tensor-valued option is filled in place (its identity is kept)."""
    current = group[key]
    if isinstance(current, ember.Tensor):
        current.fill_(float(value))
    else:
        group[key] = value


def per_group(name: str, optimizer, value) -> list:
    """``value`` for each parameter group: a list or tuple (one per group) or one value for all."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has {len(value)} "
                             f"values, param_groups has {len(optimizer.param_groups)}.")
        return [_copy_value(v) for v in value]
    return [_copy_value(value)] * len(optimizer.param_groups)
