"""OneCycleLR: the 1cycle policy (Smith and Topin), stepped once per batch."""
from __future__ import annotations

import math

from ..optimizer import Optimizer
from .base import LRScheduler, per_group

__all__ = ["OneCycleLR"]


class OneCycleLR(LRScheduler):
    """Warm the learning rate up from ``max_lr / div_factor`` to ``max_lr``, then anneal it down to
    ``initial_lr / final_div_factor`` over ``total_steps`` (or ``epochs * steps_per_epoch``) steps.

    The warm-up takes the first ``pct_start`` of the steps; ``anneal_strategy``
    is ``'cos'`` or ``'linear'``. ``three_phase=True`` comes back down to the
    initial rate symmetrically before the final annealing. With
    ``cycle_momentum`` the momentum (or Adam's ``beta1``) moves the other way,
    between ``max_momentum`` and ``base_momentum``. Step it after every batch;
    stepping past ``total_steps`` is an error.

    >>> import ember
    >>> opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    >>> sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy='linear')
    >>> lrs, momenta = [sched.get_last_lr()[0]], [opt.param_groups[0]['momentum']]
    >>> for _ in range(9):
    ...     opt.step(); sched.step()
    ...     lrs.append(round(sched.get_last_lr()[0], 4)); momenta.append(round(opt.param_groups[0]['momentum'], 4))
    >>> lrs  # up from 1.0 / 25 to 1.0 until step 0.3 * 10 - 1 = 2, then down to 0.04 / 1e4
    [0.04, 0.52, 1.0, 0.8571, 0.7143, 0.5714, 0.4286, 0.2857, 0.1429, 0.0]
    >>> momenta
    [0.95, 0.9, 0.85, 0.8643, 0.8786, 0.8929, 0.9071, 0.9214, 0.9357, 0.95]
    """

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = _phases(self.total_steps, pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                tops = per_group("max_momentum", optimizer, max_momentum)
                bases = per_group("base_momentum", optimizer, base_momentum)
                for top, base, group in zip(tops, bases, optimizer.param_groups):
                    self._set_momentum(group, top)
                    group["max_momentum"] = top
                    group["base_momentum"] = base
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict, value) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        self._warn_outside_step()
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step <= end_step or i == last:
                    pct = (step - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[phase["start_momentum"]],
                                                               group[phase["end_momentum"]], pct))
                    break
                start_step = end_step
        return lrs


def _total_steps(total_steps, epochs, steps_per_epoch) -> int:
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is not None and steps_per_epoch is not None:
        if not isinstance(epochs, int) or epochs <= 0:
            raise ValueError(f"Expected positive integer epochs, but got {epochs}")
        if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
            raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
        return epochs * steps_per_epoch
    raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")


def _phase(end_step, start_lr, end_lr, start_momentum, end_momentum) -> dict:
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr, "start_momentum": start_momentum,
            "end_momentum": end_momentum}


def _phases(total_steps: int, pct_start: float, three_phase: bool) -> list:
    """The schedule's phases: where each ends and which group keys hold its start and end values."""
    warm_up = _phase(float(pct_start * total_steps) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum")
    if three_phase:
        return [warm_up,
                _phase(float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                       "max_momentum"),
                _phase(total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
    return [warm_up, _phase(total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
