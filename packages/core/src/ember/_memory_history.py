"""The memory history (``ember.memory.record_memory_history`` and its snapshot), PyTorch's
``torch.cuda.memory._record_memory_history`` family for every backend.

While it records, each allocation and free of a tensor's memory is an event: action, bytes, device, the op
that ran, up to four Python frames of the user's code (ember's own frames left out) and the time. The
recording lives in ``ember._alloc``; this module switches it and gives it out.
"""
from __future__ import annotations

import collections
import gc
import json
import os
import tempfile

from . import _alloc
from ._device import _KEYS
from ._tensor import Tensor, record_frees

#: the default of ``max_entries``: about 30 MB of events
DEFAULT_MAX_ENTRIES = 100_000


def record_memory_history(enabled=True, max_entries: int = DEFAULT_MAX_ENTRIES, *, context=None, stacks=None,
                          device=None) -> None:
    """Start (``enabled`` True, ``"all"`` or ``"state"``) or stop (``None`` or False) recording every allocation
    and free, keeping the latest ``max_entries`` events. Starting again starts a fresh history.

    Also ``ember.memory._record_memory_history``, as PyTorch spells it; ``context``, ``stacks`` and ``device``
    are accepted for PyTorch's signature and change nothing (ember records the op and the user's frames on
    every device). Recording costs a few microseconds per allocation; stopped, nothing.

    >>> import ember
    >>> ember.memory.record_memory_history()
    >>> x = ember.ones(256)
    >>> [(e["action"], e["size"], e["op"]) for e in ember.memory.memory_snapshot()["events"]]
    [('alloc', 1024, 'ones')]
    >>> ember.memory.record_memory_history(None)
    """
    if enabled is None or enabled is False:
        if _alloc.HISTORY is not None:
            record_frees(False)
            _alloc.HISTORY.live.clear()  # frees are no longer seen: which tensors live is unknown from now on
            _alloc.HISTORY = None
            _refresh_all()
        return
    if enabled not in (True, "all", "state"):
        raise ValueError(f"record_memory_history: enabled must be True, 'all' or 'state' to record, None or False "
                         f"to stop; got {enabled!r}")
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
        raise ValueError(f"record_memory_history: max_entries must be a positive int, got {max_entries!r}")
    counts: collections.Counter = collections.Counter(
        o._device.key for o in gc.get_objects() if isinstance(o, Tensor) and getattr(o, "_nbytes", None))
    _alloc.HISTORY = _alloc.LAST = _alloc.History(max_entries, dict(counts))
    record_frees(True)
    _refresh_all()


def _refresh_all() -> None:
    for key in list(_KEYS):
        _alloc.refresh(key)


def memory_snapshot() -> dict:
    """The memory history as a dict of plain values (what :func:`dump_snapshot` writes as JSON).

    - ``events``: the latest events, oldest first, each ``{"action": "alloc" | "free" | "oom", "size": bytes,
      "device": "cpu:0", "op": name or None, "frames": [{"filename", "line", "name"}, ...] (innermost first),
      "time": seconds since recording started, "shape": list, "dtype": name}``; a free names the op, frames,
      shape and dtype of the allocation it gives back when that was recorded; ``"oom"`` is a refused
      allocation (it changes nothing);
    - ``tensors``: the allocation events of the tensors made while recording that still hold their memory
      (empty once recording stopped);
    - ``devices``: per device, ``allocated``, ``peak``, ``limit`` and ``base``: the bytes allocated before the
      first event kept, so that ``base`` plus the allocations minus the frees is ``allocated`` while recording;
    - ``recording``, ``started_at`` (a ``time.time()``), ``max_entries``.

    Without any recording, the events and tensors are empty.

    >>> import ember
    >>> sorted(ember.memory.memory_snapshot())
    ['devices', 'events', 'max_entries', 'recording', 'started_at', 'tensors']
    """
    history = _alloc.HISTORY or _alloc.LAST
    devices = {}
    for key, mem in list(_KEYS.items()):
        devices[_alloc.device_name(key)] = {
            "allocated": mem[0], "peak": mem[1], "limit": _alloc.LIMITS.get(key),
            "base": mem[0] if history is None else history.base.get(key, 0)}
    if history is None:
        return {"recording": False, "started_at": None, "max_entries": None, "events": [], "tensors": [],
                "devices": devices}
    start = history.start
    return {"recording": _alloc.HISTORY is not None, "started_at": history.started_at,
            "max_entries": history.events.maxlen,
            "events": [_alloc.event_dict(e, start) for e in list(history.events)],
            "tensors": [_alloc.event_dict(e, start) for e in list(history.live.values())],
            "devices": devices}


def dump_snapshot(path) -> None:
    """Write :func:`memory_snapshot` to ``path`` as JSON, atomically (a temporary file renamed over ``path``).

    ``ember.memory.plot_timeline(path, "timeline.png")`` draws it; any JSON tool reads it.

    >>> import ember, json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "snapshot.json")
    >>> ember.memory.dump_snapshot(path)
    >>> sorted(json.load(open(path)))[:2]
    ['devices', 'events']
    """
    path = os.fspath(path)
    snapshot = memory_snapshot()
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".snapshot-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(snapshot, f)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
