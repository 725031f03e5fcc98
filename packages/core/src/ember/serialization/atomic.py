"""Writing a file so that a crash leaves the old file or the new one, never a part of either.

>>> import os, tempfile
>>> from ember.serialization.atomic import write_atomically
>>> path = os.path.join(tempfile.mkdtemp(), "note.txt")
>>> write_atomically(path, lambda f: f.write(b"hello"))
>>> open(path, "rb").read()
b'hello'
"""
from __future__ import annotations

import os
import tempfile

__all__ = ["write_atomically"]


def write_atomically(path, write) -> None:
    """Call ``write(file)`` on a temporary binary file beside ``path``, sync it, then rename it to ``path``.

    The new file keeps the permissions of the one it replaces (else it gets those of ``open(path, 'w')``),
    and the directory is synced so that the rename survives a crash. If ``write`` (or anything else) fails,
    the temporary file is removed and ``path`` is left as it was.
    """
    path = os.fsdecode(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def _mode_for(path) -> int:
    """The permissions the new file gets: the old file's, else what ``open(path, 'w')`` would give."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask
