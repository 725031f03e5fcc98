"""A rank's watcher: run the rank's program as a child and write down how it ended, for ``ember-run``'s report.

When a rank dies by a signal, MPICH's hydra ends every other rank with SIGKILL and prints one "BAD TERMINATION"
banner naming a process id. Which one it names is a race: under load it can be a rank that hydra killed itself.
The only process that learns for certain how a rank ended is its parent, so under ``ember-run`` the bootstrap
stays on as that parent. It starts the program in its own process group, which hydra signals as a whole (SIGINT
for Ctrl-C, SIGTERM, SIGKILL), and passes on the signals sent to the watcher alone. When the program ends, it
writes ``<rank>.ended`` (``exit CODE`` or ``signal N``) beside the ``<rank>`` record (``CHILD_PID HOST
WATCHER_PID``) in ``ember-run``'s directory, then ends the same way, so that hydra sees the same exit status.
A rank that hydra kills takes its program with it (Linux's parent-death signal) and leaves no ``.ended``
record: only the ranks that ended on their own are named.

>>> read_records("/nonexistent")
{}
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
from pathlib import Path
from typing import NamedTuple, NoReturn

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# what hydra's proxy passes on to the ranks, and a user may send with kill(1)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def can_watch() -> bool:
    """Whether this platform lets a watcher's child die with it (Linux's ``prctl(PR_SET_PDEATHSIG)``)."""
    return sys.platform.startswith("linux")


def run_watched(command: list[str], directory: str, rank: str, host: str) -> NoReturn:
    """Run ``command`` as a child, pass signals on to it, record how it ended, and end the same way."""
    watched = {*FORWARDED, signal.SIGCHLD}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, watched)  # from before the fork: none is missed
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _become(command, rank, write_end)
    os.close(write_end)
    not_started = os.read(read_end, 1)  # b"" once the child's exec closed the pipe; b"!" if it could not start
    os.close(read_end)
    _write(Path(directory, rank), f"{child} {host} {os.getpid()}\n")
    status = _wait(child, watched)
    if not_started and os.WIFEXITED(status):
        sys.exit(os.WEXITSTATUS(status))  # the child said why
    _end_like(status, Path(directory, f"{rank}.ended"))


def _become(command: list[str], rank: str, not_started: int) -> NoReturn:
    """In the child: die with the watcher, then exec ``command`` (``not_started``, like every pipe Python makes,
    closes on exec)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # the watcher died before prctl took effect
            os._exit(128 + signal.SIGKILL)
        os.execvp(command[0], command)
    except OSError as err:
        sys.stderr.write(f"[rank {rank}] ember-run: cannot run {command[0]!r}: {err.strerror}\n")
        os.write(not_started, b"!")
    os._exit(127)  # the shell's code for a command that cannot be run


def _wait(child: int, watched: set[signal.Signals]) -> int:
    """Wait for ``child`` to end (its wait status), passing on the signals in ``watched`` that it did not get.

    Hydra's proxy (this process's parent) signals a rank's whole process group, the child included; a signal
    from anyone else was sent to this process alone and is passed on."""
    proxy = os.getppid()
    while True:
        info = signal.sigwaitinfo(watched)
        if info.si_signo == signal.SIGCHLD:
            pid, status = os.waitpid(child, os.WNOHANG)
            if pid == child:
                return status
        elif info.si_pid != proxy:
            try:
                os.kill(child, info.si_signo)
            except ProcessLookupError:
                pass  # it has just ended: the next SIGCHLD says how


def _end_like(status: int, record: Path) -> NoReturn:
    """Write how the child ended to ``record`` and end this process the same way."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        _write(record, f"signal {signum}\n")
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the child dumped core already, if it was to
        if signum in FORWARDED:
            signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # a signal whose default is not to end a process
    code = os.waitstatus_to_exitcode(status)
    _write(record, f"exit {code}\n")
    sys.exit(code)


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all; a directory that went away is not an error."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text)
        os.replace(partial, path)
    except OSError:
        pass


class RankRecord(NamedTuple):
    """What a rank's watcher wrote: its program's pid, the host, the watcher's pid, and how the program ended
    (``("signal", 9)``, ``("exit", 3)``, or ``None`` while running or when killed with its watcher)."""

    rank: int
    pid: int
    host: str
    watcher_pid: int
    ended: tuple[str, int] | None


def read_records(directory: str) -> dict[int, RankRecord]:
    """``{rank: RankRecord}`` from the watchers' files in ``directory`` (unreadable ones are left out)."""
    found = {}
    try:
        entries = list(Path(directory).iterdir())
    except OSError:
        return {}
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            pid, host, watcher = entry.read_text().split()
            ended_file = entry.with_name(f"{entry.name}.ended")
            ended = None
            if ended_file.exists():
                how, value = ended_file.read_text().split()
                ended = (how, int(value)) if how in ("signal", "exit") else None
            found[int(entry.name)] = RankRecord(int(entry.name), int(pid), host, int(watcher), ended)
        except (OSError, ValueError):
            continue
    return found
