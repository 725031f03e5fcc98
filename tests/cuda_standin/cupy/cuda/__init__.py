"""STAND-IN for ``cupy.cuda`` (tests only, never shipped): devices, streams and events of simulated GPUs.

Work runs at once on the host, so streams and events are always complete; events remember when they were
recorded so that ``get_elapsed_time`` gives a real duration.
"""
from __future__ import annotations

import time

from . import memory, runtime  # noqa: F401 - cupy.cuda.memory, as in CuPy
from .memory import MemoryPool, OutOfMemoryError, PinnedMemoryPool  # noqa: F401


def is_available() -> bool:
    try:
        return runtime.getDeviceCount() > 0
    except runtime.CUDARuntimeError:
        return False


class Device:
    """A stand-in GPU; ``with Device(i):`` makes it current."""

    def __init__(self, device=None):
        self.id = runtime.getDevice() if device is None else int(device)
        self._before: list = []

    def __enter__(self):
        self._before.append(runtime.getDevice())
        runtime.setDevice(self.id)
        return self

    def __exit__(self, *exc):
        runtime.setDevice(self._before.pop())

    def use(self) -> None:
        runtime.setDevice(self.id)

    def synchronize(self) -> None:
        """Nothing to wait for."""

    @property
    def compute_capability(self) -> str:
        p = runtime.getDeviceProperties(self.id)
        return f"{p['major']}{p['minor']}"

    @property
    def mem_info(self) -> tuple[int, int]:
        with self:
            return runtime.memGetInfo()

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


_next_ptr = [0x1000]


class Stream:
    """A stand-in stream of the device current when it was made; ``with stream:`` makes it current."""

    null: Stream

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        self.device_id = runtime.getDevice()
        self.ptr = 0 if null else _next_ptr[0]
        if not null:
            _next_ptr[0] += 16
        self._before: list = []

    def __enter__(self):
        self._before.append(_current_streams.get(runtime.getDevice(), Stream.null))
        self.use()
        return self

    def __exit__(self, *exc):
        self._before.pop().use()

    def use(self):
        _current_streams[runtime.getDevice()] = self
        return self

    def synchronize(self) -> None:
        """Nothing to wait for."""

    @property
    def done(self) -> bool:
        return True

    def record(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event) -> None:
        """Nothing to wait for."""

    def __eq__(self, other):
        return isinstance(other, Stream) and other.ptr == self.ptr

    def __hash__(self):
        return hash(self.ptr)


Stream.null = Stream(null=True)
_current_streams: dict = {}


def get_current_stream(device_id: int = -1) -> Stream:
    return _current_streams.get(runtime.getDevice() if device_id < 0 else device_id, Stream.null)


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self._time = None
        self.disable_timing = disable_timing

    def record(self, stream=None) -> None:
        self._time = time.perf_counter()

    def synchronize(self) -> None:
        """Nothing to wait for."""

    @property
    def done(self) -> bool:
        return True


def get_elapsed_time(start_event, end_event) -> float:
    """Milliseconds between two recorded events."""
    if start_event._time is None or end_event._time is None:
        raise runtime.CUDARuntimeError("cudaErrorInvalidResourceHandle: an event was not recorded")
    if start_event.disable_timing or end_event.disable_timing:
        raise runtime.CUDARuntimeError("cudaErrorInvalidResourceHandle: an event was made with disable_timing")
    return (end_event._time - start_event._time) * 1000.0
