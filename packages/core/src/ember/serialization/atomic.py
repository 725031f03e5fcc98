"""Writing a file so that a crash leaves the old file or the new one, never a part of either, and no litter for long.

The data goes to a temporary file beside the target, named
``.<name>.<host>.<pid>.<random>.tmp``; a process killed mid-write leaves that
file behind, and the next write to the same path (from any process on the same
host) removes it once no process with that id is alive.

>>> import os, tempfile
>>> from ember.serialization.atomic import write_atomically
>>> path = os.path.join(tempfile.mkdtemp(), "note.txt")
>>> write_atomically(path, lambda f: f.write(b"hello"))
>>> open(path, "rb").read()
b'hello'
"""
from __future__ import annotations

import errno
import os
import re
import socket
import tempfile

from ..errors import MissingDirectoryError

__all__ = ["write_atomically", "stale_temporaries"]


def write_atomically(path, write) -> None:
    """Call ``write(file)`` on a temporary binary file beside ``path``, sync it, then rename it to ``path``.

    A symbolic link is followed, as ``open(path, 'wb')`` would: the file it points to is replaced and the link
    stays a link. The new file keeps the permissions of the one it replaces (else it gets those of
    ``open(path, 'w')``), and the directory is synced so that the rename survives a crash. If ``write`` (or
    anything else) fails, the temporary file is removed and ``path`` is left as it was; temporaries that killed
    processes left for ``path`` are removed first. A directory that does not exist is a
    :class:`~ember.errors.MissingDirectoryError` (a ``FileNotFoundError`` and, as PyTorch's, a ``RuntimeError``).
    """
    path = os.path.realpath(os.fsdecode(path))
    directory, name = os.path.split(path)
    if not os.path.isdir(directory):
        what = "is not a directory" if os.path.exists(directory) else "does not exist"
        err = MissingDirectoryError(f"Parent directory {directory} {what}: cannot save {path!r} (create the "
                                    "directory first, e.g. with os.makedirs)")
        err.errno = errno.ENOTDIR if os.path.exists(directory) else errno.ENOENT
        raise err
    for stale in stale_temporaries(path):
        try:
            os.unlink(stale)
        except OSError:
            pass  # (another process removed it first, or it is not ours to remove)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.{_HOST}.{os.getpid()}.", suffix=".tmp", dir=directory)
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


#: this host's name as temporaries carry it (a process id means something only on the host that gave it)
_HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:64] or "host"


def stale_temporaries(path) -> list:
    """The temporaries beside ``path`` that :func:`write_atomically` made on this host in processes now dead."""
    directory, name = os.path.split(os.path.realpath(os.fsdecode(path)))
    pattern = re.compile(re.escape(f".{name}.{_HOST}.") + r"([0-9]{1,10})\.[a-z0-9_]{8}\.tmp")  # (mkstemp's 8)
    try:
        entries = os.listdir(directory)
    except OSError:
        return []
    found = []
    for entry in entries:
        match = pattern.fullmatch(entry)
        if match and int(match[1]) != os.getpid() and not _alive(int(match[1])):
            found.append(os.path.join(directory, entry))
    return found


def _alive(pid: int) -> bool:
    if os.name == "nt":  # (there os.kill(pid, 0) would send CTRL_C_EVENT, not probe)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # (another user's process, or no id this system could have: left alone)
    return True


def _mode_for(path) -> int:
    """The permissions the new file gets: the old file's, else what ``open(path, 'w')`` would give."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask
