"""The report of an ``OutOfMemoryError``: what was asked, what the device holds, and what usually helps.

Everything here runs only when an allocation has failed: it scans the live objects (``gc.get_objects``) for
tensors and walks their autograd graphs, which costs milliseconds, never a program that fits.
"""
from __future__ import annotations

import gc
import inspect
import os
import sys
from types import FrameType

import ember as _pkg  # for its __path__: the folders of every ember distribution, whose frames are ember's own

from .errors import OutOfMemoryError

#: how many of the largest live tensors a report lists
TOP = 5
_CO_OPTIMIZED = inspect.CO_OPTIMIZED
_DIRS = tuple(os.path.join(os.path.abspath(p), "") for p in _pkg.__path__)
#: id(code object) -> (the code object, whether it is ember's own: its file lies in an ember distribution); by
#: identity, since hashing a code object hashes its whole contents
OWN: dict = {}
_LINES: dict = {}  # (id(code), instruction offset) -> (code, (filename, line, function))


def own(code) -> bool:
    """Whether a frame running ``code`` is ember's own rather than the user's."""
    hit = OWN.get(id(code))
    if hit is None or hit[0] is not code:
        hit = OWN[id(code)] = (code, code.co_filename.startswith(_DIRS))
    return hit[1]


def where(code, offset: int) -> tuple:
    """``(filename, line, function)`` of the instruction at byte ``offset`` of ``code`` (a frame's ``f_lasti``).

    The memory history keeps ``(code, offset)`` and asks here only when it is read: a frame's ``f_lineno``
    searches the code's line table, which would cost each recorded allocation about a microsecond.
    """
    hit = _LINES.get((id(code), offset))
    if hit is None or hit[0] is not code:
        line = next((ln for start, end, ln in code.co_lines() if start <= offset < end), None)
        hit = _LINES[(id(code), offset)] = (code, (code.co_filename, line or code.co_firstlineno, code.co_name))
    return hit[1]


def frame_dicts(frames) -> list:
    """The ``(code, offset)`` frames of a history event as ``[{"filename", "line", "name"}, ...]``."""
    dicts = []
    for code, offset in frames:
        filename, line, name = where(code, offset)
        dicts.append({"filename": filename, "line": line, "name": name})
    return dicts


def fmt_bytes(n) -> str:
    """``n`` bytes as PyTorch writes them in its messages.

    >>> fmt_bytes(20 * 2**20), fmt_bytes(512)
    ('20.00 MiB', '512 bytes')
    """
    if n is None:
        return "an unknown number of bytes"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} bytes"


def build(*, device, requested, shape, dtype, op, frames, cause, limit, tensor_type, events, origin_of):
    """The OutOfMemoryError for ``requested`` bytes that ``device`` refused (see ``ember._alloc.out_of_memory``)."""
    # a tensor half made when something failed has no _nbytes (or even _device) yet
    tensors = [o for o in gc.get_objects() if isinstance(o, tensor_type) and hasattr(o, "_nbytes")]
    key = device.key
    owners = sorted((t for t in tensors if t._nbytes and t._device.key == key), key=lambda t: t._nbytes,
                    reverse=True)[:TOP]
    names = _names(owners)
    top = []
    for t in owners:
        made = None if origin_of is None else origin_of(id(t))
        top.append({"shape": tuple(t._data.shape), "dtype": t._dtype, "bytes": t._nbytes, "names": names[id(t)],
                    "op": None if made is None else made[3],
                    "frames": [] if made is None else frame_dicts(made[4])})
    mem = device.mem
    try:
        reserved = device.backend.memory_reserved(device)
    except Exception:  # a failing backend must not hide the report
        reserved = None
    facts = {"requested_bytes": requested, "shape": shape, "dtype": dtype, "op": op, "device": device,
             "allocated": mem[0], "reserved": reserved, "peak": mem[1], "limit": limit, "top_tensors": top,
             "saved_bytes": _saved_bytes(tensors, key), "history": events}
    del tensors, owners
    return OutOfMemoryError(_message(facts, frames, cause, origin_of is not None), **facts)


def _names(tensors) -> dict:
    """``{id(tensor): [names]}``: the variables of the calling (non-ember) frames bound to each tensor."""
    found: dict = {id(t): [] for t in tensors}
    if not tensors:
        return found
    f: FrameType | None = sys._getframe(1)
    seen = 0
    while f is not None and seen < 20:
        if not own(f.f_code):
            seen += 1
            variables = f.f_locals
            for name, value in variables.items():
                names = found.get(id(value))
                if names is not None and name not in names and any(value is t for t in tensors):
                    names.append(name)
            if f.f_code.co_flags & _CO_OPTIMIZED and sys.version_info < (3, 13):
                # before Python 3.13 this dict is a copy the frame keeps: it would keep the frame's tensors
                # alive after the function dels them
                variables.clear()
        f = f.f_back
    return found


def _saved_bytes(tensors, key) -> int:
    """Bytes of ``key``'s storages that the autograd graphs of live tensors keep for backward (each once)."""
    seen_nodes: set = set()
    storages: dict = {}
    held = 0
    stack = [t.grad_fn for t in tensors if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        stack.extend(fn for fn, _ in node.next_functions)
        if node._freed:
            continue
        for s in node._saved:
            if hasattr(s, "_nbytes") and s._device.key == key:
                owner = s._base if s._base is not None else s
                storages[id(owner)] = owner._data.size * owner._dtype.itemsize
        out_held = node.__dict__.get("_out_held")
        if out_held is not None and out_held.device.key == key:
            held += sum(nbytes for _ref, nbytes, _data in out_held.held)
    return sum(storages.values()) + held


def _message(facts, frames, cause, history_on) -> str:
    d = facts["device"]
    what = []
    if facts["shape"] is not None:
        what.append(f"shape {list(facts['shape'])}")
    if facts["dtype"] is not None:
        what.append(str(facts["dtype"]).replace("ember.", ""))
    place = f" in op '{facts['op']}'" if facts["op"] else ""
    if frames:
        filename, line, name = where(*frames[0])
        place += f" at {filename}:{line} ({name})"
    lines = [f"{d}: out of memory: tried to allocate {fmt_bytes(facts['requested_bytes'])}"
             f"{' (' + ', '.join(what) + ')' if what else ''}{place}: {cause}.",
             f"The device holds {fmt_bytes(facts['allocated'])} in tensors (reserved {fmt_bytes(facts['reserved'])}, "
             f"peak {fmt_bytes(facts['peak'])}, limit "
             f"{fmt_bytes(facts['limit']) if facts['limit'] is not None else 'none set'}); autograd keeps "
             f"{fmt_bytes(facts['saved_bytes'])} for backward (the weights and activations its graphs hold, arrays a "
             "graph kept after their tensors went included)."]
    if facts["top_tensors"]:
        lines.append("Largest live tensors:")
        for t in facts["top_tensors"]:
            desc = f"  {fmt_bytes(t['bytes']):>12}  {list(t['shape'])} {str(t['dtype']).replace('ember.', '')}"
            if t["names"]:
                desc += f"  named {', '.join(t['names'])}"
            if t["op"]:
                desc += f"  made by '{t['op']}'"
            if t["frames"]:
                desc += f" at {t['frames'][0]['filename']}:{t['frames'][0]['line']}"
            lines.append(desc)
        if not history_on:
            lines.append("  (ember.memory.record_memory_history() records the op and line that made each tensor)")
    if facts["history"]:
        lines.append(f"Last {len(facts['history'])} memory events (oldest first):")
        for e in facts["history"]:
            at = f" at {e['frames'][0]['filename']}:{e['frames'][0]['line']}" if e["frames"] else ""
            lines.append(f"  {e['action']:>5} {fmt_bytes(e['size']):>12}  {e['op'] or '?'}"
                         f"{' ' + str(e['shape']) if e['shape'] is not None else ''}{at}")
    named = [n for t in facts["top_tensors"] for n in t["names"]]
    example = f" (e.g. `del {', '.join(named[:3])}`)" if named else ""
    lines += ["What usually helps:",
              "  - a smaller batch size (ember.utils.find_max_batch_size finds the largest that fits)",
              "  - `with ember.no_grad():` around evaluation, so that nothing is kept for backward",
              f"  - `del` the tensors you no longer need{example}",
              "  - ember.memory.empty_cache() to give memory the backend caches back",
              "  - float16/bfloat16: `with ember.autocast(device_type, dtype=ember.bfloat16):` halves activations",
              "  - ember.utils.checkpoint to recompute activations in backward instead of keeping them"]
    return "\n".join(lines)
