"""What ``ember-run`` starts on every rank: set torchrun's variables from MPICH's, then become the user's program.

``mpiexec`` (MPICH's hydra; Intel MPI's too) gives each process ``PMI_RANK``, ``PMI_SIZE``, ``MPI_LOCALRANKID``
and ``MPI_LOCALNRANKS``. This module copies them into ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE`` and ``GROUP_RANK`` (the host's index: ``ember-run`` places ranks in blocks of
``--nproc-per-node`` per host) and then ``exec``\\ s ``python SCRIPT ARGS`` (or ``python -m MODULE ARGS``, or the
program itself with ``--no-python``), or under ``ember-run`` starts it as a child (below). Either way the script
runs exactly as under plain ``python script.py`` (its own ``sys.path[0]``, ``__main__``, tracebacks), at the
cost of one more interpreter start (some 30 ms).

Usage (what ``ember-run --dry-run`` prints)::

    mpiexec -n 2 python -m ember.distributed._bootstrap train.py --epochs 3

When ``EMBER_RUN_RANKS_DIR`` names a directory that exists on this host (``ember-run`` sets it), the bootstrap
does not exec but stays on as the program's parent, to write down how it ended (see ``_rank_watch``), so that
``ember-run`` can say which rank died, and by which signal.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping

from ember.distributed._rank_watch import can_watch, run_watched

# MPICH's hydra (and Intel MPI) per-process variables -> the torchrun names they become
_FROM_PMI = {"RANK": "PMI_RANK", "WORLD_SIZE": "PMI_SIZE", "LOCAL_RANK": "MPI_LOCALRANKID",
             "LOCAL_WORLD_SIZE": "MPI_LOCALNRANKS"}
RANKS_DIR_VAR = "EMBER_RUN_RANKS_DIR"


def torchrun_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables torchrun would set for this rank, computed from MPICH's ``PMI_*``/``MPI_LOCAL*`` ones.

    >>> env = {"PMI_RANK": "3", "PMI_SIZE": "4", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}
    >>> torchrun_environment(env)
    {'RANK': '3', 'WORLD_SIZE': '4', 'LOCAL_RANK': '1', 'LOCAL_WORLD_SIZE': '2', 'GROUP_RANK': '1'}
    """
    missing = [pmi for pmi in _FROM_PMI.values() if pmi not in environ]
    if missing:
        raise RuntimeError(f"ember.distributed._bootstrap: {', '.join(missing)} not set; this module must be started "
                           "by MPICH's mpiexec (hydra), which sets them for every process: use "
                           "`ember-run --nproc-per-node N script.py`")
    values = {name: int(environ[pmi]) for name, pmi in _FROM_PMI.items()}
    values["GROUP_RANK"] = values["RANK"] // values["LOCAL_WORLD_SIZE"]
    return {name: str(value) for name, value in values.items()}


def _watch_directory() -> str | None:
    """``$EMBER_RUN_RANKS_DIR`` (taken out of the program's environment) if it exists here and this platform
    can watch a rank; on another host it may not exist, and ember-run then names a rank by hydra's report alone."""
    directory = os.environ.pop(RANKS_DIR_VAR, None)
    if directory is None or not os.path.isdir(directory) or not can_watch():
        return None
    return directory


def main(argv: list[str]) -> None:
    """``[-m | --no-python] PROGRAM [ARGS...]``: set the variables, then run the program and end as it
    ended (never returns)."""
    mode = argv[0] if argv and argv[0] in ("-m", "--no-python") else None
    rest = argv[1:] if mode else argv
    if not rest:
        raise SystemExit("usage: python -m ember.distributed._bootstrap [-m | --no-python] PROGRAM [ARGS...]")
    env = torchrun_environment(os.environ)
    os.environ.update(env)
    directory = _watch_directory()
    if mode == "--no-python":
        command = rest
    else:
        command = [sys.executable, *(["-m"] if mode == "-m" else []), *rest]
    sys.stdout.flush()
    if directory is not None:
        run_watched(command, directory, env["RANK"], os.environ.get("PMI_HOSTNAME") or socket.gethostname())
    try:
        os.execvp(command[0], command)
    except OSError as err:
        sys.stderr.write(f"[rank {env['RANK']}] ember-run: cannot run {command[0]!r}: {err.strerror}\n")
        sys.exit(127)  # the shell's code for a command that cannot be run


if __name__ == "__main__":
    main(sys.argv[1:])
