"""``num_workers > 0``: worker processes fetch batches; the main process hands them out in sampler order.

Each worker has its own task queue and its own result pipe. The main process keeps at most
``prefetch_factor * num_workers`` tasks in flight, sends them round robin, and reads each batch from the pipe
of the worker that owns it, so batches come back in the order the sampler gave. While it waits it also
watches every worker's process sentinel: a worker that dies is reported at once, with its id and exit code,
and ``timeout`` bounds the wait for one batch. Workers are shut down when the pass ends, when the iterator
is dropped or an exception unwinds through it, and when the interpreter exits.

A worker's exception is raised in the main process and leaves the iterator usable, as in PyTorch: a persistent
loader's pass goes on with the next batch. Nothing the error carries keeps the iterator alive (the frame that
raises it drops its reference first), so a caught error whose iterator is no longer used frees the workers and
their ``/dev/shm`` slots at once; the clean-up is a ``weakref.finalize`` that holds the processes, queues and
pipes but not the iterator, so it runs with its pipes open even when the collector breaks a cycle.
"""
from __future__ import annotations

import atexit
import itertools
import os
import signal
import time
import weakref
from multiprocessing.connection import wait

from ._iter_base import BaseIter
from ._shared_memory import SlotViews, remove_leftovers
from ._worker import IterableEnd, Reset, WorkerError, worker_loop

#: how long (s) the main process waits for a batch between checks on the workers (when ``timeout=0``)
STATUS_CHECK_INTERVAL = 5.0
#: how long (s) shutting down waits for workers to exit before terminating them
SHUTDOWN_TIMEOUT = 5.0

_live_iterators: "weakref.WeakSet[MultiProcessIter]" = weakref.WeakSet()
_uids = itertools.count()


class WorkerDiedError(RuntimeError):
    """A DataLoader worker process exited while the loader still needed it (killed, crashed, ``os._exit``)."""

    def __init__(self, message: str, worker_id: int, exitcode: int | None):
        super().__init__(message)
        self.worker_id, self.exitcode = worker_id, exitcode


class DataLoaderTimeoutError(RuntimeError):
    """A batch took longer than the DataLoader's ``timeout``."""


def _describe_exit(code) -> str:
    if code is not None and code < 0:
        try:
            return f"exit code {code} (killed by signal {signal.Signals(-code).name})"
        except ValueError:
            return f"exit code {code}"
    return f"exit code {code}"


class MultiProcessIter(BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._num_workers = n = loader.num_workers
        self._prefetch = loader.prefetch_factor * n
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._generation = 0
        self._shutdown = True  # until the workers exist
        self._owner_pid = os.getpid()
        self._shm_prefix = f"/ember_{os.getpid()}_{next(_uids)}_"
        self._views = SlotViews(n)
        ctx = loader._mp_context()
        self._workers, self._index_queues, self._result_conns = [], [], []
        try:
            for wid in range(n):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()
                reader, writer = ctx.Pipe(duplex=False)
                proc = ctx.Process(
                    target=worker_loop, name=f"ember-data-worker-{wid}", daemon=True,
                    args=(wid, n, self._dataset, self._iterable, self._auto_collation, self._collate_fn,
                          self._drop_last, self._base_seed, loader.worker_init_fn, index_queue, writer,
                          f"{self._shm_prefix}w{wid}_"))
                proc.start()
                writer.close()  # the worker holds the write end
                self._workers.append(proc)
                self._index_queues.append(index_queue)
                self._result_conns.append(reader)
        except BaseException:
            self._shutdown = False
            self._shutdown_workers()
            raise
        self._shutdown = False
        # Cleanup hangs on a finalizer that holds the processes, queues and pipes but not the iterator, so it
        # runs with every pipe still open when the iterator is dropped, even from inside a reference cycle
        # (a caught WorkerError's traceback holds the iterator's frame), and at interpreter exit.
        self._finalizer = weakref.finalize(self, _release, self._workers, self._index_queues, self._result_conns,
                                           self._shm_prefix, self._owner_pid, 1.0)
        self._sentinels = {proc.sentinel: wid for wid, proc in enumerate(self._workers)}
        _live_iterators.add(self)
        self._reset_pass()

    # -- a pass ---------------------------------------------------------------------------------------------
    def _reset_pass(self):
        """Start sending the tasks of a pass (the first, or the next one for persistent workers)."""
        self._send_idx = self._rcvd_idx = 0
        self._owner: dict[int, int] = {}  # task index -> worker id, for tasks in flight
        self._active = [True] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch):
            self._try_put_index()

    def _next_pass(self):
        """Persistent workers: begin a new pass with the same workers."""
        self._generation += 1
        self._start_pass()
        if self._iterable:
            for q in self._index_queues:
                q.put(Reset(self._generation))
        self._reset_pass()

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._cycle)
            if self._active[wid]:
                break
        else:
            return
        self._index_queues[wid].put((self._generation, self._send_idx, index, self._views.take_freed(wid)))
        self._owner[self._send_idx] = wid
        self._send_idx += 1

    def __next__(self):
        data = self._next_batch()
        if isinstance(data, WorkerError):
            # The raised exception's traceback keeps this frame alive for as long as the program keeps the
            # exception: the frame must not keep the iterator (and its workers and slots) alive with it.
            del self
            data.reraise()
        return data

    def _next_batch(self):
        """The next batch in sampler order, or the :class:`WorkerError` a worker sent in its place."""
        while True:
            if self._shutdown or self._rcvd_idx >= self._send_idx:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            wid = self._owner.pop(self._rcvd_idx)
            data = self._receive(wid, self._rcvd_idx)
            self._rcvd_idx += 1
            if isinstance(data, IterableEnd):
                self._active[wid] = False
                continue
            self._try_put_index()
            if isinstance(data, WorkerError):
                return data
            return self._pin_batch(self._views.unpack(data, wid))

    def _receive(self, wid: int, task_index: int):
        """The answer to task ``task_index`` from worker ``wid``, watching all workers and the timeout."""
        conn = self._result_conns[wid]
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        watched = [conn, *self._sentinels]
        while True:
            wait_s = STATUS_CHECK_INTERVAL if deadline is None else max(0.0, deadline - time.monotonic())
            ready = wait(watched, wait_s) if not conn.poll() else [conn]
            if conn in ready:
                try:
                    generation, index, data = conn.recv()
                except (EOFError, OSError):
                    self._raise_worker_died(wid)
                if generation != self._generation:  # from a pass that was abandoned
                    if not isinstance(data, (WorkerError, IterableEnd)):
                        self._views.discard(data, wid)
                    continue
                assert index == task_index, (index, task_index)
                return data
            for sentinel in ready:
                self._raise_worker_died(self._sentinels[sentinel])
            if deadline is not None and time.monotonic() >= deadline:
                self._shutdown_workers(graceful=False)
                raise DataLoaderTimeoutError(
                    f"DataLoader timed out after {self._timeout} seconds waiting for batch {task_index} from "
                    f"worker {wid}; raise `timeout` if batches legitimately take longer")

    def _raise_worker_died(self, wid: int):
        proc = self._workers[wid]
        proc.join(timeout=1.0)
        code = proc.exitcode
        self._shutdown_workers(graceful=False)
        raise WorkerDiedError(f"DataLoader worker {wid} (pid {proc.pid}) exited unexpectedly with "
                              f"{_describe_exit(code)}", wid, code)

    # -- shutting down ------------------------------------------------------------------------------------
    def _shutdown_workers(self, graceful: bool = True):
        """Ask the workers to exit, join them (up to ``SHUTDOWN_TIMEOUT`` when ``graceful``), terminate the ones
        left and remove their slots."""
        if self._shutdown or os.getpid() != self._owner_pid:  # a forked child's copy owns no workers
            return
        self._shutdown = True
        _live_iterators.discard(self)
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer.detach()
        _release(self._workers, self._index_queues, self._result_conns, self._shm_prefix, self._owner_pid,
                 SHUTDOWN_TIMEOUT if graceful else 0.1)


def _release(workers, index_queues, result_conns, shm_prefix: str, owner_pid: int, grace: float) -> None:
    """Tell ``workers`` to exit, close their queues and pipes, join them (terminating those still alive after
    ``grace`` seconds) and remove their shared-memory slots. Holds no reference to the iterator."""
    if os.getpid() != owner_pid:
        return
    try:
        for q in index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
    finally:
        for q in index_queues:
            q.close()
        for conn in result_conns:
            conn.close()
        _stop(workers, shm_prefix, grace)


def _stop(workers, shm_prefix: str, grace: float) -> None:
    """Join ``workers`` for up to ``grace`` seconds, terminate (then kill) the ones left, remove their slots."""
    deadline = time.monotonic() + grace
    for proc in workers:
        proc.join(timeout=max(0.0, deadline - time.monotonic()))
    for proc in workers:
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=1.0)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=1.0)
    remove_leftovers(shm_prefix)


@atexit.register
def _shutdown_all():
    for it in list(_live_iterators):
        it._shutdown_workers()
