"""The flat-buffer path of ``foreach=True`` / ``fused=True``: a group's state in one contiguous buffer per name.

The parameters of a group that share a device and dtype (and, for Adam, a step count) have their arrays and
their state tensors (``'exp_avg'``, ``'momentum_buffer'``, ...) made views of one flat buffer each, so a step
gathers the gradients into one flat scratch array and runs the update once over the flat arrays: a plugin's
compiled kernel, or the per-parameter NumPy update itself. The update is elementwise and does the same
operations in the same order and precision as the per-parameter one, so the results are bit-identical.
Parameters whose state is not made yet (SGD's momentum buffer on its first step) go through the per-parameter
update; a batch is made anew when its parameters, their arrays or their state tensors change.
"""
from __future__ import annotations

import numpy as np

from ember._sibling_api import array, cpu_kernel, from_array

__all__ = ["FlatBatch", "check_fused", "flat_batches", "flat_kernel", "kernel_for", "uses_flat"]

#: flat arrays from this many elements go to a plugin's compiled update (hook ``ember_cpu_kernels``), if any
KERNEL_MIN = 1 << 12


def flat_kernel(name: str, flat):
    """The plugin kernel ``name`` (e.g. ember-numba's ``"adam_update"``) for the flat array ``flat``, or None:
    the NumPy update then (small arrays, no plugin)."""
    return cpu_kernel(name, flat.size, KERNEL_MIN)


def kernel_for(name: str, *arrays):
    """The plugin kernel ``name`` for one parameter's ``arrays`` taken flat (``None`` entries aside), where they are
    C-contiguous float32 or float64 NumPy arrays of one dtype and size, else None: a parameter's own update then
    runs in one compiled pass too, as a flat batch's does."""
    first = arrays[0]
    if first.size < KERNEL_MIN:  # the common small parameter: NumPy, decided at once
        return None
    for a in arrays:
        if a is not None and (type(a) is not np.ndarray or a.dtype != first.dtype or a.size != first.size
                              or not a.flags.c_contiguous):
            return None
    return flat_kernel(name, first) if first.dtype in (np.float32, np.float64) else None


def uses_flat(group: dict) -> bool:
    """Whether ``group`` asked for the flat update (``fused=True`` or ``foreach=True``)."""
    return bool(group.get("fused") or group.get("foreach"))


def check_fused(params) -> None:
    """PyTorch's errors for ``fused=True`` on what it cannot take: parameters off the CPU or not floating."""
    for p in params:
        if p.device.type != "cpu":
            raise RuntimeError(f"`fused=True` requires all the params to be floating point Tensors on the CPU in "
                               f"ember, but a param is on {p.device}")
        if not p.dtype.is_floating_point:
            raise RuntimeError(f"`fused=True` requires all the params to be floating point Tensors, got {p.dtype}")


class FlatBatch:
    """One device and dtype's parameters of a group, their arrays and their state views of flat buffers.

    ``buffers[name]`` is the flat array behind every parameter's ``state[name]``;
    ``params_flat`` the one behind the parameters themselves (each made a view of
    it with ``p.data = ...`` when the batch is made, so that the update writes the
    parameters in place); ``grads_flat()`` gathers the gradients into a flat
    scratch array.
    """

    __slots__ = ("params", "buffers", "tensors", "offsets", "params_flat", "_arrays", "_g")

    def __init__(self, params: list, state: dict, names: tuple):
        self.params = params
        self.offsets = np.cumsum([0] + [p.numel() for p in params])
        self.params_flat = self._relocate(params, [array(p) for p in params])
        for p, view in zip(params, self._views(self.params_flat)):
            p.data = from_array(view, p.device, p.dtype)
        self._arrays = [array(p) for p in params]
        self.buffers, self.tensors = {}, {}
        for name in names:
            self.buffers[name] = self._relocate(params, [array(state[p][name]) for p in params])
            self.tensors[name] = [from_array(view, p.device, p.dtype)
                                  for p, view in zip(params, self._views(self.buffers[name]))]
            for p, t in zip(params, self.tensors[name]):
                state[p][name] = t
        self._g = np.empty_like(self.params_flat)

    def _views(self, flat) -> list:
        o = self.offsets
        return [flat[o[i]:o[i + 1]].reshape(array(p).shape) for i, p in enumerate(self.params)]

    def _relocate(self, params, arrays) -> np.ndarray:
        """A new flat array holding ``arrays`` one after the other."""
        flat = np.empty(int(self.offsets[-1]), dtype=arrays[0].dtype)
        return self._gather(flat, arrays)

    def matches(self, params: list, state: dict) -> bool:
        """Whether this batch still holds exactly ``params``, their arrays (``p.data = ...`` replaces them) and
        their state tensors (load_state_dict replaces them)."""
        if len(params) != len(self.params) or any(a is not b for a, b in zip(params, self.params)):
            return False
        if any(array(p) is not a for p, a in zip(params, self._arrays)):
            return False
        return all(state[p].get(name) is views[i] for name, views in self.tensors.items()
                   for i, p in enumerate(params))

    def grads_flat(self) -> np.ndarray:
        """The gradients gathered into one flat scratch array."""
        return self._gather(self._g, [array(p.grad) for p in self.params])

    def _gather(self, out, arrays):
        o = self.offsets
        for i, a in enumerate(arrays):
            out[o[i]:o[i + 1]] = a.reshape(-1)
        return out


def flat_batches(opt, group_index: int, params: list, names: tuple, kind=None) -> tuple[list, list]:
    """``(batches, rest)``: the flat batches of ``params`` (each parameter's state holding every one of
    ``names``) per device, dtype and ``kind(p)`` if given (such as Adam's step count), cached on ``opt``, and
    the parameters left to the per-parameter update."""
    cache = opt.__dict__.setdefault("_flat_batches", {})
    by_kind: dict = {}
    rest = []
    for p in params:
        state = opt.state.get(p)
        if (names and (not state or any(state.get(name) is None for name in names))
                or not isinstance(array(p), np.ndarray)):
            rest.append(p)
        else:
            by_kind.setdefault((str(p.device), p.dtype, None if kind is None else kind(p)), []).append(p)
    batches, fresh = [], {}
    for (device, dtype, _), members in by_kind.items():
        key = (group_index, device, dtype)  # the step count changes every step: not part of the key
        batch = next((b for b in cache.get(key, ()) if b.matches(members, opt.state)), None)
        batch = batch or FlatBatch(members, opt.state, names)
        fresh.setdefault(key, []).append(batch)
        batches.append(batch)
    cache.update(fresh)  # batches no longer in use go
    return batches, rest
