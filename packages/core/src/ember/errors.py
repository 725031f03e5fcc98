"""Exceptions ember raises beyond the standard ones PyTorch would raise."""


class EmberError(Exception):
    """Base class of ember's own errors."""


class PluginError(EmberError):
    """A plugin could not be registered, e.g. two plugins claim the same name."""


class DeviceMismatchError(EmberError, RuntimeError):
    """An op got tensors on different devices (ember never moves data implicitly)."""


class UnsupportedOpError(EmberError, NotImplementedError):
    """A backend cannot run an op (or a dtype)."""


class CheckpointError(EmberError, ValueError):
    """A checkpoint could not be saved or loaded: the file is truncated, corrupted, hostile or not safetensors.

    The message names the file and what was wrong with it.
    """


class MissingDirectoryError(EmberError, FileNotFoundError, RuntimeError):
    """A file could not be saved because its directory does not exist (or is not a directory).

    The message names the directory, as PyTorch's ``RuntimeError`` does ("Parent directory ... does not
    exist."); it is also a ``FileNotFoundError``, what ``open()`` would raise, with ``errno`` set.

    >>> import ember
    >>> try:
    ...     ember.save({}, '/no/such/dir/ckpt.pt')
    ... except FileNotFoundError as e:
    ...     print(e)
    Parent directory /no/such/dir does not exist: cannot save '/no/such/dir/ckpt.pt' (create the directory ...
    """


class OutOfMemoryError(EmberError, RuntimeError):
    """A tensor did not fit: the device's memory limit or the backend's allocator refused it.

    Also ``ember.cuda.OutOfMemoryError`` (PyTorch's name). The message is a report: what was asked, what the
    device holds, the largest live tensors (with the op and line that made them while
    ``ember.memory.record_memory_history()`` is on), what autograd's saved tensors hold, and what usually
    helps. The same facts are attributes, so that tools need not parse the text:

    - ``requested_bytes``, ``shape``, ``dtype`` and ``op`` of the failed allocation, ``device``;
    - ``allocated``, ``reserved``, ``peak`` and ``limit`` (bytes, ``limit`` None without one);
    - ``top_tensors``: the largest live tensors, largest first, as dicts with ``shape``, ``dtype``, ``bytes``,
      ``names`` (variables of the calling frames bound to it), and ``op`` and ``frames`` when the history knew them;
    - ``saved_bytes``: bytes autograd holds for backward; ``history``: the last memory events (history on).

    The exception holds no tensor; its traceback holds the frames of the failed call (and their tensors) until
    it is dropped, which the end of an ``except`` block does.

    >>> import ember
    >>> ember.memory.set_memory_limit(ember.memory_allocated() + 1000)
    >>> try:
    ...     ember.zeros(1000)
    ... except ember.OutOfMemoryError as e:
    ...     print(e.requested_bytes, e.shape, e.op)
    4000 (1000,) zeros
    >>> ember.memory.set_memory_limit(None)
    """

    def __init__(self, message: str = "", **facts):
        super().__init__(message)
        self.requested_bytes: int | None = facts.get("requested_bytes")
        self.shape: tuple | None = facts.get("shape")
        self.dtype = facts.get("dtype")
        self.op: str | None = facts.get("op")
        self.device = facts.get("device")
        self.allocated: int | None = facts.get("allocated")
        self.reserved: int | None = facts.get("reserved")
        self.peak: int | None = facts.get("peak")
        self.limit: int | None = facts.get("limit")
        self.top_tensors: list = facts.get("top_tensors", [])
        self.saved_bytes: int | None = facts.get("saved_bytes")
        self.history: list = facts.get("history", [])
