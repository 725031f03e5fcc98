"""The experiment's journal: an append-only file of JSON lines, the record from which a killed run resumes.

Each line is one record, written whole and flushed to the operating system at once, so a killed process
loses at most the line it was writing. A record appended with ``sync=True`` (the experiment does so whenever
a trial ends) is also forced to disk, by ``fdatasync`` in a background thread that starts at once: it
protects against a machine crash without the driver waiting for the disk (a sync takes 0.3-3 ms, a trial's
bookkeeping without it about 0.1 ms). :meth:`Journal.close` waits until everything is on disk. On reading, a
torn last line (no newline, or not valid JSON) is ignored and cut off before anything new is appended; a bad
line anywhere else is an error.

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
import threading


def json_default(obj):
    """``default`` for :func:`json.dumps`: how the journal and the exports write non-JSON values."""
    if callable(getattr(obj, "tolist", None)):
        return obj.tolist()  # NumPy values and ember tensors: numbers and (nested) lists
    return f"<{type(obj).__name__}>"


def dumps(record: dict) -> str:
    """One record as a compact JSON line (no newline); NumPy values and tensors as numbers and lists, any
    other non-JSON object as its type's name in angle brackets (journals record what was run; never pickles)."""
    return json.dumps(record, separators=(",", ":"), default=json_default)


def normalized(obj):
    """``obj`` as it reads back from a journal (tuples become lists, NumPy scalars and 0-d tensors numbers, ...).

    >>> import numpy as np
    >>> normalized({"loss": np.float32(0.5), "shape": (2, 3), "model": object()})
    {'loss': 0.5, 'shape': [2, 3], 'model': '<object>'}
    """
    return json.loads(dumps(obj))


#: fdatasync (data, not metadata such as the modification time) where the system has it
_fsync = getattr(os, "fdatasync", os.fsync)
#: how long (s) :meth:`Journal.close` waits for the background sync to finish before syncing itself
CLOSE_WAIT = 30.0


class JournalError(RuntimeError):
    """A journal that cannot be read: a bad line before the last one, or no journal at all."""


class Journal:
    """An open journal, appending records. Build it with :meth:`open`."""

    def __init__(self, f):
        self._f = f
        self._wanted = threading.Event()  # set: a sync is requested
        self._closing = False
        self._syncer = None

    @classmethod
    def open(cls, path: str, check=None):
        """Open the journal at ``path`` for appending: returns ``(journal, records already there)``.

        ``check(records)``, if given, vets the records first (raising if they are not what the caller
        expects); only then is a torn last line cut off, so the next record starts on a line of its own: a
        file that is not the expected journal is left as it was. The file is locked while open: a second
        process appending to the same journal is refused (a killed one holds no lock). Without ``check`` a
        missing file is created.
        """
        if check is not None and not os.path.exists(path):
            raise JournalError(f"no experiment journal at {path!r}: expected the journal.jsonl of an experiment")
        f = open(path, "a+b")
        _lock(f, path)
        try:
            records, good_end = _parse(path)
            if check is not None:
                check(records)
        except BaseException:
            f.close()
            raise
        if f.seek(0, os.SEEK_END) != good_end:
            f.truncate(good_end)
            f.seek(good_end)
        return cls(f), records

    @classmethod
    def create(cls, path: str, first_line_prefix: bytes = b""):
        """Create the journal of a new run at ``path``, exclusively: of several processes creating it at
        once, one gets the journal and the others a :class:`FileExistsError`. A file left by a run killed
        before its first line was whole (empty, or a start of ``first_line_prefix``) is taken over; any
        other existing file is a FileExistsError and stays as it is."""
        try:
            f = os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666),
                          "a+b")
        except FileExistsError:
            f = open(path, "a+b")
        try:
            _lock(f, path, busy=FileExistsError(f"{path} is being created or run by another process"))
            f.seek(0)
            data = f.read()
            if data and (b"\n" in data or not (first_line_prefix.startswith(data)
                                               or data.startswith(first_line_prefix))):
                raise FileExistsError(f"{path} already exists")
        except BaseException:
            f.close()
            raise
        f.truncate(0)
        f.seek(0)
        return cls(f)

    @staticmethod
    def read(path: str) -> list:
        """Every complete record of the journal at ``path`` (a torn last line is left out)."""
        if not os.path.exists(path):
            raise JournalError(f"no experiment journal at {path!r}: expected the journal.jsonl of an experiment")
        return _parse(path)[0]

    def append(self, record: dict, sync: bool = False) -> None:
        """Write ``record`` as one line and flush it; with ``sync``, also :meth:`request_sync`."""
        self._f.write((dumps(record) + "\n").encode())
        self._f.flush()
        if sync:
            self.request_sync()

    def request_sync(self) -> None:
        """Have everything appended so far forced to disk now, in the background (one sync covers every
        request made before it starts)."""
        if self._syncer is None:
            self._syncer = threading.Thread(target=self._sync_loop, name="ember-tune-journal-sync", daemon=True)
            self._syncer.start()
        self._wanted.set()

    def _sync_loop(self) -> None:
        while True:
            self._wanted.wait()
            if self._closing:
                return
            self._wanted.clear()  # before syncing: a request made while it runs gets a sync of its own
            _fsync(self._f.fileno())

    def close(self) -> None:
        """Force everything to disk and close the file (closing twice is harmless)."""
        if self._f.closed:
            return
        if self._syncer is not None:
            self._closing = True
            self._wanted.set()
            self._syncer.join(CLOSE_WAIT)
        _fsync(self._f.fileno())
        self._f.close()


def _lock(f, path: str, busy: Exception | None = None) -> None:
    """Lock ``f`` for this process; if another holds it, close ``f`` and raise ``busy`` (default: a
    JournalError saying the experiment runs elsewhere)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        return
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        raise busy or JournalError(
            f"{path} is in use: another process (or an Experiment not closed) is running this experiment; let it "
            "end, or stop it, before restoring") from None


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
