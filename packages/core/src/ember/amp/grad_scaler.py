"""``ember.amp.GradScaler``: dynamic loss scaling, so that small float16 gradients do not flush to zero.

The loss is multiplied by a scale before backward; before the optimizer steps, the gradients are divided by it
again (``unscale_``) and checked: if any holds inf or NaN, the step is skipped and the scale shrinks
(``backoff_factor``); after ``growth_interval`` steps in a row without one, it grows (``growth_factor``).

It lives in core, beside ``autocast``, as ``torch.amp.GradScaler`` does: it needs of an optimizer only what
every ember optimizer has (``param_groups``, a list of dicts whose ``"params"`` are tensors, and ``step()``),
so it takes optimizers duck-typed and core does not depend on ``ember.optim``.

>>> import ember
>>> w = ember.ones(2, requires_grad=True)
>>> opt = ember.optim.SGD([w], lr=0.1)
>>> scaler = ember.amp.GradScaler("cpu", init_scale=1024.0)
>>> scaler.scale((w * w).sum()).backward()
>>> w.grad  # scaled
tensor([2048., 2048.])
>>> scaler.step(opt)  # unscales to [2., 2.], finds no inf, steps
>>> scaler.update()
>>> w
tensor([0.8000, 0.8000], requires_grad=True)
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"
_FIX = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."


def _f32(x: float) -> float:
    """``x`` rounded to float32, the dtype PyTorch keeps the scale in."""
    return float(np.float32(x))


class GradScaler:
    """Scale the loss, unscale and check the gradients, skip steps with inf/NaN, and adapt the scale.

    The arguments and defaults are PyTorch's. ``device`` is the device type of the gradients (``"cpu"`` works,
    as in PyTorch). With ``enabled=False`` every method passes through (``scale`` returns its input, ``step``
    just steps). Where PyTorch asserts (a factor out of range, ``step`` before ``scale``), ember raises
    ``ValueError`` or ``RuntimeError`` with the same message.

    The usual loop, with gradient clipping on the true gradients::

        with ember.autocast("cpu"):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        ember.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)   # skipped (returns None) if a gradient holds inf or NaN
        scaler.update()
        optimizer.zero_grad()
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        if not isinstance(device, str):
            raise TypeError(f"GradScaler: expected device to be a device type string such as 'cpu', got "
                            f"{type(device).__name__}")
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
        if not isinstance(growth_interval, int) or growth_interval <= 0:
            raise ValueError(f"GradScaler: growth_interval must be a positive int, got {growth_interval!r}")
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        #: the scale (a float32 value) and the count of steps since the last inf; None until the first scale()
        self._scale: float | None = None
        self._growth_tracker: int | None = None
        #: id(optimizer) -> {"stage": ..., "found_inf_per_device": {device: 1.0 or 0.0}}
        self._per_optimizer_states: dict[int, dict] = {}

    # -- scaling --------------------------------------------------------------------------------------------
    def scale(self, outputs):
        """``outputs`` (a tensor, or lists/tuples of them, nested) multiplied by the scale, as float32."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = _f32(self._init_scale)
            self._growth_tracker = self._init_growth_tracker
        return self._scale_nested(outputs)

    def _scale_nested(self, value):
        if isinstance(value, Tensor):
            return value * self._scale_tensor(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self._scale_nested(v) for v in value)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _scale_tensor(self, like: Tensor) -> Tensor:
        """The scale as a 0-d float32 tensor on ``like``'s device (so a bfloat16 loss is scaled in float32)."""
        backend = like._device.backend
        return Tensor._make(backend.xp.asarray(self._scale, dtype=backend.native_dtype(dt.float32)), like._device,
                            dt.float32)

    def _state(self, optimizer) -> dict:
        return self._per_optimizer_states.setdefault(id(optimizer), {"stage": _READY, "found_inf_per_device": {}})

    def _check_started(self, what: str) -> None:
        if self._scale is None:
            raise RuntimeError(f"Attempted {what} but _scale is None.  " + _FIX)

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place and note whether any holds inf or NaN.

        Call it at most once per optimizer between ``update()`` calls, before clipping gradients; ``step``
        calls it when it was not called.
        """
        if not self._enabled:
            return
        self._check_started("unscale_")
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        assert self._scale is not None
        inv_scale = _f32(1.0 / np.float64(self._scale))
        found: dict = {}
        with no_grad():
            for group in _param_groups(optimizer):
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g._dtype is dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    bad = not bool(g.isfinite().all())
                    found[g._device] = max(found.get(g._device, 0.0), 1.0 if bad else 0.0)
                    if inv_scale != 1.0:
                        g.mul_(inv_scale)
        state["found_inf_per_device"] = found
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` on unscaled gradients, unless one holds inf or NaN (then None)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_started("step")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise RuntimeError("No inf checks were recorded for this optimizer: none of its parameters has a "
                               "gradient (did backward run on the scaled loss?)")
        retval = None
        if not sum(state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Adapt the scale after the iteration's steps: back off after an inf/NaN, grow after
        ``growth_interval`` clean steps in a row; or set it to ``new_scale`` (a float or a 1-element tensor)."""
        if not self._enabled:
            return
        self._check_started("update")
        assert self._growth_tracker is not None
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1 or new_scale.requires_grad or new_scale.device.type != self._device:
                    raise ValueError(f"new_scale should be a float or a 1-element float tensor on "
                                     f"{self._device!r} with requires_grad=False, got shape "
                                     f"{list(new_scale.shape)} on {new_scale.device}")
                new_scale = new_scale.item()
            if not isinstance(new_scale, (int, float)):
                raise TypeError(f"new_scale should be a float or a 1-element tensor, got {type(new_scale).__name__}")
            self._scale = _f32(new_scale)
        else:
            found = [v for s in self._per_optimizer_states.values() for v in s["found_inf_per_device"].values()]
            if not found:
                raise RuntimeError("No inf checks were recorded prior to update.")
            if sum(found):
                self._scale = _f32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = _f32(self._scale * self._growth_factor)
                    if np.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
        self._per_optimizer_states = {}

    # -- reading and setting ---------------------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale (``init_scale`` before the first ``scale()``; 1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """The scale, factors, interval and growth tracker (``{}`` when disabled), for ``ember.save``.

        >>> import ember
        >>> ember.amp.GradScaler("cpu", init_scale=8.0).state_dict()["scale"]
        8.0
        """
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        missing = {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} - set(state_dict)
        if missing:
            raise KeyError(f"GradScaler.load_state_dict: the state dict lacks {sorted(missing)}")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = _f32(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = self._init_growth_tracker


def _param_groups(optimizer) -> list:
    groups = getattr(optimizer, "param_groups", None)
    if not isinstance(groups, list):
        raise TypeError(f"GradScaler: expected an optimizer with a param_groups list (as ember.optim's), got "
                        f"{type(optimizer).__name__}")
    return groups
