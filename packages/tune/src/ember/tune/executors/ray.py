"""RayExecutor: trials on a Ray cluster, with the same events as the local executor.

Each trial runs in its own Ray actor (one worker process, created for the trial
and killed when it ends) that holds the trial's resources; inside it
``tune.report`` and ``tune.get_checkpoint`` behave as in a local trial process.
The driver long-polls each actor for events and answers reports through actor
calls. Ray is imported only when a RayExecutor is made (``pip install
ember-tune[ray]``).

Per-trial resources map onto Ray's:

>>> from ember.tune.executors.ray import ray_resources
>>> ray_resources({"cpu": 2, "gpu": 0.5})
{'num_cpus': 2, 'num_gpus': 0.5}
>>> ray_resources({"cpu": 1, "memory": 2**30, "TPU": 1})
{'num_cpus': 1, 'memory': 1073741824, 'resources': {'TPU': 1}}
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import re
import shutil
import tempfile
import traceback
import uuid

from ember import hookimpl

from ..schedulers.base import Decision
from .base import Executor, ExecutorEvent, TrialRun

#: event kinds after which a trial sends nothing more
_FINAL = ("complete", "paused", "stopped", "error")
#: seconds an actor holds a long-poll for events open before answering "nothing yet"
_LONG_POLL_S = 10.0


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise ImportError("RayExecutor needs Ray, which could not be imported: run `pip install ember-tune[ray]` "
                          f"(or `pip install 'ray>=2.9'`); the import failed with: {exc}") from exc
    return ray


def ray_resources(resources: dict) -> dict:
    """Ray actor options for a trial's ``resources``: "cpu" -> num_cpus, "gpu" -> num_gpus, "memory" (bytes)
    -> memory, any other key -> a custom Ray resource."""
    if not isinstance(resources, dict):
        raise TypeError(f"trial resources must be a dict such as {{'cpu': 1, 'gpu': 0}}, got {resources!r}")
    options, custom = {}, {}
    for key, amount in resources.items():
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0:
            raise ValueError(f"trial resource {key!r} must be a non-negative number, got {amount!r}")
        name = {"cpu": "num_cpus", "gpu": "num_gpus", "memory": "memory"}.get(key)
        if name is not None:
            options[name] = amount
        elif amount:
            custom[key] = amount
    if custom:
        options["resources"] = custom
    return options


def _cluster_key(option: str) -> str:
    return {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}[option]


def _needs(options: dict) -> dict:
    """``{cluster resource name: amount}`` of actor options (as ray.cluster_resources() names them)."""
    needs = {_cluster_key(k): v for k, v in options.items() if k != "resources" and v}
    needs.update(options.get("resources", {}))
    return needs


def _plain_text(text: str) -> str:
    """``text`` without the terminal colour codes Ray puts in its error messages."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _write_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class _TrialActor:
    """Runs one trial inside a Ray worker process (a threaded actor: ``run`` holds one thread while the driver
    calls ``events`` and ``respond`` on others)."""

    def __init__(self):
        self._events = queue.Queue()
        self._decisions = queue.Queue()

    def run(self, trainable_ref: list, run: TrialRun, marker: str | None, checkpoint_data: bytes | None) -> None:
        """Run the trial to its end; every event, the last included, goes to the event queue.

        ``marker`` is a file the driver made in the experiment folder: when this process sees it, the trial
        folder is shared and used as is; otherwise the trial writes to a local folder and checkpoints travel
        as bytes (``checkpoint_data`` is the checkpoint to resume from).
        """
        import ray

        from .. import session
        trial_id, local_dir = run.trial_id, None
        try:
            trainable = ray.get(trainable_ref[0])
        except BaseException:  # noqa: BLE001
            self._events.put((ExecutorEvent("error", trial_id, error="the trainable could not be loaded in the "
                                            "trial's Ray worker:\n" + _plain_text(traceback.format_exc())), None))
            return
        try:
            if marker is None or not os.path.exists(marker):
                local_dir = tempfile.mkdtemp(prefix=f"ember-tune-{trial_id}-")
                checkpoint = None
                if checkpoint_data is not None:
                    checkpoint = os.path.join(local_dir, os.path.basename(run.checkpoint))
                    _write_atomic(checkpoint, checkpoint_data)
                run = dataclasses.replace(run, trial_dir=local_dir, checkpoint=checkpoint)
            os.makedirs(run.trial_dir, exist_ok=True)
            if not run.resources.get("gpu"):  # as in a local trial process: no GPU asked, none seen
                os.environ["CUDA_VISIBLE_DEVICES"] = ""
            outcome = session.run_trial(trainable, run, self._channel(trial_id, copy=local_dir is not None))
            final = ExecutorEvent(outcome.kind, trial_id, metrics=outcome.metrics, error=outcome.error)
        except BaseException:  # noqa: BLE001 -- whatever ends the trial is reported, never lost
            final = ExecutorEvent("error", trial_id, error=traceback.format_exc())
        finally:
            if local_dir is not None:
                shutil.rmtree(local_dir, ignore_errors=True)
        self._events.put((final, None))

    def _channel(self, trial_id: str, copy: bool):
        """``channel(metrics, checkpoint_path) -> Decision`` for :func:`ember.tune.session.run_trial`."""
        def channel(metrics, checkpoint):
            data = None
            if copy and checkpoint is not None:  # the driver cannot see this node's files: send the bytes
                with open(checkpoint, "rb") as f:
                    data = f.read()
            self._events.put((ExecutorEvent("result", trial_id, metrics=metrics, checkpoint=checkpoint), data))
            while True:  # the driver answers every result; if the driver dies, Ray ends this actor
                try:
                    return Decision(self._decisions.get(timeout=_LONG_POLL_S))
                except queue.Empty:
                    pass
        return channel

    def events(self, timeout: float) -> list:
        """``[(event, checkpoint bytes or None), ...]``: what happened since the last call, waiting at most
        ``timeout`` seconds for the first."""
        try:
            got = [self._events.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                got.append(self._events.get_nowait())
            except queue.Empty:
                return got

    def respond(self, decision: str) -> None:
        self._decisions.put(decision)


class _RayTrial:
    """The driver's view of one running trial."""

    def __init__(self, actor, needs: dict, trial_dir: str, poll_ref):
        self.actor, self.needs, self.trial_dir, self.poll_ref = actor, needs, trial_dir, poll_ref
        self.waiting = False  # sent a result, waits for respond()


class RayExecutor(Executor):
    """Runs each trial in its own Ray actor on a Ray cluster.

    Args:
        address: the cluster to join (``ray.init(address=...)``: "auto", "ray://host:10001", ...). None joins
            the cluster named by ``RAY_ADDRESS`` if set, else starts a local Ray instance. When Ray is already
            initialised in this process, that connection is used and left open at :meth:`shutdown`.
        max_concurrent: at most this many trials at a time (None: as many as the cluster's resources allow).
        shared_storage: whether trial folders written by the driver are visible to the workers (one machine,
            or a shared file system). None finds out per trial. When not shared, checkpoints travel through
            Ray and are written into the trial folder by the driver; other files a trial writes stay on its
            node.
        **ray_init_kwargs: passed to ``ray.init`` when this executor connects (``num_cpus``,
            ``runtime_env``, ``include_dashboard``, ...).

    A trial's ``resources`` ({"cpu": n, "gpu": m}) become the actor's ``num_cpus`` / ``num_gpus`` (see
    :func:`ray_resources`); Ray picks the GPUs and sets ``CUDA_VISIBLE_DEVICES`` in the trial's process (empty
    for a trial that asks for no GPU, as with the local executor). The
    trainable is pickled once (with Ray's cloudpickle) and must be importable or picklable on every node. A
    trial whose worker process dies is an "error" event with what Ray knows (pid, node, exit type; Ray does not
    pass the exit code on; the worker's stderr is in Ray's logs).
    """

    def __init__(self, address: str | None = None, *, max_concurrent: int | None = None,
                 shared_storage: bool | None = None, **ray_init_kwargs):
        if max_concurrent is not None and (isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int)
                                           or max_concurrent < 1):
            raise ValueError(f"max_concurrent must be a positive int (trials running at once) or None, "
                             f"got {max_concurrent!r}")
        if shared_storage not in (None, True, False):
            raise TypeError(f"shared_storage must be True, False or None (find out), got {shared_storage!r}")
        self._ray = _import_ray()
        self.address, self.max_concurrent, self.shared_storage = address, max_concurrent, shared_storage
        self.ray_init_kwargs = ray_init_kwargs
        self._trials: dict[str, _RayTrial] = {}
        self._owns_ray = self._closed = False
        self._marker = self._trainable_ref = None

    def setup(self, trainable, experiment_dir: str) -> None:
        """Connect to Ray (or start it), and ship ``trainable`` to the cluster once."""
        if not callable(trainable):
            raise TypeError(f"the trainable must be a function trainable(config), got {type(trainable).__name__}")
        super().setup(trainable, experiment_dir)
        ray = self._ray
        if not ray.is_initialized():
            ray.init(address=self.address, **self.ray_init_kwargs)
            self._owns_ray = True
        os.makedirs(experiment_dir, exist_ok=True)
        if self.shared_storage is None:  # a trial that sees this file sees the trial folders
            self._marker = os.path.join(os.path.abspath(experiment_dir), f".ray-executor-{uuid.uuid4().hex}")
            open(self._marker, "w").close()
        elif self.shared_storage:
            self._marker = os.devnull  # seen everywhere: shared by the user's word
        try:
            self._trainable_ref = ray.put(trainable)
        except Exception as exc:
            raise TypeError(f"the trainable {getattr(trainable, '__qualname__', trainable)!r} cannot be sent to "
                            f"the Ray cluster ({exc}); it must be picklable by cloudpickle") from None
        self._actor_class = ray.remote(max_concurrency=3, max_restarts=0, max_task_retries=0)(_TrialActor)

    @property
    def running(self) -> list:
        """Ids of the trials this executor runs now."""
        return list(self._trials)

    def has_free_slot(self, resources: dict) -> bool:
        """Whether a trial needing ``resources`` can start now; a ValueError if the cluster never could run it
        (counted over the nodes it has now). Other jobs on the cluster are not counted: a trial started while
        they hold the resources waits in Ray's queue."""
        needs = _needs(ray_resources(resources))
        total = self._ray.cluster_resources()
        for key, amount in needs.items():
            if amount > total.get(key, 0):
                raise ValueError(f"a trial asks for {amount:g} {key} but the whole Ray cluster has "
                                 f"{total.get(key, 0):g}; ask for less in the trial resources")
        if self._closed or self.max_concurrent is not None and len(self._trials) >= self.max_concurrent:
            return False
        return all(amount <= total[key] - sum(t.needs.get(key, 0) for t in self._trials.values())
                   for key, amount in needs.items())

    def start(self, run: TrialRun) -> None:
        """Start ``run`` in a new actor (it must fit: see :meth:`has_free_slot`)."""
        self._refuse_bad_start(run, set_up=self._trainable_ref is not None)
        options = ray_resources(run.resources)
        options.setdefault("num_cpus", 0)  # Ray's actors hold no CPU unless asked
        data = None
        if run.checkpoint is not None and self.shared_storage is not True:
            with open(run.checkpoint, "rb") as f:
                data = f.read()  # used only if the worker cannot see the file
        actor = self._actor_class.options(**options).remote()
        actor.run.remote([self._trainable_ref], run, self._marker, data)
        self._trials[run.trial_id] = _RayTrial(actor, _needs(options), run.trial_dir,
                                               actor.events.remote(_LONG_POLL_S))

    def poll(self, timeout: float) -> list:
        """Events since the last call, waiting at most ``timeout`` seconds for the first."""
        ray = self._ray
        refs = {t.poll_ref: trial_id for trial_id, t in self._trials.items()}
        if not refs:
            return []
        ready, _ = ray.wait(list(refs), num_returns=1, timeout=max(0.0, timeout))
        if ready:  # and whatever else is ready by now
            ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
        events = []
        for ref in ready:
            events.extend(self._collect(refs[ref], ref))
        return events

    def _collect(self, trial_id: str, ref) -> list:
        ray, trial = self._ray, self._trials[trial_id]
        try:
            got = ray.get(ref, timeout=0)
        except ray.exceptions.RayError as exc:
            self._end(trial_id)
            if getattr(exc, "actor_init_failed", False):
                why = ("its Ray actor could not be created (is ember-tune installed on every node, or shipped "
                       "with runtime_env?)")
            elif isinstance(exc, ray.exceptions.RayActorError):
                why = "its Ray worker process died before the trainable ended"
            else:  # e.g. what the trial sent could not be pickled
                why = "what it sent could not come back through Ray"
            return [ExecutorEvent("error", trial_id, error=f"trial {trial_id}: {why}.\n{_plain_text(str(exc))}")]
        events = []
        for event, data in got:
            if data is not None:  # a checkpoint written on a worker that cannot see the trial folder
                os.makedirs(trial.trial_dir, exist_ok=True)
                path = os.path.join(trial.trial_dir, os.path.basename(event.checkpoint))
                _write_atomic(path, data)
                event.checkpoint = path
            trial.waiting = event.kind == "result"
            events.append(event)
        if events and events[-1].kind in _FINAL:
            self._end(trial_id)
        else:
            trial.poll_ref = trial.actor.events.remote(_LONG_POLL_S)
        return events

    def respond(self, trial_id: str, decision) -> None:
        """Answer trial ``trial_id``'s pending result: CONTINUE, PAUSE or STOP (a Decision or its value)."""
        decision = Decision(decision)
        trial = self._answered(trial_id)
        trial.actor.respond.remote(decision.value)  # if the actor died meanwhile, poll() reports that

    def stop(self, trial_id: str) -> None:
        """End trial ``trial_id`` now (its actor is killed); it sends no further events. A trial that is not
        running is left alone."""
        if trial_id in self._trials:
            self._end(trial_id)

    def _end(self, trial_id: str) -> None:
        self._ray.kill(self._trials.pop(trial_id).actor, no_restart=True)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Kill every trial's actor, refuse new trials, and end the Ray instance if this executor started it
        (Ray's kill and shutdown return at once; ``timeout`` is not needed)."""
        self._closed = True
        for trial_id in list(self._trials):
            self._end(trial_id)
        if self._marker not in (None, os.devnull):
            with contextlib.suppress(OSError):
                os.remove(self._marker)
        if self._owns_ray:
            self._ray.shutdown()
            self._owns_ray = False


@hookimpl
def ember_tune_executors():
    return {"ray": RayExecutor}
