"""The experiment's journal: an append-only file of JSON lines, the record from which a killed run resumes.

Each line is one record, written whole and flushed to the operating system at once, so a killed process
loses at most the line it was writing; :meth:`Journal.sync` forces the file to disk (the experiment calls
it whenever a trial ends). On reading, a torn last line (no newline, or not valid JSON) is ignored and cut
off before anything new is appended; a bad line anywhere else is an error.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "journal.jsonl")
>>> j, records = Journal.open(path)
>>> j.append({"e": "ask", "t": "00000"}); j.append({"e": "tell", "t": "00000"}, sync=True); j.close()
>>> with open(path, "a") as f: _ = f.write('{"e": "rep')   # killed mid-write
>>> Journal.read(path)
[{'e': 'ask', 't': '00000'}, {'e': 'tell', 't': '00000'}]
"""
from __future__ import annotations

import json
import os

import numpy as np


def _default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return f"<{type(obj).__name__}>"


def dumps(record: dict) -> str:
    """One record as a compact JSON line (no newline); NumPy values as numbers and lists, any other
    non-JSON object as its type's name in angle brackets (journals record what was run; they never pickle)."""
    return json.dumps(record, separators=(",", ":"), default=_default)


def normalized(obj):
    """``obj`` as it reads back from a journal (tuples become lists, NumPy scalars numbers, ...)."""
    return json.loads(dumps(obj))


#: fdatasync (data, not metadata such as the modification time) where the system has it
_fsync = getattr(os, "fdatasync", os.fsync)


class JournalError(RuntimeError):
    """A journal that cannot be read: a bad line before the last one, or no journal at all."""


class Journal:
    """An open journal, appending records. Build it with :meth:`open`."""

    def __init__(self, f):
        self._f = f

    @classmethod
    def open(cls, path: str):
        """Open ``path`` for appending (creating it if needed): returns ``(journal, records already there)``.

        A torn last line is cut off first, so the next record starts on a line of its own. The file is locked
        while open: a second process appending to the same journal is refused (a killed one holds no lock).
        """
        f = open(path, "a+b")
        _lock(f, path)
        records, good_end = _parse(path)
        if f.tell() != good_end:
            f.truncate(good_end)
            f.seek(good_end)
        return cls(f), records

    @staticmethod
    def read(path: str) -> list:
        """Every complete record of the journal at ``path`` (a torn last line is left out)."""
        if not os.path.exists(path):
            raise JournalError(f"no experiment journal at {path!r}: expected the journal.jsonl of an experiment")
        return _parse(path)[0]

    def append(self, record: dict, sync: bool = False) -> None:
        """Write ``record`` as one line and flush it; with ``sync``, also force it to disk."""
        self._f.write((dumps(record) + "\n").encode())
        self._f.flush()
        if sync:
            _fsync(self._f.fileno())

    def sync(self) -> None:
        """Force everything appended so far to disk."""
        _fsync(self._f.fileno())

    def close(self) -> None:
        """Sync and close the file (closing twice is harmless)."""
        if not self._f.closed:
            self.sync()
            self._f.close()


def _lock(f, path: str) -> None:
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        return
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        raise JournalError(f"{path} is in use: another process (or an Experiment not closed) is running this "
                           "experiment; let it end, or stop it, before restoring") from None


def _parse(path: str):
    """``(records, byte offset just past the last good line)``."""
    with open(path, "rb") as f:
        data = f.read()
    records, start = [], 0
    while start < len(data):
        end = data.find(b"\n", start)
        if end < 0:  # no newline: the writer was killed mid-line
            break
        try:
            records.append(json.loads(data[start:end]))
        except ValueError as e:
            if data[end + 1:].strip():
                raise JournalError(f"{path}: line {len(records) + 1} is not a JSON record ({e}); only the last "
                                   "line of a journal may be torn") from None
            break  # a torn last line whose tail happens to be a newline
        start = end + 1
    return records, start
