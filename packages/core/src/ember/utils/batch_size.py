"""``find_max_batch_size``: the largest batch size whose training step fits in memory, found by trying.

PyTorch has no such function (the usual advice is to try sizes by hand until the out-of-memory error goes
away); this one does the trying: it calls the step with doubling batch sizes until one raises
``ember.OutOfMemoryError``, then bisects between the last size that ran and the first that did not. Between
tries it frees what the failed try left behind (the error and its traceback's frames hold the try's tensors,
so they are dropped and cleared, then ``gc.collect()`` and ``empty_cache()`` run), so the process carries on
as if the failed try had never run. Any other exception from the step is raised at once, unchanged.

>>> import ember
>>> from ember.utils import find_max_batch_size
>>> def step(batch_size):  # stands for a training step on a device holding at most 37 rows
...     if batch_size > 37:
...         raise ember.OutOfMemoryError(f"a batch of {batch_size} does not fit")
...     x = ember.ones(batch_size, 1000)
>>> found = find_max_batch_size(step, max=1000)
>>> found.batch_size
37
>>> [size for size, ok, peak in found.tries]
[1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37]
"""
from __future__ import annotations

import gc
import traceback
import typing
import warnings

from .._device import as_device
from ..errors import OutOfMemoryError
from ..memory import empty_cache, max_memory_allocated, memory_allocated, reset_peak_memory_stats

__all__ = ["find_max_batch_size", "BatchSizeSearch", "Try"]


class Try(typing.NamedTuple):
    """One call of the step: the batch size, whether it ran, and the most bytes the device held during it."""
    size: int
    ok: bool
    peak_bytes: int


class BatchSizeSearch:
    """What :func:`find_max_batch_size` found: ``batch_size``, the largest size that ran, and ``tries``, every
    :class:`Try` in the order made. Its repr is a table of the tries."""

    def __init__(self, batch_size: int, tries: list[Try], device):
        self.batch_size, self.tries, self.device = batch_size, tries, device

    def __repr__(self):
        lines = [f"BatchSizeSearch(batch_size={self.batch_size}, device={self.device!r}, {len(self.tries)} tries)",
                 f"  {'size':>10}  {'result':<13} {'peak memory':>12}"]
        for size, ok, peak in self.tries:
            lines.append(f"  {size:>10}  {'ran' if ok else 'out of memory':<13} {_bytes(peak):>12}")
        return "\n".join(lines)


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = n / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def find_max_batch_size(step_fn, start: int = 1, max: int | None = None, device=None) -> BatchSizeSearch:
    """The largest batch size for which ``step_fn(batch_size)`` runs without ``ember.OutOfMemoryError``.

    ``step_fn`` runs one whole training step (forward, backward, optimizer step) on a batch of the given size,
    building that batch itself. Sizes double from ``start`` (``start``, ``2 * start``, ...) up to ``max``
    (inclusive; ``None``: no bound, so memory must be capped, as on a GPU or with a memory limit), until one runs
    out of memory; then the largest size that runs is found by bisection (``start`` itself may fail: sizes below
    it are tried then). The peak counts bytes held on ``device`` (default: the CPU), as
    ``ember.max_memory_allocated(device)`` after ``reset_peak_memory_stats(device)`` (this search resets the
    device's peak statistics). Returns a :class:`BatchSizeSearch`; raises ``ember.OutOfMemoryError`` when not
    even a batch of 1 fits.

    Each try is a real step: it updates the weights (and one cut short by the error may have updated some of
    them), so search before training, then reload the initial weights (or search on a copy of the model).

    >>> import ember
    >>> from ember.utils import find_max_batch_size
    >>> w = ember.randn(64, 64, requires_grad=True)
    >>> def step(batch_size):
    ...     loss = (ember.randn(batch_size, 64) @ w).relu().sum()
    ...     loss.backward()
    >>> find_max_batch_size(step, start=8, max=100)  # doctest: +ELLIPSIS
    BatchSizeSearch(batch_size=100, device=device(type='cpu'), 5 tries)
            size  result         peak memory
               8  ran                ...
             100  ran                ...
    """
    if not callable(step_fn):
        raise TypeError(f"find_max_batch_size: step_fn must be callable as step_fn(batch_size), got "
                        f"{type(step_fn).__name__}")
    if isinstance(start, bool) or not isinstance(start, int) or start < 1:
        raise ValueError(f"find_max_batch_size: start must be a positive int, got {start!r}")
    if max is not None and (isinstance(max, bool) or not isinstance(max, int) or max < start):
        raise ValueError(f"find_max_batch_size: max must be None or an int >= start ({start}), got {max!r}")
    device = as_device(device)
    tries: list[Try] = []
    ran, failed = 0, None  # the largest size known to run, the smallest known not to
    size = start
    while failed is None:
        if _try(step_fn, size, device, tries):
            ran = size
            if size == max:
                break
            size = 2 * size if max is None else min(2 * size, max)
        else:
            failed = size
    while failed is not None and failed - ran > 1:
        size = (ran + failed) // 2
        if _try(step_fn, size, device, tries):
            ran = size
        else:
            failed = size
    if ran == 0:
        raise OutOfMemoryError(f"find_max_batch_size: not even a batch of 1 fits on {device}; make the model or "
                               f"its inputs smaller, or see the tries: {tries}")
    return BatchSizeSearch(ran, tries, device)


def _try(step_fn, size: int, device, tries: list) -> bool:
    """Run ``step_fn(size)``; record the try; free what a failed try left. Whether it ran."""
    gc.collect()
    empty_cache(device)
    before = memory_allocated(device)
    reset_peak_memory_stats(device)
    try:
        step_fn(size)
        ok = True
    except OutOfMemoryError as exc:
        traceback.clear_frames(exc.__traceback__)  # the frames of the failed step hold its tensors
        ok = False
    peak = max_memory_allocated(device)
    tries.append(Try(size, ok, peak))
    if not ok:
        gc.collect()
        empty_cache(device)
        left = memory_allocated(device) - before
        if left > 0:
            warnings.warn(f"find_max_batch_size: {left} bytes allocated by the step that ran out of memory (batch "
                          f"size {size}) are still held: something outside the step keeps references to them "
                          "(a global list, a module attribute); later tries have less memory", RuntimeWarning,
                          stacklevel=3)
    return ok
