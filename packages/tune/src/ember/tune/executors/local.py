"""LocalExecutor: trials in processes of their own on this machine, ``max_concurrent`` at a time.

A trial process runs ``trainable(config)`` through :func:`ember.tune.session.run_trial`;
with ``reuse_actors`` (the default) it then waits for the next trial or resume, so the
trainable's module (its imports, a data set it loads) is loaded once per process, and each
trial starts from the state the process had after loading it (see :class:`LocalExecutor`).
It talks to the driver over its own pipe: each ``tune.report`` sends the result and
waits for the answer that :meth:`LocalExecutor.respond` sends, so a scheduler's
decision takes effect at that very report. While it waits in :meth:`~LocalExecutor.poll`,
the driver also watches every trial's process sentinel, so a trial that dies
(``os._exit``, SIGKILL, a segfault) is an ``"error"`` event naming its exit code or
signal as soon as it happens, with the Python stack of a fatal signal where
:mod:`faulthandler` could write one.

Start method. The default is ``"forkserver"`` (``"spawn"`` where it does not exist):

- ``fork`` copies the driver as it is: unsafe when the driver has threads (a progress
  table, Ray's or BLAS's threads; a lock held by another thread stays locked forever in
  the child), and every trial would inherit the driver's memory and open files;
- ``spawn`` is safe but each trial process pays for a fresh interpreter importing NumPy and ember;
- ``forkserver`` forks each trial process from a small single-threaded server process that has
  ember preloaded: safe like spawn, quick like fork.

With spawn and forkserver the trainable travels by pickle, so it must be importable: a
function defined at module level (in a script, a package, or a test module). A
trainable that cannot be pickled (a lambda, a function defined inside another) is
refused by :meth:`~LocalExecutor.setup` with a clear error; ``start_method="fork"``
runs it anyway, at fork's risks.

Every trial process watches the driver: when the driver dies (even by SIGKILL), the
trial exits within about a second. Ctrl-C is the driver's to handle (trials ignore
SIGINT; the driver's shutdown ends them).

>>> ex = LocalExecutor(max_concurrent=2, num_cpus=4)
>>> ex.has_free_slot({"cpu": 1, "gpu": 0})
True
>>> ex.has_free_slot({"cpu": 8})
Traceback (most recent call last):
...
ValueError: a trial asking for 8 CPUs can never run: this executor has 4 (LocalExecutor(num_cpus=...))
"""
from __future__ import annotations

import atexit
import dataclasses
import faulthandler
import math
import multiprocessing
import os
import pickle
import signal
import threading
import time
import traceback
import warnings
import weakref
from multiprocessing.connection import wait

from ember import hookimpl

from .. import gpus as _gpus
from .. import session as _session
from ..interactive import check_importable
from ..schedulers.base import Decision
from ._process_state import ProcessState
from .base import Executor, ExecutorEvent

#: how often (s) a trial process checks that the driver is still alive
DRIVER_CHECK_INTERVAL = 0.5
#: how long (s) a trial that sent its last event may take to exit before it is killed
EXIT_GRACE = 5.0
#: how long (s) :meth:`LocalExecutor.stop` waits after SIGTERM before SIGKILL
STOP_GRACE = 2.0
#: modules the forkserver imports once, so that trial processes start with them loaded
PRELOAD = ["ember", "ember.tune.session", "ember.tune.executors.local"]

_FAULT_LOG = ".faulthandler.txt"
_live: "weakref.WeakSet[LocalExecutor]" = weakref.WeakSet()


def _default_start_method() -> str:
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def describe_exit(code) -> str:
    """``exit code 3`` / ``signal SIGKILL (exit code -9)``."""
    if code is not None and code < 0:
        try:
            return f"signal {signal.Signals(-code).name} (exit code {code})"
        except ValueError:
            pass
    return f"exit code {code}"


# -- the trial process --------------------------------------------------------------------------------------
def _watch_driver(lifeline, parent_pid: int) -> None:
    """Exit the trial process when the driver is gone: its end of ``lifeline`` closed (EOF), or this process
    was re-parented (the forkserver, or the driver itself under fork, died)."""
    while True:
        if wait([lifeline], DRIVER_CHECK_INTERVAL) or os.getppid() != parent_pid:
            os._exit(70)


def _worker_main(payload, job, conn, lifeline) -> None:
    """Body of a trial process: load the trainable, run ``job``'s trial, and, while the driver sends more,
    the next ones.

    A job is ``(run, cwd, env, reuse)``: ``cwd`` and ``env`` are the driver's when it started the trial (a
    forkserver's children would otherwise have the server's, from when it started), plus the trial's GPUs.
    Each result and the way each trial ended go to the driver over ``conn``; the end message says whether
    this process then waits for another job: with ``reuse``, after a trial that did not fail."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_driver, args=(lifeline, os.getppid()), daemon=True,
                     name="ember-tune-driver-watch").start()
    run, cwd, env, reuse = job
    # a module that unpickling the trainable imports runs in the first trial's folder and environment (a
    # script run as __main__ was imported before this, as __mp_main__, in the forkserver's)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    try:
        trainable = pickle.loads(payload) if isinstance(payload, bytes) else payload
    except Exception:
        conn.send(("end", "error", None, (
            "the trainable could not be loaded in the trial process: its module must be importable in a fresh "
            "Python process (on sys.path, or the script that was run)\n" + traceback.format_exc()), False))
        return
    state = ProcessState.capture()  # after the trainable's module ran: what each trial starts from
    while True:
        state.restore(cwd, env)
        if not _run_one(trainable, run, conn, reuse):
            return
        job = _next_job(conn)
        if job is None:
            return
        run, cwd, env, reuse = job


def _run_one(trainable, run, conn, reuse) -> bool:
    """Run one trial and send its end; returns whether this process waits for another trial."""
    fault_path = os.path.join(run.trial_dir, _FAULT_LOG)
    fault_file = open(fault_path, "w")
    faulthandler.enable(fault_file)

    def channel(metrics, checkpoint):
        conn.send(("result", metrics, checkpoint))
        while not conn.poll(DRIVER_CHECK_INTERVAL):  # the watcher ends the process if the driver dies
            pass
        return Decision(conn.recv())

    outcome = _session.run_trial(trainable, run, channel)
    faulthandler.disable()
    fault_file.close()
    try:
        os.remove(fault_path)
    except OSError:
        pass
    again = reuse and outcome.kind != "error"  # a failed trial may have left this process broken
    try:
        conn.send(("end", *outcome, again))
    except (pickle.PicklingError, TypeError, AttributeError):  # the returned metrics cannot travel
        again = False
        conn.send(("end", "error", None, "the trainable's returned dict could not be sent to the driver:\n"
                   + traceback.format_exc(), again))
    return again


def _next_job(conn):
    """The next job from the driver, or None when the driver closed the pipe."""
    while not conn.poll(DRIVER_CHECK_INTERVAL):  # the watcher ends the process if the driver dies
        pass
    try:
        return conn.recv()
    except (EOFError, OSError):
        return None


# -- the driver side ----------------------------------------------------------------------------------------
class _Trial:
    """A trial process the executor owns: running a trial, ended and not yet gone, or idle (kept for reuse,
    ``trial_id`` None)."""

    def __init__(self, trial_id, process, conn, lifeline, cpu, gpus, trial_dir):
        self.trial_id, self.process, self.conn, self.lifeline = trial_id, process, conn, lifeline
        self.cpu, self.gpus, self.trial_dir = cpu, gpus, trial_dir
        self.waiting = False  # sent a result, waits for respond()
        self.ended_at = None  # time.monotonic() when its last event came


class LocalExecutor(Executor):
    """Runs each trial in its own process on this machine.

    ``max_concurrent`` trials at most (default: the CPU count) run at once, and their resources fit in
    ``num_cpus`` CPUs (default: the CPUs this process may use) and the free GPUs. A trial's resources are
    ``{"cpu": n, "gpu": m}``; with ``m > 0`` it gets ``m`` free GPUs, picked by memory status
    (:mod:`ember.tune.gpus`; a GPU is free below ``gpu_max_memory`` of its memory used), in
    ``CUDA_VISIBLE_DEVICES``; with ``m == 0`` it sees no GPU. ``start_method``: see the module docstring.

    ``reuse_actors`` (default True, Ray Tune's name): a trial process that ran a trial to its end (complete,
    paused or stopped by a scheduler's answer) waits for the next trial or resume instead of exiting, so what
    the trainable's module loads (imports, data sets) is loaded once per process, not once per trial. Each
    trial still starts from the state the process had after loading the trainable: working directory,
    environment, random states, default dtype and grad mode are put back (see
    :mod:`ember.tune.executors._process_state`), and the session is the trial's own. A trial that failed
    gets a fresh process (its exception may have left the old one broken), as does one stopped by
    :meth:`stop` (its process is killed), one using GPUs (``CUDA_VISIBLE_DEVICES`` is read when a process
    starts) and, with ``start_method="fork"``, one whose configuration cannot be pickled. False: one process
    per trial run, as before.
    """

    def __init__(self, max_concurrent: int | None = None, num_cpus: float | None = None,
                 start_method: str | None = None, gpu_max_memory: float = 0.5, gpu_picker=None,
                 reuse_actors: bool = True):
        cpus = _cpu_count()
        if max_concurrent is None:
            max_concurrent = cpus
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int) or max_concurrent < 1:
            raise ValueError(f"max_concurrent must be a positive int (trials running at once), got {max_concurrent!r}")
        if num_cpus is not None and not (isinstance(num_cpus, (int, float)) and num_cpus > 0):
            raise ValueError(f"num_cpus must be a positive number, got {num_cpus!r}")
        method = start_method or _default_start_method()
        if method not in multiprocessing.get_all_start_methods():
            raise ValueError(f"start_method must be one of {multiprocessing.get_all_start_methods()}, got {method!r}")
        self.max_concurrent, self.num_cpus, self.start_method = max_concurrent, num_cpus or cpus, method
        self.set_reuse_actors(reuse_actors)
        self.gpu_picker = gpu_picker or _gpus.GPUPicker(max_memory=gpu_max_memory)
        self._ctx = multiprocessing.get_context(method)
        self._trials: dict = {}
        self._idle: list = []  # _Trial objects of processes that wait for their next trial
        self._payload = None
        self._closed = False
        self._warned_gpus = False

    # -- setup and resources ------------------------------------------------------------------------------
    def setup(self, trainable, experiment_dir: str) -> None:
        """Check that ``trainable`` can reach a trial process, and prepare the process start method."""
        if not callable(trainable):
            raise TypeError(f"the trainable must be a function trainable(config), got {type(trainable).__name__}")
        super().setup(trainable, experiment_dir)
        if self.start_method == "fork":
            self._payload = trainable
            return
        check_importable(trainable, self)
        try:
            self._payload = pickle.dumps(trainable)
        except Exception as exc:
            raise TypeError(
                f"the trainable {getattr(trainable, '__qualname__', trainable)!r} cannot be sent to a trial process "
                f"({exc}); with start method {self.start_method!r} it must be picklable: define it at module "
                "level, not as a lambda or inside a function (or use LocalExecutor(start_method='fork'))") from None
        if self.start_method == "forkserver":
            self._ctx.set_forkserver_preload(PRELOAD)

    def set_reuse_actors(self, reuse: bool) -> None:
        """Keep trial processes for the next trials (``reuse_actors``; what ``TuneConfig(reuse_actors=...)``
        sets)."""
        if not isinstance(reuse, bool):
            raise TypeError(f"reuse_actors must be True or False, got {reuse!r}")
        self.reuse_actors = reuse

    def _check_resources(self, resources) -> tuple:
        if not isinstance(resources, dict):
            raise TypeError(f"resources must be a dict like {{'cpu': 1, 'gpu': 0}}, got {type(resources).__name__}")
        unknown = set(resources) - {"cpu", "gpu"}
        if unknown:
            raise ValueError(f"unknown resource {sorted(unknown)[0]!r}: a trial's resources are 'cpu' and 'gpu'")
        cpu, gpu = resources.get("cpu", 1), resources.get("gpu", 0)
        if isinstance(cpu, bool) or not isinstance(cpu, (int, float)) or not math.isfinite(cpu) or cpu < 0:
            raise ValueError(f"resources['cpu'] must be a number >= 0, got {cpu!r}")
        if isinstance(gpu, bool) or not isinstance(gpu, int) or gpu < 0:
            raise ValueError(f"resources['gpu'] must be a whole number of GPUs >= 0, got {gpu!r}")
        if cpu > self.num_cpus:
            raise ValueError(f"a trial asking for {cpu} CPUs can never run: this executor has {self.num_cpus} "
                             "(LocalExecutor(num_cpus=...))")
        if gpu and gpu > self.gpu_picker.count():
            raise ValueError(f"a trial asking for {gpu} GPU(s) can never run: {self.gpu_picker.count()} found "
                             "(GPUs are found through GPUtil or nvidia-ml-py; is one installed?)")
        return cpu, gpu

    def _held_gpus(self) -> set:
        return {i for t in self._trials.values() for i in t.gpus}

    def has_free_slot(self, resources: dict) -> bool:
        """Whether a trial needing ``resources`` can start now; a ValueError if it never could."""
        cpu, gpu = self._check_resources(resources)
        if self._closed or len(self._trials) >= self.max_concurrent:
            return False
        if sum(t.cpu for t in self._trials.values()) + cpu > self.num_cpus + 1e-9:
            return False
        if gpu == 0 or self.gpu_picker.pick(gpu, exclude=self._held_gpus()) is not None:
            return True
        if not self._trials and not self._warned_gpus:  # nothing of ours holds them: someone else's jobs do
            self._warned_gpus = True
            used = ", ".join(f"GPU {g.index}: {g.memory_fraction:.0%}" for g in self.gpu_picker.status())
            warnings.warn(f"a trial asking for {gpu} GPU(s) waits: no trial of this executor runs, but too few GPUs "
                          f"have at most {self.gpu_picker.max_memory:.0%} of their memory in use ({used}); "
                          "LocalExecutor(gpu_max_memory=...) sets that limit", RuntimeWarning, stacklevel=2)
        return False

    @property
    def running(self) -> list:
        """Ids of the running trials (or ended ones whose processes have not exited yet)."""
        return list(self._trials)

    @property
    def idle_processes(self) -> int:
        """How many trial processes wait for a next trial (``reuse_actors``)."""
        return len(self._idle)

    # -- trials -------------------------------------------------------------------------------------------
    def start(self, run) -> None:
        """Start ``run`` in an idle process (``reuse_actors``) or a new one (it must fit: see
        :meth:`has_free_slot`)."""
        self._refuse_bad_start(run, set_up=self._payload is not None)
        cpu, gpu = self._check_resources(run.resources)
        gpus = self.gpu_picker.pick(gpu, exclude=self._held_gpus()) if gpu else []
        if self.start_method != "fork":
            try:
                pickle.dumps(run)
            except Exception as exc:
                raise TypeError(f"trial {run.trial_id} cannot be sent to its process ({exc}): its config must be "
                                "picklable (plain values, arrays, tensors, module-level functions)") from None
        run = dataclasses.replace(run, trial_dir=os.path.abspath(run.trial_dir),
                                  checkpoint=None if run.checkpoint is None else os.path.abspath(run.checkpoint))
        os.makedirs(run.trial_dir, exist_ok=True)
        job = (run, os.getcwd(), {**os.environ, **_gpus.visible_devices_env(gpus)}, self.reuse_actors and not gpus)
        trial = self._reused(job, gpus) or self._spawn(job)
        trial.trial_id, trial.cpu, trial.gpus, trial.trial_dir = run.trial_id, cpu, gpus, run.trial_dir
        self._trials[run.trial_id] = trial
        _live.add(self)

    def _reused(self, job, gpus):
        """An idle process, given ``job``; None when none can take it."""
        self._reap_idle()
        while self._idle and not gpus:
            trial = self._idle.pop()
            try:
                trial.conn.send(job)
            except (pickle.PicklingError, TypeError, AttributeError):  # fork: a config that cannot travel
                self._idle.append(trial)
                return None
            except OSError:  # it died meanwhile
                self._terminate([trial], 0.0)
                continue
            return trial
        return None

    def _spawn(self, job):
        """A new process running ``job``; an idle one is ended first if the processes would exceed
        ``max_concurrent``."""
        if self._idle and len(self._trials) + len(self._idle) >= self.max_concurrent:
            self._terminate([self._idle.pop(0)], 0.0)
        conn, child_conn = self._ctx.Pipe()
        lifeline_r, lifeline_w = self._ctx.Pipe(duplex=False)
        process = self._ctx.Process(target=_worker_main, name=f"ember-tune-trial-{job[0].trial_id}",
                                    args=(self._payload, job, child_conn, lifeline_r))
        try:
            process.start()
        except BaseException:
            conn.close(), lifeline_w.close()
            raise
        finally:
            child_conn.close(), lifeline_r.close()
        return _Trial(None, process, conn, lifeline_w, 0, [], None)

    def respond(self, trial_id: str, decision) -> None:
        """Answer trial ``trial_id``'s pending result: CONTINUE, PAUSE or STOP (a Decision or its value)."""
        decision = Decision(decision)
        trial = self._answered(trial_id)
        try:
            if trial.conn is not None:
                trial.conn.send(decision.value)
        except OSError:  # it died meanwhile: poll() reports that
            pass

    def poll(self, timeout: float) -> list:
        """Events since the last call, waiting at most ``timeout`` seconds; returns early (maybe with no event)
        when a trial process ends, since that frees a slot."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            events, changed = [], self._kill_lingering()
            handles = {}
            for trial in self._trials.values():
                handles[trial.process.sentinel] = trial
                if trial.conn is not None:
                    handles[trial.conn] = trial
            if not handles:
                return events
            ready = wait(list(handles), self._wait_time(deadline))
            for trial in {id(handles[h]): handles[h] for h in ready}.values():
                changed |= self._collect(trial, events)
            if events or changed or time.monotonic() >= deadline:
                return events

    def _wait_time(self, deadline) -> float:
        now = time.monotonic()
        limit = deadline - now
        for trial in self._trials.values():
            if trial.ended_at is not None:
                limit = min(limit, trial.ended_at + EXIT_GRACE - now)
        return max(0.0, limit)

    def _collect(self, trial, events) -> bool:
        """Read what ``trial`` sent; if its process is gone, release it. Returns True when it is gone."""
        exited = trial.process.exitcode is not None  # read before draining: what it sent before exiting is there
        while trial.conn is not None and trial.conn.poll(0):
            try:
                message = trial.conn.recv()
            except (EOFError, OSError):
                trial.conn.close()
                trial.conn = None
                break
            if message[0] == "result":
                trial.waiting = True
                events.append(ExecutorEvent("result", trial.trial_id, metrics=message[1], checkpoint=message[2]))
            else:
                _, kind, metrics, error, again = message
                trial.ended_at, trial.waiting = time.monotonic(), False
                events.append(ExecutorEvent(kind, trial.trial_id, metrics=metrics, error=error))
                if again and not self._closed:  # the process waits for its next trial
                    self._trials.pop(trial.trial_id, None)
                    trial.trial_id = trial.trial_dir = trial.ended_at = None
                    self._idle.append(trial)
                    return True
        if not exited and trial.process.exitcode is None:
            return False
        if trial.ended_at is None:
            events.append(ExecutorEvent("error", trial.trial_id, error=self._death_report(trial)))
        self._release(trial)
        return True

    def _death_report(self, trial) -> str:
        process = trial.process
        text = (f"trial {trial.trial_id}: its process (pid {process.pid}) died with "
                f"{describe_exit(process.exitcode)} before the trainable ended")
        try:
            with open(os.path.join(trial.trial_dir, _FAULT_LOG)) as f:
                stack = f.read().strip()
        except OSError:
            stack = ""
        return f"{text}\n{stack}" if stack else text

    def _release(self, trial) -> None:
        trial.process.join(timeout=1.0)
        for end in (trial.conn, trial.lifeline):
            if end is not None:
                end.close()
        trial.conn = trial.lifeline = None
        if trial.trial_dir is not None:
            try:
                os.remove(os.path.join(trial.trial_dir, _FAULT_LOG))
            except OSError:
                pass
        if not trial.process.is_alive():
            trial.process.close()
        if trial.trial_id is not None:
            self._trials.pop(trial.trial_id, None)
        elif trial in self._idle:
            self._idle.remove(trial)

    def _reap_idle(self) -> None:
        """Release idle processes that exited (killed from outside, or their driver watch fired)."""
        for trial in list(self._idle):
            if trial.process.exitcode is not None:
                self._release(trial)

    def _kill_lingering(self) -> bool:
        """Kill trial processes that ended their trial more than EXIT_GRACE ago and are still there."""
        now, killed = time.monotonic(), False
        for trial in list(self._trials.values()):
            if trial.ended_at is not None and now - trial.ended_at > EXIT_GRACE:
                self._terminate([trial], 0.0)
                killed = True
        return killed

    def _terminate(self, trials, grace: float, kill_wait: float = 1.0) -> None:
        """SIGTERM ``trials``, wait up to ``grace`` seconds for them together, SIGKILL the rest and wait up to
        ``kill_wait`` more; release all."""
        for trial in trials:
            if trial.lifeline is not None:
                trial.lifeline.close()
                trial.lifeline = None
            if trial.process.exitcode is None:
                trial.process.terminate()
        for wait_s, last in ((grace, False), (kill_wait, True)):
            deadline = time.monotonic() + wait_s
            for trial in trials:
                trial.process.join(timeout=max(0.0, deadline - time.monotonic()))
            for trial in trials:
                if trial.process.exitcode is None and not last:
                    trial.process.kill()
        for trial in trials:
            self._release(trial)

    def stop(self, trial_id: str) -> None:
        """End trial ``trial_id`` now (SIGTERM, then SIGKILL after ``STOP_GRACE`` s); it sends no further events.
        A trial that is not running is left alone."""
        trial = self._trials.get(trial_id)
        if trial is not None:
            self._terminate([trial], STOP_GRACE)

    def shutdown(self, timeout: float = 10.0) -> None:
        """End every trial process within ``timeout`` seconds (SIGTERM, then SIGKILL) and refuse new trials."""
        self._closed = True
        _live.discard(self)
        self._terminate(list(self._trials.values()) + self._idle, 0.8 * timeout, max(0.2 * timeout, 0.1))


@atexit.register
def _shutdown_all():
    for executor in list(_live):
        executor.shutdown(timeout=2.0)


@hookimpl
def ember_tune_executors():
    return {"local": LocalExecutor}
