"""Allocation tracking past the two counters: per-device memory limits, the memory history, who made a tensor.

``device.mem`` is ``[allocated, peak, threshold]``, one list per device (``'cpu'`` and ``'cpu:0'`` share it).
``Tensor._make`` adds a new tensor's bytes to ``allocated`` and calls :func:`grew` only when the sum passes
``threshold``, which is the peak while nothing else watches (a new peak is then recorded), the limit when one is
set below the peak, and -1 while the memory history records (every allocation then comes here). So a program
without a limit or history pays one comparison per tensor, as it did for the peak alone.

Frees reach the history through :func:`freed`: ``ember.memory`` swaps ``Tensor.__del__`` for a recording one
while the history is on, so that the plain one stays as cheap as before.
"""
from __future__ import annotations

import collections
import math
import re
import sys
import time
from types import FrameType

from . import _oom
from ._device import _KEYS
from ._dtype import from_numpy_dtype
from .errors import OutOfMemoryError

#: device key -> the most bytes its tensors may hold (``ember.memory.set_memory_limit``)
LIMITS: dict = {}
#: device key -> how many allocations failed with OutOfMemoryError
OOMS: collections.Counter = collections.Counter()
#: the recording history while ``ember.memory.record_memory_history`` is on, else None
HISTORY: History | None = None
#: the latest history, kept after recording stops so that its snapshot can still be taken
LAST: History | None = None
#: ember.Tensor, set by ember._tensor (which imports this module): the gc scan of an OOM report looks for it
tensor_type: type = type(None)
#: how many of the latest events an OutOfMemoryError carries while the history is on
OOM_EVENTS = 10


def refresh(key) -> None:
    """Set ``key``'s threshold after its peak, limit or the history changed (see the module docstring)."""
    mem = _KEYS[key]
    limit = LIMITS.get(key)
    if HISTORY is not None:
        mem[2] = -1
    else:
        mem[2] = mem[1] if limit is None or limit > mem[1] else limit


def grew(t, n: int, device) -> None:
    """Called by ``Tensor._make`` once ``t``'s ``n`` bytes took ``device``'s allocated bytes past its threshold:
    refuse them past the limit (undoing the count), else record the peak and the history's event."""
    mem = device.mem
    now = mem[0]
    limit = LIMITS.get(device.key)
    if limit is not None and now > limit:
        mem[0] = now - n
        t._nbytes = 0  # its __del__ gives nothing back
        if HISTORY is not None:
            HISTORY.add(("oom", n, device.key) + origin() + (time.perf_counter(), t._data.shape, t._dtype.name))
        raise out_of_memory(device, n, tuple(t._data.shape), t._dtype,
                            f"it would take {device}'s tensors past the memory limit of {_oom.fmt_bytes(limit)}")
    if now > mem[1]:
        mem[1] = now
    if HISTORY is not None:
        HISTORY.alloc(t, n, device)
        mem[2] = -1  # a device first used while recording
    else:
        mem[2] = mem[1] if limit is None or limit > mem[1] else limit


def freed(t, n: int, device) -> None:
    """``n`` bytes of ``device`` went back (``t``: the tensor that held them, or None): an event for the history."""
    history = HISTORY
    if history is not None:
        history.free(t, n, device)


def check_request(device, shape, dtype) -> None:
    """Raise OutOfMemoryError before allocating ``shape`` of ``dtype`` on ``device`` if it would pass the limit."""
    limit = LIMITS.get(device.key)
    if limit is not None:
        n = math.prod(shape) * dtype.itemsize
        if device.mem[0] + n > limit:
            raise out_of_memory(device, n, tuple(shape), dtype,
                                f"it would take {device}'s tensors past the memory limit of {_oom.fmt_bytes(limit)}")


_ALLOCATING = re.compile(r"allocating ([\d,]+) bytes")


def from_memory_error(exc: MemoryError, device, shape=None, dtype=None) -> OutOfMemoryError:
    """The OutOfMemoryError for a backend's ``MemoryError`` (NumPy's ``Unable to allocate ...`` names its
    shape and dtype); raise it ``from exc``."""
    shape = getattr(exc, "shape", shape)
    native = getattr(exc, "dtype", None)
    n = getattr(exc, "_total_size", None)
    if n is None and shape is not None and dtype is not None:
        n = math.prod(shape) * dtype.itemsize
    if n is None:  # CuPy's OutOfMemoryError says only "Out of memory allocating 1,024 bytes (...)"
        said = _ALLOCATING.search(str(exc))
        n = None if said is None else int(said.group(1).replace(",", ""))
    if dtype is None and native is not None:
        dtype = from_numpy_dtype(native) or native
    return out_of_memory(device, n, None if shape is None else tuple(shape), dtype,
                         f"the {device.type} backend could not allocate it ({exc})")


def out_of_memory(device, n, shape, dtype, cause: str) -> OutOfMemoryError:
    """The OutOfMemoryError report for ``n`` bytes of ``shape`` and ``dtype`` that ``device`` refused."""
    OOMS[device.key] += 1
    op, frames = origin()
    history = HISTORY
    events = [] if history is None else [event_dict(e, history.start) for e in list(history.events)[-OOM_EVENTS:]]
    return _oom.build(device=device, requested=n, shape=shape, dtype=dtype, op=op, frames=frames, cause=cause,
                      limit=LIMITS.get(device.key), tensor_type=tensor_type, events=events,
                      origin_of=None if history is None else history.live.get)


# -- where an allocation comes from --------------------------------------------------------------------------------
#: how many user frames an event keeps
FRAMES = 4
_OWN, _own = _oom.OWN, _oom.own
#: the classmethods that run an op (``Op.apply`` and its one- and two-input paths, ``Function.apply``)
_APPLY = frozenset(("apply", "apply1", "apply2"))


def origin() -> tuple:
    """``(op, frames)`` of the allocation under way: the innermost op being applied (its ``name_``, or its
    backward node's name, as ``MmBackward0``, in backward; else the ember function the user called) and up to
    :data:`FRAMES` user frames ``(code, instruction offset)``, innermost first (``_oom.frame_dicts`` reads them)."""
    f: FrameType | None = sys._getframe(1)
    op = entry = None
    frames: list = []
    while f is not None:
        code = f.f_code
        hit = _OWN.get(id(code))
        if hit is not None and hit[0] is code:
            mine = hit[1]
        else:
            mine = _own(code)
        if mine:
            if not frames:
                if op is None:
                    name = code.co_name
                    if name in _APPLY:
                        cls = f.f_locals.get("cls")  # Op.apply(1, 2) and Function.apply are classmethods
                        op = getattr(cls, "name_", None) or getattr(cls, "__name__", None)
                    elif name == "apply_backward":  # a backward graph node (Node.apply_backward)
                        op = getattr(f.f_locals.get("self"), "backward_name", None)
                name = getattr(code, "co_qualname", code.co_name)  # Python 3.11+ has the class in it
                if "<locals>" not in name:  # a decorator's wrapper says less than what it wraps
                    entry = name
        else:
            frames.append((code, f.f_lasti))  # the line is looked up when read (_oom.where)
            if len(frames) == FRAMES:
                break
        f = f.f_back
    return op or entry, tuple(frames)


# -- the history ---------------------------------------------------------------------------------------------------
#: an event: (action, bytes, device key, op, frames, perf_counter time, shape, dtype name); action is "alloc",
#: "free" or "oom" (a refused allocation, which changes nothing)
_ACTION, _SIZE, _KEY = 0, 1, 2
_now = time.perf_counter


class History:
    """The events since recording started (the latest ``max_entries``) and the live tensors they made."""

    __slots__ = ("events", "live", "base", "counts", "start", "started_at", "totals")

    def __init__(self, max_entries: int, counts: dict):
        self.events: collections.deque = collections.deque(maxlen=max_entries)
        #: id(tensor) -> the event that made it, for tensors made since recording started that still hold bytes
        self.live: dict = {}
        #: device key -> bytes allocated before the first kept event (what the events add up from)
        self.base = {key: mem[0] for key, mem in _KEYS.items()}
        #: device key -> tensors holding bytes when recording started
        self.counts = counts
        self.start = time.perf_counter()
        self.started_at = time.time()
        #: device key -> [bytes allocated, bytes freed, allocations, frees] since recording started
        self.totals: dict = collections.defaultdict(lambda: [0, 0, 0, 0])

    def add(self, event) -> None:
        events = self.events
        if len(events) == events.maxlen:
            self._drop_oldest()
        events.append(event)

    def _drop_oldest(self) -> None:
        """The oldest event drops out of the full deque: what it changed moves into the base."""
        old = self.events[0]
        sign = 1 if old[_ACTION] == "alloc" else -1 if old[_ACTION] == "free" else 0
        self.base[old[_KEY]] = self.base.get(old[_KEY], 0) + sign * old[_SIZE]

    def alloc(self, t, n: int, device) -> None:
        if n:
            key = device.key
            op, frames = origin()
            event = ("alloc", n, key, op, frames, _now(), t._data.shape, t._dtype.name)
            self.live[id(t)] = event
            events = self.events
            if len(events) == events.maxlen:
                self._drop_oldest()
            events.append(event)
            totals = self.totals[key]
            totals[0] += n
            totals[2] += 1

    def moved(self, source, holder) -> None:
        """``holder`` now counts the bytes that ``source`` counted (``Tensor._count_memory_of``)."""
        made = self.live.pop(id(source), None)
        if made is not None:
            self.live[id(holder)] = made

    def free(self, t, n: int, device) -> None:
        made = None if t is None else self.live.pop(id(t), None)
        if n:
            key = device.key
            if made is None:
                self.add(("free", n, key, None, (), _now(), None, None))
            else:  # the op, frames, shape and dtype of the allocation say which tensor went
                self.add(("free", n, key, made[3], made[4], _now(), made[6], made[7]))
            totals = self.totals[key]
            totals[1] += n
            totals[3] += 1


def device_name(key) -> str:
    return f"{key[0]}:{key[1]}"


def event_dict(e, start: float) -> dict:
    """An event as the snapshot gives it, its time in seconds since ``start`` (when recording started)."""
    return {"action": e[0], "size": e[1], "device": device_name(e[2]), "op": e[3],
            "frames": _oom.frame_dicts(e[4]),
            "time": e[5] - start, "shape": None if e[6] is None else list(e[6]), "dtype": e[7]}
