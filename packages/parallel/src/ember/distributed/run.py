"""``ember-run``: start a training script on several processes through MPICH's ``mpiexec``, as ``torchrun`` does.

``ember-run --nproc-per-node 2 train.py --epochs 3`` runs ``mpiexec -n 2 ... python -m ember.distributed._bootstrap
train.py --epochs 3``; each rank's bootstrap sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``... from MPICH's own
per-process variables and then becomes ``python train.py --epochs 3``. ``ember-run --help`` is the manual.

>>> from ember.distributed.run import build_parser, mpiexec_command
>>> args = build_parser().parse_args(["--nproc-per-node", "2", "train.py", "--lr", "0.1"])
>>> cmd = mpiexec_command(args, "/venv/bin/mpiexec", python="/venv/bin/python", environ={})
>>> " ".join(cmd[:3]), cmd[-5:]
('/venv/bin/mpiexec -n 2', ['-m', 'ember.distributed._bootstrap', 'train.py', '--lr', '0.1'])
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from ember.distributed._bootstrap import RANKS_DIR_VAR
from ember.distributed._rank_watch import RankRecord, read_records

_DESCRIPTION = """\
Start SCRIPT as NPROC_PER_NODE processes (ranks) on this host, or on each of several hosts, through MPI's
`mpiexec`, with the environment variables torchrun sets, so that `dist.init_process_group()` needs no
arguments. ember.distributed's processes talk over MPI (mpi4py); ember-run is a convenience over
`mpiexec -n N python SCRIPT` that adds torchrun's variables, a job time limit, and a report of which rank failed.

ember-run runs `MPIEXEC [hosts] -n NNODES*NPROC_PER_NODE -ppn NPROC_PER_NODE -genv VAR VALUE ...
PYTHON -m ember.distributed._bootstrap SCRIPT ARGS...`; on each rank the bootstrap copies MPICH's PMI_RANK,
PMI_SIZE, MPI_LOCALRANKID and MPI_LOCALNRANKS into the variables below and then runs `PYTHON SCRIPT ARGS...`
as its child, to note how it ended (the script runs exactly as under `python SCRIPT`). `--dry-run` prints that
command."""

_EPILOG = """\
which mpiexec:
  --mpiexec PATH, else $EMBER_MPIEXEC, else the `mpiexec` next to this Python (the virtual environment's, from
  the `mpich` wheel that ember-parallel depends on), else the first `mpiexec` on PATH. It must be MPICH's
  (hydra; Intel MPI's works too), the MPI that mpi4py was built against. None found: `pip install mpich` (or
  `pip install ember-parallel`) in this environment, or install MPICH and point --mpiexec at its mpiexec.

environment variables set on every rank:
  RANK              this process's rank, 0 .. WORLD_SIZE-1 (MPICH's PMI_RANK)
  WORLD_SIZE        number of processes in the job (PMI_SIZE)
  LOCAL_RANK        rank among the processes on this host, 0 .. LOCAL_WORLD_SIZE-1 (MPI_LOCALRANKID)
  LOCAL_WORLD_SIZE  number of processes on this host (MPI_LOCALNRANKS)
  GROUP_RANK        this host's index, 0 .. NNODES-1 (ranks are placed in blocks of NPROC_PER_NODE)
  MASTER_ADDR       --master-addr: informational (MPI needs no rendezvous address); the first host, or 127.0.0.1
  MASTER_PORT       --master-port: informational, 29500 by default
  OMP_NUM_THREADS   1, unless already set (as torchrun does: N processes with N BLAS threads each would
                    overload the cores; set it yourself to tune)
  PYTHONUNBUFFERED  1, unless already set: mpiexec collects the ranks' output through pipes, where Python would
                    otherwise hold print()'s output back until its buffer fills
  Every other variable of ember-run's environment reaches the ranks unchanged (on other hosts too).

example (train.py; run it with `ember-run --nproc-per-node 2 train.py --epochs 3`):
  import argparse
  import ember
  import ember.distributed as dist
  from ember import nn, optim
  from ember.data import DataLoader, DistributedSampler, TensorDataset
  from ember.nn.parallel import DistributedDataParallel as DDP

  parser = argparse.ArgumentParser()
  parser.add_argument("--epochs", type=int, default=3)
  epochs = parser.parse_args().epochs              # ARGS after SCRIPT reach the script unchanged
  dist.init_process_group()                        # MPI; no arguments needed
  rank = dist.get_rank()                           # == int(os.environ["RANK"])
  ember.manual_seed(0)
  data = TensorDataset(ember.randn(1000, 8), ember.randn(1000, 1))
  sampler = DistributedSampler(data)               # this rank's share, from RANK and WORLD_SIZE
  loader = DataLoader(data, batch_size=32, sampler=sampler, pin_memory=True)   # sampler, not shuffle=True
  model = DDP(nn.Linear(8, 1))                     # rank 0's parameters everywhere; gradients averaged
  opt = optim.SGD(model.parameters(), lr=0.1)
  for epoch in range(epochs):
      sampler.set_epoch(epoch)                     # a new shuffle each epoch, the same on every rank
      for x, y in loader:
          opt.zero_grad()
          loss = nn.functional.mse_loss(model(x), y)
          loss.backward()
          opt.step()
      if rank == 0:                                # print and save on one rank only
          print(f"epoch {epoch}: loss {loss.item():.4f}")
  if rank == 0:
      ember.save(model.module.state_dict(), "model.pt")
  dist.destroy_process_group()

several hosts:
  Every host needs the same Python environment and the script at the same path, and this host must reach
  the others by ssh without a password (mpiexec starts its proxies with ssh). Name the hosts in a host file,
  one per line (MPICH's format: `host` or `host:slots`; lines starting with # are comments):
      ember-run --hostfile hosts.txt --nproc-per-node 4 train.py        # 4 ranks on every host of hosts.txt
      ember-run --hosts node1,node2 --nnodes 2 --nproc-per-node 4 train.py
  --nnodes defaults to the number of hosts named; ranks 0..3 run on the first host, 4..7 on the second.
  Options of mpiexec that ember-run has no name for go through --mpiexec-args, e.g.
  --mpiexec-args "-launcher ssh -iface eth0".

failures and time limits:
  A rank that raises an uncaught exception after init_process_group() prints its traceback with every line
  labelled `[rank R]` and aborts the whole job (MPI_Abort): all ranks end within seconds, none hangs. A rank
  killed by a signal makes mpiexec end the others too; ember-run then names it ("rank 1 (pid ... on host)
  ended by signal 9 (SIGKILL)"). --timeout SECONDS ends a job that runs longer (exit status 124).
  A rank that exits on its own (sys.exit) with a non-zero code does not end the others: mpiexec waits for
  them (should they wait for it in a collective, the process group's timeout ends them).
  Ctrl-C reaches every rank as KeyboardInterrupt; SIGTERM to ember-run is passed on to mpiexec.

exit status:
  mpiexec's: 0 when every rank exited with 0; otherwise non-zero (MPICH combines the ranks' exit codes by
  bitwise OR, uses the signal number for a rank killed by a signal, and the code given to MPI_Abort);
  124 after --timeout; 2 for a usage error or no mpiexec.

without ember-run:
  ember.distributed needs only MPI, so plain mpiexec works as well:
      mpiexec -n 2 python train.py
  init_process_group() takes rank and world size from MPI; RANK, LOCAL_RANK and the others are then not set
  (use dist.get_rank(), or pass num_replicas and rank to DistributedSampler). `ember-run --dry-run ...`
  prints the full mpiexec command ember-run would run, to copy into a batch script."""


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``ember-run`` (its ``--help`` is the manual).

    >>> build_parser().parse_args(["-n", "2", "t.py", "--x", "1"]).script_args
    ['--x', '1']
    """
    parser = argparse.ArgumentParser(
        prog="ember-run", description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="ember-run [options] SCRIPT [ARGS...]   (or python -m ember.distributed.run ...)")
    parser.add_argument("-n", "--nproc-per-node", "--nproc_per_node", type=_positive_int, default=1,
                        metavar="NPROC_PER_NODE",
                        help="processes (ranks) to start on each host (default: 1); unlike mpiexec's -n, per host")
    parser.add_argument("--nnodes", type=_positive_int, default=None,
                        help="number of hosts (default: the number of hosts --hostfile or --hosts names, else 1)")
    hosts = parser.add_mutually_exclusive_group()
    hosts.add_argument("--hostfile", "-f", metavar="FILE",
                       help="host file for several hosts, passed to mpiexec as -f FILE (see 'several hosts')")
    hosts.add_argument("--hosts", metavar="HOST,HOST,...", help="comma-separated host names, passed as -hosts")
    parser.add_argument("--master-addr", "--master_addr", default=None,
                        help="MASTER_ADDR to set (informational; default: the first host, or 127.0.0.1)")
    parser.add_argument("--master-port", "--master_port", type=_positive_int, default=29500,
                        help="MASTER_PORT to set (informational; default: 29500)")
    parser.add_argument("--timeout", type=_positive_float, default=None, metavar="SECONDS",
                        help="end the whole job if it runs longer than this (exit status 124); default: no limit")
    parser.add_argument("--mpiexec", default=None, metavar="PATH",
                        help="the mpiexec to use (default: $EMBER_MPIEXEC, else the one next to this Python, "
                             "else the one on PATH)")
    parser.add_argument("--mpiexec-args", default="", metavar="STRING",
                        help="more mpiexec options, split as a shell would, e.g. \"-bind-to core\"")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("-m", "--module", action="store_true",
                      help="SCRIPT is a module name, run as `python -m SCRIPT`")
    mode.add_argument("--no-python", "--no_python", action="store_true",
                      help="SCRIPT is a program, run without Python (the variables are set all the same)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the mpiexec command (one argument per shell word) and exit without running it")
    parser.add_argument("script", metavar="SCRIPT", help="the Python script to run on every rank")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="arguments for SCRIPT (everything after SCRIPT, options included)")
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


class LaunchError(Exception):
    """A problem found before anything started (printed as ``ember-run: error: ...``, exit status 2)."""


def find_mpiexec(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The ``mpiexec`` to run: ``explicit``, else ``$EMBER_MPIEXEC``, else the one next to ``sys.executable``
    (the virtual environment's, from the ``mpich`` wheel), else the first on ``PATH``.

    >>> find_mpiexec(environ={"EMBER_MPIEXEC": "/nowhere/mpiexec"})
    Traceback (most recent call last):
    ...
    ember.distributed.run.LaunchError: $EMBER_MPIEXEC=/nowhere/mpiexec: no such executable file
    """
    environ = os.environ if environ is None else environ
    for source, chosen in (("--mpiexec", explicit), ("$EMBER_MPIEXEC", environ.get("EMBER_MPIEXEC"))):
        if chosen:
            found = shutil.which(chosen)
            if found is None:
                raise LaunchError(f"{source}={chosen}: no such executable file")
            return found
    beside = Path(sys.executable).parent / "mpiexec"  # not resolved: a venv's python is a link out of the venv
    if os.access(beside, os.X_OK) and beside.is_file():
        return str(beside)
    on_path = shutil.which("mpiexec", path=environ.get("PATH", ""))
    if on_path is not None:
        return on_path
    raise LaunchError(
        f"no mpiexec found (looked for --mpiexec, $EMBER_MPIEXEC, {beside}, and PATH). ember-run needs MPICH's "
        "mpiexec: install the `mpich` wheel into this environment (`pip install mpich`, or `pip install "
        "ember-parallel`, which depends on it), or install MPICH and pass --mpiexec PATH or set EMBER_MPIEXEC")


def hosts_named(args: argparse.Namespace) -> list[str]:
    """The host names of ``--hosts`` or ``--hostfile`` (MPICH's format: ``host[:slots]``, ``#`` comment lines)."""
    if args.hosts:
        entries = args.hosts.split(",")
    elif args.hostfile:
        try:
            lines = Path(args.hostfile).read_text().splitlines()
        except OSError as err:
            raise LaunchError(f"--hostfile {args.hostfile}: cannot read it ({err.strerror})") from None
        entries = [line.split()[0] for line in lines if line.strip() and not line.lstrip().startswith("#")]
    else:
        return []
    names = [entry.split(":")[0].strip() for entry in entries]
    if not all(names):
        raise LaunchError(f"{'--hosts' if args.hosts else '--hostfile'}: an empty host name in {entries!r}")
    if not names:
        raise LaunchError(f"--hostfile {args.hostfile}: names no host (expected one `host` or `host:slots` a line)")
    return names


def mpiexec_command(args: argparse.Namespace, mpiexec: str, python: str = sys.executable,
                    environ: Mapping[str, str] | None = None, ranks_dir: str | None = None) -> list[str]:
    """The ``mpiexec`` command line for parsed ``args`` (see the module's docstring for an example)."""
    environ = os.environ if environ is None else environ
    hosts = hosts_named(args)
    nnodes = args.nnodes if args.nnodes is not None else max(len(hosts), 1)
    if nnodes > 1 and not hosts:
        raise LaunchError(f"--nnodes {nnodes} needs the hosts: name them with --hostfile FILE or --hosts a,b,...")
    if hosts and nnodes > len(set(hosts)):
        raise LaunchError(f"--nnodes {nnodes}, but only {len(set(hosts))} distinct hosts are named: {hosts}")
    cmd = [mpiexec, "-n", str(nnodes * args.nproc_per_node), "-ppn", str(args.nproc_per_node)]
    if args.hostfile:
        cmd += ["-f", args.hostfile]
    elif args.hosts:
        cmd += ["-hosts", args.hosts]
    variables = {"MASTER_ADDR": args.master_addr or (hosts[0] if hosts else "127.0.0.1"),
                 "MASTER_PORT": str(args.master_port)}
    for name in ("OMP_NUM_THREADS", "PYTHONUNBUFFERED"):
        if name not in environ:
            variables[name] = "1"
    if ranks_dir is not None:
        variables[RANKS_DIR_VAR] = ranks_dir
    for name, value in variables.items():
        cmd += ["-genv", name, value]
    try:
        cmd += shlex.split(args.mpiexec_args)
    except ValueError as err:
        raise LaunchError(f"--mpiexec-args {args.mpiexec_args!r}: {err} (expected options as a shell writes them)")
    mode = ["-m"] if args.module else ["--no-python"] if args.no_python else []
    return [*cmd, python, "-m", "ember.distributed._bootstrap", *mode, args.script, *args.script_args]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ember-run`` with ``argv`` (default: ``sys.argv[1:]``); returns the job's exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        mpiexec = find_mpiexec(args.mpiexec)
        if not (args.module or args.no_python or Path(args.script).is_file()):
            raise LaunchError(f"{args.script}: no such file (for a module give -m, for a program --no-python)")
        if args.dry_run:
            print(shlex.join(mpiexec_command(args, mpiexec)))
            return 0
        with tempfile.TemporaryDirectory(prefix="ember-run-") as ranks_dir:
            cmd = mpiexec_command(args, mpiexec, ranks_dir=ranks_dir)
            _note_thread_default(args)
            return _run(cmd, args.timeout, ranks_dir)
    except LaunchError as err:
        parser.print_usage(sys.stderr)
        print(f"ember-run: error: {err}", file=sys.stderr)
        return 2


def _note_thread_default(args: argparse.Namespace) -> None:
    if "OMP_NUM_THREADS" not in os.environ and args.nproc_per_node > 1:
        print("ember-run: OMP_NUM_THREADS=1 on every rank (as torchrun sets it) so that the processes do not "
              "overload the cores; set OMP_NUM_THREADS yourself to tune", file=sys.stderr, flush=True)


_BANNER_PID = re.compile(rb"PID (\d+) RUNNING AT (\S+)")
_BANNER_CODE = re.compile(rb"EXIT CODE: (\d+)")


class _Relay(threading.Thread):
    """Copies mpiexec's stdout to ours as it comes, noting the (pid, host, code) of hydra's "BAD TERMINATION"
    banners (hydra prints them on stdout, naming the process by pid only)."""

    def __init__(self, source: int) -> None:
        super().__init__(name="ember-run-relay", daemon=True)
        self.source = source
        self.failures: list[tuple[int, str, int]] = []
        self._pid: tuple[int, str] | None = None

    def run(self) -> None:
        out: BinaryIO | None = sys.stdout.buffer
        pending = b""
        while chunk := os.read(self.source, 65536):
            if out is not None:
                try:
                    out.write(chunk)
                    out.flush()
                except (BrokenPipeError, ValueError):
                    out = None  # our reader went away: keep draining mpiexec so that it never blocks on a full pipe
            *lines, pending = (pending + chunk).split(b"\n")
            pending = pending[-512:]
            for line in lines:
                self._scan(line)

    def _scan(self, line: bytes) -> None:
        if match := _BANNER_PID.search(line):
            self._pid = (int(match[1]), match[2].decode(errors="replace"))
        elif (match := _BANNER_CODE.search(line)) and self._pid is not None:
            self.failures.append((*self._pid, int(match[1])))
            self._pid = None


_GRACE_S = 5.0  # after --timeout: how long mpiexec gets to end the ranks after SIGTERM before it is killed


def _run(cmd: list[str], timeout: float | None, ranks_dir: str) -> int:
    """Run ``cmd`` (mpiexec), relaying its stdout; end it after ``timeout`` s; return the job's exit status."""
    # its own session: a terminal's Ctrl-C reaches ember-run alone, which passes it on once (hydra takes a
    # second SIGINT as "force abort", skipping the ranks' KeyboardInterrupt)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None
    relay = _Relay(proc.stdout.fileno())
    relay.start()

    def forward(signum: int, frame: object) -> None:
        proc.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        code = _wait(proc, timeout)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    relay.join(timeout=_GRACE_S)
    proc.stdout.close()
    if code != 0:
        _report(code, relay.failures, read_records(ranks_dir))
    return code


def _wait(proc: subprocess.Popen[bytes], timeout: float | None) -> int:
    """``proc``'s exit status (128 + N when a signal N ended it); after ``timeout`` s end it and return 124."""
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"ember-run: the job ran past --timeout {timeout:g} s; ending it", file=sys.stderr, flush=True)
        proc.terminate()  # hydra's mpiexec passes SIGTERM to every rank and cleans up
        try:
            proc.wait(timeout=_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()  # its proxies then end the ranks when their connection to mpiexec closes
            proc.wait()
        return 124
    return 128 - code if code < 0 else code


def _report(code: int, failures: list[tuple[int, str, int]], records: dict[int, RankRecord]) -> None:
    """Say on stderr which ranks ended badly and the job's exit status: from the ranks' watchers where they
    recorded an ending (hydra's banner may name a rank it killed itself), else from hydra's banners."""
    ended = [(r, r.ended) for _, r in sorted(records.items()) if r.ended is not None and r.ended != ("exit", 0)]
    for r, (kind, value) in ended:
        print(f"ember-run: rank {r.rank} (pid {r.pid} on {r.host}) ended by {_how(kind, value)}", file=sys.stderr)
    if not ended:
        by_pid = {pid: r for r in records.values() for pid in (r.pid, r.watcher_pid)}
        for pid, host, status in failures:
            named = by_pid.get(pid)  # the host is not compared: hydra may name it differently from PMI_HOSTNAME
            who = (f"rank {named.rank} (pid {named.pid} on {named.host})" if named
                   else f"pid {pid} on {host} (rank unknown)")
            how = _how("signal", status) if status in _SIGNAL_NUMBERS else _how("exit", status)
            print(f"ember-run: {who} ended by {how}", file=sys.stderr)
    print(f"ember-run: the job failed with exit status {code}", file=sys.stderr, flush=True)


def _how(kind: str, value: int) -> str:
    """``signal 9 (SIGKILL)`` or ``code 3``."""
    if kind == "signal":
        return f"signal {value} ({signal.Signals(value).name})"
    return f"code {value}"


_SIGNAL_NUMBERS = {int(s) for s in signal.Signals}


if __name__ == "__main__":
    sys.exit(main())
