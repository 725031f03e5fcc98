"""Reading the memory's state: ``ember.memory.memory_summary`` (PyTorch's table) and ``plot_timeline``."""
from __future__ import annotations

import json
import os

from . import _alloc
from ._device import as_device
from ._oom import fmt_bytes

_WIDTH = 75  # between the outer bars, as PyTorch's table


def _size(n, unit_of) -> str:
    """``n`` bytes in the unit that suits ``unit_of`` bytes (a row's largest figure), 10 characters wide."""
    if n is None:
        return f"{'-':>10}"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if unit_of >= 4 * scale:
            return f"{n // scale:>6} {unit}"
    return f"{n:>6} B  "


def _count(n) -> str:
    return f"{'-' if n is None else n:>10}"


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A table of ``device``'s memory statistics, laid out as PyTorch's ``torch.cuda.memory_summary``: print it.

    Rows: allocated, active, requested and reserved memory (one figure here: ember caches nothing itself and
    asks for a tensor's exact bytes), and the number of allocations; columns: now, peak, total allocated and
    total freed. The totals and the allocation counts are known while :func:`record_memory_history` records
    (since it started), ``-`` otherwise. ``abbreviated`` is accepted for PyTorch's signature (the table is
    already short).

    >>> import ember
    >>> print(ember.memory.memory_summary())  # doctest: +ELLIPSIS
    |===...===|
    |...ember memory summary, device cpu:0...|
    ...
    | Allocated memory      | ...
    """
    dev = as_device(device)
    mem = dev.mem
    cur, peak = mem[0], mem[1]
    reserved = dev.backend.memory_reserved(dev)
    limit = _alloc.LIMITS.get(dev.key)
    history = _alloc.HISTORY
    totals = history.totals[dev.key] if history is not None else [None] * 4
    allocs_now = None if history is None else history.counts.get(dev.key, 0) + totals[2] - totals[3]
    name = f"{dev.type}:{dev.index or 0}"

    def bar(c="-"):
        return f"|{c * _WIDTH}|"

    def centred(text):
        return f"|{text:^{_WIDTH}}|"

    def halves(left, right):
        return f"|{left:^36}|{right:^38}|"

    def row(label, values, sizes=True):
        unit_of = max((v for v in values if v is not None), default=0)
        cells = [_size(v, unit_of) if sizes else _count(v) for v in values]
        return f"| {label:<22}|" + "|".join(f" {c} " for c in cells) + "|"

    lines = [bar("="), centred(f"ember memory summary, device {name}"), bar(),
             halves(f"OOMs: {_alloc.OOMS[dev.key]}", "alloc retries: 0"),
             halves(f"limit: {fmt_bytes(limit) if limit is not None else 'none'}",
                    f"history: {'recording' if history is not None else 'off'}"),
             bar("="), f"| {'Metric':^22}|" + "|".join(f" {h:^10} " for h in
                                                       ("Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed")) + "|",
             bar()]
    for label in ("Allocated memory", "Active memory", "Requested memory"):
        lines.append(row(label, [cur, peak, totals[0], totals[1]]))
    lines.append(row("Reserved memory", [reserved, None, None, None]))
    lines.append(bar())
    lines.append(row("Allocations", [allocs_now, None, totals[2], totals[3]], sizes=False))
    lines.append(bar("="))
    return "\n".join(lines)


def plot_timeline(snapshot, path, *, device=None, top: int = 5) -> None:
    """Draw the allocated bytes of ``device`` over the recorded time into the image file ``path`` (PNG, SVG,
    PDF: by its suffix), and name the ``top`` largest allocations on it (op, shape, dtype, user line).

    ``snapshot`` is :func:`memory_snapshot`'s dict or the path of a file :func:`dump_snapshot` wrote;
    ``device`` defaults to the one with the most events. Needs matplotlib (``pip install ember-core[plot]``).

    >>> import ember, os, tempfile
    >>> ember.memory.record_memory_history()
    >>> x = ember.ones(1000); y = x * 2; del x
    >>> path = os.path.join(tempfile.mkdtemp(), "timeline.png")
    >>> ember.memory.plot_timeline(ember.memory.memory_snapshot(), path)
    >>> ember.memory.record_memory_history(None)
    >>> os.path.getsize(path) > 1000
    True
    """
    try:
        from matplotlib.figure import Figure  # an optional dependency: imported only to draw
    except ImportError as exc:
        raise ImportError("plot_timeline needs matplotlib, which is not installed; install it with "
                          "`pip install ember-core[plot]` (or `pip install matplotlib`)") from exc
    if isinstance(snapshot, (str, os.PathLike)):
        with open(snapshot) as f:
            snapshot = json.load(f)
    if not isinstance(snapshot, dict) or "events" not in snapshot or "devices" not in snapshot:
        raise TypeError("plot_timeline expects ember.memory.memory_snapshot()'s dict or the path of a file that "
                        f"ember.memory.dump_snapshot() wrote, got {type(snapshot).__name__}")
    events = [e for e in snapshot["events"] if e["action"] in ("alloc", "free")]
    if device is None:
        names = [e["device"] for e in events]
        name = max(set(names), key=names.count) if names else "cpu:0"
    else:
        dev = as_device(device)
        name = f"{dev.type}:{dev.index or 0}"
    events = [e for e in events if e["device"] == name]
    level = snapshot["devices"].get(name, {}).get("base", 0)
    times, levels = [0.0], [level]
    for e in events:
        level += e["size"] if e["action"] == "alloc" else -e["size"]
        times.append(e["time"])
        levels.append(level)
    fig = Figure(figsize=(10, 5))
    ax = fig.subplots()
    scale, unit = next(((s, u) for s, u in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))
                        if max(levels) >= 4 * s), (1, "bytes"))
    ax.step(times, [v / scale for v in levels], where="post", color="tab:blue")
    ax.set_ylim(0, max(levels) / scale * 1.6 or 1)  # room above the curve for the labels
    ax.fill_between(times, [v / scale for v in levels], step="post", alpha=0.2, color="tab:blue")
    allocs = sorted((i for i, e in enumerate(events) if e["action"] == "alloc"), key=lambda i: -events[i]["size"])
    end = times[-1] or 1.0
    for rank, i in enumerate(sorted(allocs[:top], key=lambda i: times[i + 1])):
        e = events[i]
        where = f"\n{os.path.basename(e['frames'][0]['filename'])}:{e['frames'][0]['line']}" if e["frames"] else ""
        late = times[i + 1] > 0.6 * end  # label to the left, inside the axes
        # one row per label, from the top down, so that labels of nearby allocations do not overlap
        ax.annotate(f"{e['op'] or '?'} {e['shape']} {e['dtype']}{where}", (times[i + 1], levels[i + 1] / scale),
                    xytext=(times[i + 1], 0.97 - 0.1 * rank), textcoords=("data", "axes fraction"), fontsize=7,
                    ha="right" if late else "left", va="top", arrowprops={"arrowstyle": "-", "color": "gray"},
                    bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.8})
    ax.set_xlabel("seconds since recording started")
    ax.set_ylabel(f"allocated ({unit})")
    ax.set_title(f"ember memory timeline, {name} ({len(events)} events)")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.fspath(path))
