"""``ember.save`` / ``ember.load``: checkpoints as safetensors files, which load without running any code.

Tensors go into the file under flat dotted keys (a plain ``state_dict`` under
exactly its own keys, so the file is the one
``safetensors.torch.save_file(model.state_dict(), path)`` writes); everything
else (dicts, lists, tuples, sets, numbers, strings, None, dtypes, devices,
``ember.Size``, and whole objects: modules, optimizers, schedulers) goes as
JSON into the file's metadata, under the key ``"ember"``. No pickle is
involved anywhere: an object is stored as its class's import path and its
attributes, and rebuilt on load only from classes on an allow-list (ember's
own and those given to :func:`add_safe_globals`), as PyTorch's
``weights_only`` loading does.

>>> import io, ember
>>> buf = io.BytesIO()
>>> ember.save({'epoch': 3, 'w': ember.tensor([1.0, 2.0]), 'sizes': (2, 3)}, buf)
>>> _ = buf.seek(0)
>>> ember.load(buf)
{'epoch': 3, 'w': tensor([1., 2.]), 'sizes': (2, 3)}
"""
from __future__ import annotations

import io
import json
import os

import numpy as np

from .. import _dtype as _dt
from .._alloc import from_memory_error
from .._device import as_device
from .._device import device as _device_cls
from ..errors import CheckpointError
from ..ops.creation import from_numpy
from . import _format
from ._decoder import Decoder, references, select
from ._globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._structure import MAX_DEPTH, Encoder
from .atomic import write_atomically

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "MAX_DEPTH", "MAX_HEADER_BYTES"]

#: the default ``max_header_bytes`` of :func:`load`: 100,000,000 bytes, the safetensors library's own limit
MAX_HEADER_BYTES = _format.MAX_HEADER_BYTES

_META_KEY = "ember"
_EMBER_DTYPES = frozenset(d.name for d in _dt.ALL_DTYPES)
#: the safetensors dtype codes that ember tensors have
_TENSOR_CODES = frozenset(code for code, name in _format.CODE_TO_NUMPY.items() if name in _EMBER_DTYPES)
#: the format versions this ember reads; it writes the lowest one that holds what is saved
_VERSIONS = (1, 2)


def save(obj, f) -> None:
    """Save ``obj`` (a model, an optimizer, tensors, plain values, in nested dicts, lists, tuples, sets) to ``f``.

    ``f`` is a path or a writable binary file object. Writing to a path is
    atomic: the data goes to a temporary file in the same directory, which is
    flushed, synced and then renamed over ``f``, so a process killed mid-save
    leaves the previous file intact. Tensors that share memory with the same
    layout (the same tensor twice, tied weights) are stored once and load as one
    tensor object. Views of one memory block with different layouts (``w``
    and ``w.T``, the chunks of one tensor) are stored once too, as the block's
    span under the first view's key, and load as arrays sharing memory. As in
    PyTorch, ``requires_grad`` is stored (not ``.grad``) and a Parameter loads
    as a Parameter.

    Any other object (``ember.save(model, path)``, ``ember.save({'model':
    model, 'optimizer': opt, 'epoch': 3}, path)``) is stored as its class's
    import path and its attributes: its ``__dict__``, or what its class's
    ``__ember_getstate__()`` returns, recursively (a module's submodules, its
    parameters under their state-dict names). An object met twice (a shared
    submodule, the optimizer a scheduler holds) is stored once and loads as
    one object. Classes and functions an object holds are stored by import
    path; lambdas and local functions cannot be (a ``TypeError`` names the
    entry). A module's hooks are not saved (a ``UserWarning`` says so): a
    checkpoint holds data, not code. An object that contains itself, or
    nesting deeper than :data:`MAX_DEPTH` levels, is a ``ValueError``.

    >>> import io, ember
    >>> w = ember.ones(2, 2)
    >>> buf = io.BytesIO(); ember.save({'a': w, 'b': w}, buf); _ = buf.seek(0)
    >>> d = ember.load(buf)
    >>> d['a'] is d['b']
    True
    >>> buf = io.BytesIO(); ember.save(ember.nn.Linear(2, 1), buf); _ = buf.seek(0)
    >>> ember.load(buf)
    Linear(in_features=2, out_features=1, bias=True)
    """
    enc = Encoder()
    root = enc.encode(obj)
    arrays = enc.finish()
    meta = {_META_KEY: json.dumps({"version": enc.version, "root": root}, separators=(",", ":"), allow_nan=False)}
    if isinstance(f, (str, bytes, os.PathLike)):
        write_atomically(os.fspath(f), lambda out: _format.write_file(out, arrays, meta))
    else:
        _format.write_file(f, arrays, meta)


def load(f, map_location=None, *, keys=None, weights_only=True, max_header_bytes: int | None = None):
    """Load what :func:`save` wrote (or any safetensors file) from a path or a readable binary file object.

    A safetensors file without ember's metadata (e.g. written by
    ``safetensors.torch.save_file``) loads as a flat ``{name: tensor}`` dict.
    Tensors are made on the CPU unless ``map_location`` says otherwise: a device
    (``'cpu:1'``, ``ember.device(...)``), a dict mapping the saved device
    (``{'cuda:0': 'cpu'}``), or a callable ``(tensor, saved_device_str)``
    returning the tensor to use. ``keys=[...]`` loads only those entries
    (top-level keys, or dotted paths through nested dicts such as
    ``'model_state_dict.fc.weight'``; a prefix such as ``'fc'`` takes
    ``'fc.weight'`` and ``'fc.bias'``) without reading the other tensors' bytes.

    Objects are rebuilt without running anything from the file: no pickle, no
    ``eval``, no ``__reduce__``, ``__init__`` or ``__setstate__``. An object is
    made with its class's built-in ``__new__`` and its attributes are put into
    its ``__dict__``, or handed to its class's ``__ember_setstate__(state)``
    where it declares one (ember's modules do: they start with no hooks).
    With ``weights_only=True`` (the default, as in PyTorch 2.6+) a class or
    function the file names is only looked up on an allow-list: ember's own
    (its ``nn`` modules, ``optim`` optimizers and schedulers, tensor classes,
    public functions) and what :func:`add_safe_globals` or
    :class:`safe_globals` allow; anything else is refused with a
    :class:`~ember.errors.CheckpointError` naming it and how to allow it.
    ``weights_only=False`` looks up any class or function the file names,
    importing its module, which runs that module's code: use it only for
    files from a trusted source, exactly as PyTorch warns. In both modes a
    name that is not a class where an object is made (``os.system``), a
    dunder attribute, a cycle or nesting deeper than :data:`MAX_DEPTH` is
    refused.

    Any problem with the file (truncated, corrupted, not safetensors, a PyTorch
    pickle, a header or view that does not fit the data) raises
    :class:`ember.errors.CheckpointError` naming the file, before any tensor
    larger than the file's data is made. So does a tensor of a dtype that ember
    tensors lack (safetensors' ``U16``, ``U32``, ``U64``; they load as NumPy
    arrays where ember's metadata stores NumPy arrays). The header (JSON: the
    tensors' names, dtypes and shapes, and ember's metadata) may be at most
    ``max_header_bytes`` long, :data:`MAX_HEADER_BYTES` (100,000,000, the
    safetensors library's limit) unless given; a longer one is refused before it
    is read. Parsing it takes time linear in its size and up to about 25 times
    its size in memory, so pass a lower limit for files from elsewhere when
    memory is tight.

    >>> import io, ember
    >>> buf = io.BytesIO()
    >>> ember.save({'model': {'w': ember.zeros(2)}, 'big': ember.zeros(1000)}, buf); _ = buf.seek(0)
    >>> ember.load(buf, keys=['model.w'])
    {'model': {'w': tensor([0., 0.])}}
    >>> _ = buf.seek(0); ember.load(buf, max_header_bytes=64)
    Traceback (most recent call last):
    ...
    ember.errors.CheckpointError: cannot load '<BytesIO>': the header is ... bytes, more than the limit of 64 bytes ...
    """
    limit = MAX_HEADER_BYTES if max_header_bytes is None else max_header_bytes
    if type(limit) is not int or limit < 2:
        raise ValueError(f"max_header_bytes must be an int of at least 2 (bytes), got {limit!r}")
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(os.fspath(f))
        where = repr(path)
        try:
            handle = open(path, "rb")
        except IsADirectoryError:
            raise CheckpointError(f"cannot load {where}: it is a directory, not a safetensors file") from None
        with handle:
            return _load(handle, os.fstat(handle.fileno()).st_size, where, map_location, keys, weights_only, limit)
    if not hasattr(f, "read"):
        raise TypeError(f"ember.load expects a path or a binary file object, got {type(f).__name__}")
    where = repr(getattr(f, "name", None) or f"<{type(f).__name__}>")
    start = f.tell()
    size = f.seek(0, io.SEEK_END) - start
    f.seek(start)
    return _load(_Offset(f, start), size, where, map_location, keys, weights_only, limit)


class _Offset:
    """A file object read from position ``start`` on, with positions counted from there."""

    def __init__(self, f, start):
        self._f, self._start = f, start

    def read(self, n):
        return self._f.read(n)

    def readinto(self, buf):
        if hasattr(self._f, "readinto"):
            return self._f.readinto(buf)
        data = self._f.read(len(buf))
        buf[:len(data)] = data
        return len(data)

    def seek(self, pos):
        return self._f.seek(self._start + pos)


def _load(f, size, where, map_location, keys, weights_only, max_header_bytes):
    entries, metadata = _format.read_header(f, size, where, max_header_bytes)
    place = _placer(map_location)

    arrays: dict = {}

    def fetch(kind, name, saved_device, view):
        if kind == "tensor":
            _check_tensor_dtype(entries[name], where)
        arr = arrays.get(name)
        if arr is None:
            try:
                arr = arrays[name] = _format.read_array(f, entries[name], where)
            except MemoryError as exc:  # the host could not hold the tensor's bytes
                raise from_memory_error(exc, as_device("cpu")) from exc
        if view is not None:
            offset, shape, strides = view
            item = arr.itemsize  # (an ndarray on arr's buffer has arr as its base: a later save shares it again)
            arr = np.ndarray(shape, arr.dtype, buffer=arr, offset=offset * item, strides=[s * item for s in strides])
        if kind == "ndarray":
            return arr
        if kind == "npscalar":
            if arr.ndim:
                raise CheckpointError(f"cannot load {where}: NumPy scalar {name!r} has shape {arr.shape}")
            return arr[()]
        return place(arr, saved_device)

    meta = metadata.get(_META_KEY)
    if meta is None:  # a plain safetensors file: a flat dict of tensors
        version, root = 1, {"dict": [[name, {"tensor": name}] for name in entries]}
    else:
        version, root = _parse_meta(meta, where)
        unused = set(entries) - references(root, set())
        if unused:
            raise CheckpointError(f"cannot load {where}: the ember metadata does not match the file: tensor "
                                  f"{sorted(unused)[0]!r} is in the file but not in the metadata")
    try:
        if keys is not None:
            root = select(root, [keys] if isinstance(keys, str) else keys, where)
        return Decoder(fetch, entries, where, version, weights_only is not False).decode(root)
    except RecursionError:
        raise CheckpointError(f"cannot load {where}: the ember metadata is nested too deeply") from None


def _check_tensor_dtype(entry, where):
    """Refuse (before reading its bytes) a tensor whose safetensors dtype ember tensors do not have."""
    if entry.code not in _TENSOR_CODES:
        name = _format.numpy_dtype(entry.code).name
        raise CheckpointError(
            f"cannot load {where}: tensor {entry.name!r:.100} has safetensors dtype {entry.code} ({name}), which "
            f"ember tensors do not support (ember's dtypes: {', '.join(sorted(_EMBER_DTYPES))}); read the file with "
            "safetensors.numpy.load_file for NumPy arrays, or convert the tensor to a supported dtype wide enough "
            "for its values (int32 for U16, int64 for U32 and U64 below 2**63) before saving; keys= loads the other "
            "entries without it")


def _parse_meta(meta, where):
    try:
        doc = json.loads(meta)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, RecursionError):
            raise CheckpointError(f"cannot load {where}: the ember metadata nests too deeply to parse (ember "
                                  f"checkpoints nest at most {MAX_DEPTH} levels)") from None
        raise CheckpointError(f"cannot load {where}: the ember metadata is not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or "root" not in doc:
        raise CheckpointError(f"cannot load {where}: the ember metadata is not an object with a 'root'")
    version = doc.get("version")
    if type(version) is not int or version not in _VERSIONS:
        raise CheckpointError(f"cannot load {where}: ember checkpoint format version {version!r:.20} is not "
                              f"supported (this ember reads versions {', '.join(map(str, _VERSIONS))}); upgrade "
                              "ember")
    return version, doc["root"]


def _placer(map_location):
    """``(array, saved_device_str) -> tensor`` following ``map_location``."""

    def on(arr, dev):
        t = from_numpy(arr)
        return t if dev is None else t.to(dev)

    if map_location is None:
        return lambda arr, saved: from_numpy(arr)
    if isinstance(map_location, (str, _device_cls)):
        target = as_device(map_location)
        target.backend  # noqa: B018 - fail before reading anything for a device that does not exist
        return lambda arr, saved: on(arr, target)
    if isinstance(map_location, dict):
        table = {str(k): v for k, v in map_location.items()}
        return lambda arr, saved: on(arr, table.get(saved))
    if callable(map_location):
        def call(arr, saved):
            t = from_numpy(arr)
            result = map_location(t, saved)
            return t if result is None else result
        return call
    raise TypeError(f"map_location must be a device, a string, a dict or a callable, got "
                    f"{type(map_location).__name__}")

