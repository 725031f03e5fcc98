"""What runs inside a DataLoader worker process: seeding, the task loop, and errors sent home with tracebacks."""
from __future__ import annotations

import importlib
import multiprocessing
import os
import queue
import random
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass

import numpy as np

import ember

from . import worker_info
from ._fetch import make_fetcher
from ._shared_memory import SlotPool, remove_leftovers

#: how often (s) an idle worker checks that the main process is still alive
PARENT_CHECK_INTERVAL = 1.0


@dataclass(frozen=True)
class IterableEnd:
    """A worker's answer to a task once its share of an iterable dataset is used up."""


@dataclass(frozen=True)
class Reset:
    """Sent to persistent workers at the start of a new pass: start the iterable dataset over."""
    generation: int


@dataclass
class WorkerError:
    """An exception raised in a worker, carried to the main process and raised there again.

    The exception's type travels by name (so an unpicklable exception still arrives), with a message that
    holds the worker's id and its full traceback, as PyTorch gives.
    """
    type_module: str
    type_name: str
    message: str
    worker_id: int

    @classmethod
    def capture(cls, worker_id: int, where: str) -> "WorkerError":
        exc_type, exc, tb = sys.exc_info()
        text = "".join(traceback.format_exception(exc_type, exc, tb))
        message = f"Caught {exc_type.__name__} {where}.\nOriginal {text}"
        return cls(exc_type.__module__, exc_type.__qualname__, message, worker_id)

    def reraise(self):
        exc_type = _resolve(self.type_module, self.type_name)
        message = self.message
        if exc_type is KeyError:  # KeyError's str() is the repr of its argument; keep the traceback readable
            message = _KeyErrorMessage(message)
        try:
            exc = exc_type(message) if isinstance(exc_type, type) and issubclass(exc_type, BaseException) else None
        except Exception:  # an exception class whose __init__ wants other arguments
            exc = None
        if exc is None:
            exc = RuntimeError(message)
        exc.worker_id = self.worker_id
        try:
            raise exc
        finally:  # this frame must not hold the exception whose traceback holds it (and the iterator's frame)
            del exc


class _KeyErrorMessage(str):
    def __repr__(self):
        return str(self)


def _resolve(module: str, qualname: str):
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return obj
    except Exception:
        return RuntimeError


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed ``random``, NumPy's global generator and ember's generators for worker ``worker_id``; return the seed.

    Every worker of a pass gets its own seed, and every pass (a new ``base_seed``) new ones.
    """
    seed = (base_seed + worker_id) % (1 << 64)
    random.seed(seed)
    ember.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def _parent_alive(parent) -> bool:
    return parent.is_alive() if parent is not None else True


#: how often (s) a worker's watcher thread checks that its parent still lives (also while ``__getitem__`` hangs)
PARENT_WATCH_INTERVAL = 0.2


def _watch_parent(shm_prefix: str) -> None:
    """Start a daemon thread that removes this worker's shared-memory slots and exits the process as soon as
    the main process is gone (its parent pid changes), even while the dataset hangs. PyTorch orphans such a
    worker; ember's does not outlive its parent by more than ``PARENT_WATCH_INTERVAL``."""
    parent_pid = os.getppid()  # the main process, or the forkserver that forked this worker for it

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(PARENT_WATCH_INTERVAL)
        try:
            remove_leftovers(shm_prefix)
        finally:
            os._exit(1)

    threading.Thread(target=watch, name="ember-parent-watch", daemon=True).start()


def worker_loop(worker_id, num_workers, dataset, iterable, auto_collation, collate_fn, drop_last, base_seed,
                worker_init_fn, index_queue, result_conn, shm_prefix):
    """The body of worker process ``worker_id``: answer each task from ``index_queue`` on ``result_conn``.

    A task is ``(generation, task_index, index, freed_slots)``; the answer ``(generation, task_index, data)``
    where data is a packed batch, a :class:`WorkerError` or :class:`IterableEnd`. ``None`` ends the loop.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    parent = multiprocessing.parent_process()
    seed = seed_worker(base_seed, worker_id)
    worker_info._set_worker_info(worker_info.WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                                         dataset=dataset))
    pool = SlotPool(shm_prefix)
    _watch_parent(shm_prefix)
    init_error = fetcher = None
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        fetcher = make_fetcher(dataset, iterable, auto_collation, collate_fn, drop_last)
    except Exception:
        init_error = WorkerError.capture(worker_id, f"in DataLoader worker process {worker_id} (starting up)")
    try:
        while True:
            try:
                task = index_queue.get(timeout=PARENT_CHECK_INTERVAL)
            except queue.Empty:
                if not _parent_alive(parent):
                    return
                continue
            if task is None:
                return
            if isinstance(task, Reset):
                if init_error is None:
                    fetcher = make_fetcher(dataset, iterable, auto_collation, collate_fn, drop_last)
                continue
            generation, task_index, index, freed = task
            pool.release(freed)
            if init_error is not None:
                data = init_error
            else:
                try:
                    data = pool.pack(fetcher.fetch(index))
                except StopIteration:
                    data = IterableEnd()
                except Exception:
                    data = WorkerError.capture(worker_id, f"in DataLoader worker process {worker_id}")
            try:
                result_conn.send((generation, task_index, data))
            except (BrokenPipeError, ConnectionResetError):
                raise
            except Exception:  # something in the batch that cannot be pickled
                result_conn.send((generation, task_index, WorkerError.capture(
                    worker_id, f"while sending a batch from DataLoader worker process {worker_id}")))
            del data
    except (BrokenPipeError, ConnectionResetError, EOFError):
        pass  # the main process has gone; nothing left to answer
    finally:
        pool.close()
        result_conn.close()
        index_queue.cancel_join_thread()
