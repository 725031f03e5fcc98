"""``ember.cuda.Stream`` and ``ember.cuda.Event``: PyTorch's names over CuPy's streams and events.

>>> import ember
>>> if ember.cuda.is_available():
...     s = ember.cuda.Stream()
...     with ember.cuda.stream(s):
...         y = ember.ones(4, device="cuda") * 2
...     s.synchronize()
"""
from __future__ import annotations

from typing import Any

from .backend import BACKEND


def _index(device) -> int:
    """A CUDA device index from None (the current device), an int, a string or an ember device."""
    cp = BACKEND.cp
    if device is None:
        return cp.cuda.runtime.getDevice()
    if isinstance(device, int):
        index = device
    else:
        from ..._device import device as _device
        d: Any = _device(device)
        if d.type != "cuda":
            raise ValueError(f"expected a CUDA device, got {d}")
        index = d.index if d.index is not None else cp.cuda.runtime.getDevice()
    n = BACKEND.device_count()
    if not 0 <= index < n:
        raise RuntimeError(f"CUDA device {index} does not exist: this machine has {n} "
                           f"({', '.join(f'cuda:{i}' for i in range(n))})")
    return index


class Stream:
    """A queue of GPU work on one device; work queued in ``with ember.cuda.stream(s):`` runs in order on it.

    >>> import ember
    >>> if ember.cuda.is_available():
    ...     s = ember.cuda.Stream()
    ...     idle = s.query()
    """

    def __init__(self, device=None, priority: int = 0, *, _native=None):
        cp = BACKEND.cp
        self.device_index = _index(device)
        if _native is None:
            with cp.cuda.Device(self.device_index):
                _native = cp.cuda.Stream(non_blocking=True, priority=priority or None)
        self.native = _native

    @property
    def device(self):
        from ..._device import device
        return device("cuda", self.device_index)

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` handle (0 for the default stream)."""
        return int(self.native.ptr)

    def query(self) -> bool:
        """Whether all work queued on the stream has finished."""
        return bool(self.native.done)

    def synchronize(self) -> None:
        """Wait until all work queued on the stream has finished."""
        self.native.synchronize()

    def wait_event(self, event: Event) -> None:
        """Make future work on this stream wait for ``event``."""
        self.native.wait_event(event.native)

    def wait_stream(self, stream: Stream) -> None:
        """Make future work on this stream wait for the work queued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one when None) on this stream and return it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream \
            and self.device_index == other.device_index

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return f"<ember.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A point in a stream's work: record it, wait for it, time between two.

    >>> import ember
    >>> if ember.cuda.is_available():
    ...     start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    ...     start.record(); y = ember.ones(100, device="cuda").sum(); end.record(); end.synchronize()
    ...     ms = start.elapsed_time(end)
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing = enable_timing
        self.native = BACKEND.cp.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                            interprocess=interprocess)
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (the current stream when None)."""
        stream = current_stream() if stream is None else stream
        self.native.record(stream.native)
        self._recorded = True

    def wait(self, stream: Stream | None = None) -> None:
        """Make future work on ``stream`` (the current stream when None) wait for this event."""
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """Whether the work before the event has finished (True for an event never recorded)."""
        return bool(self.native.done)

    def synchronize(self) -> None:
        """Wait until the work before the event has finished."""
        self.native.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, both made with enable_timing=True)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time needs two events made with ember.cuda.Event(enable_timing=True)")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("elapsed_time needs both events recorded (event.record()) before it is asked")
        return float(BACKEND.cp.cuda.get_elapsed_time(self.native, end_event.native))


def current_stream(device=None) -> Stream:
    """The stream work on ``device`` (the current device when None) is queued on now."""
    cp = BACKEND.cp
    index = _index(device)
    return Stream(index, _native=cp.cuda.get_current_stream(index))


def default_stream(device=None) -> Stream:
    """The device's default (null) stream."""
    cp = BACKEND.cp
    return Stream(_index(device), _native=cp.cuda.Stream.null)


class stream:  # noqa: N801 - PyTorch's name
    """``with ember.cuda.stream(s):`` queues the work inside on ``s`` (and on its device); ``None`` changes
    nothing."""

    def __init__(self, stream: Stream | None):
        self.stream = stream
        self._device = None

    def __enter__(self):
        s = self.stream
        if s is not None:
            self._device = BACKEND.cp.cuda.Device(s.device_index)
            self._device.__enter__()
            s.native.__enter__()
        return s

    def __exit__(self, *exc):
        s = self.stream
        if s is not None:
            s.native.__exit__(*exc)
            self._device.__exit__(*exc)
        return False
