"""The safetensors file format, read and written with NumPy, with every field of the header validated.

A safetensors file is an 8-byte little-endian header length ``n``, ``n`` bytes
of JSON (``{name: {"dtype", "shape", "data_offsets"}, "__metadata__": {str:
str}}``), then the byte buffer the offsets point into. Reading parses and checks
the header here, before any array is made, so a hostile file can only raise a
:class:`~ember.errors.CheckpointError`; tensors are read one by one with
seek/read, so loading a subset never touches the other tensors' bytes.
"""
from __future__ import annotations

import json
import math
import struct

import numpy as np

from ..errors import CheckpointError

__all__ = ["write_file", "read_header", "read_array", "Entry", "MAX_HEADER_BYTES", "CODE_TO_NUMPY"]

#: safetensors dtype code -> NumPy dtype name ("bfloat16" comes from ml_dtypes)
CODE_TO_NUMPY = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64",
                  "U16": "uint16", "U32": "uint32", "U64": "uint64", "F16": "float16", "BF16": "bfloat16",
                  "F32": "float32", "F64": "float64"}
_NUMPY_TO_CODE = {v: k for k, v in CODE_TO_NUMPY.items()}
_ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "I32": 4, "I64": 8, "U16": 2, "U32": 4, "U64": 8,
             "F16": 2, "BF16": 2, "F32": 4, "F64": 8}
#: the largest header :func:`read_header` parses unless told otherwise: the safetensors library's own limit, so
#: every file it reads, ember reads too. Parsing takes time linear in the header and up to about 25 times its
#: size in memory (metadata of many tiny containers: 1.1 GB for 47 MiB): pass a lower ``max_header_bytes`` to
#: ``ember.load`` where files come from elsewhere and memory is tight.
MAX_HEADER_BYTES = 100_000_000
_MAX_NDIM = 32


def numpy_dtype(code: str) -> np.dtype:
    if code == "BF16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(CODE_TO_NUMPY[code]).newbyteorder("<")


def dtype_code(arr: np.ndarray) -> str | None:
    """The safetensors dtype code of ``arr``'s dtype, or ``None`` if safetensors has none."""
    return _NUMPY_TO_CODE.get(arr.dtype.name)


class Entry:
    """One tensor of a file: its dtype code, shape and absolute byte range."""

    __slots__ = ("name", "code", "shape", "start", "stop")

    def __init__(self, name, code, shape, start, stop):
        self.name, self.code, self.shape, self.start, self.stop = name, code, shape, start, stop


# -- writing --------------------------------------------------------------------------------------------------
def write_file(f, arrays: dict, metadata: dict | None) -> None:
    """Write ``{name: ndarray}`` (NumPy arrays of safetensors dtypes) and str->str ``metadata`` to file ``f``.

    Arrays are written C-contiguous and little-endian whatever their layout in
    memory (safetensors 0.8's own NumPy writer gets strided arrays wrong).
    """
    header: dict = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    ready = []
    for name, arr in arrays.items():
        code = dtype_code(arr)
        if code is None:
            raise TypeError(f"cannot save array {name!r} of dtype {arr.dtype}: safetensors has no such dtype")
        if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
            arr = arr.copy(order="C")
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        header[name] = {"dtype": code, "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
        ready.append(arr)
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    raw += b" " * (-(len(raw) + 8) % 8)  # the buffer starts 8-byte aligned, as the safetensors library writes it
    f.write(struct.pack("<Q", len(raw)))
    f.write(raw)
    for arr in ready:
        if arr.size:
            f.write(memoryview(arr.reshape(-1).view(np.uint8)))


# -- reading --------------------------------------------------------------------------------------------------
def _describe_foreign(head: bytes) -> str:
    if head[:4] == b"PK\x03\x04":
        return ("this looks like a PyTorch pickle file (a zip archive, as torch.save writes); ember never loads "
                "pickles — save it with safetensors (safetensors.torch.save_file(state_dict, path))")
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return ("this looks like a PyTorch pickle file (legacy torch.save format); ember never loads pickles — "
                "save it with safetensors (safetensors.torch.save_file(state_dict, path))")
    if head[:6] == b"\x93NUMPY":
        return "this is a NumPy .npy file, not a safetensors file"
    return ""


def _fail(where: str, problem: str):
    raise CheckpointError(f"cannot load {where}: {problem}")


def read_header(f, size: int, where: str, max_bytes: int = MAX_HEADER_BYTES):
    """Parse and validate the header of the safetensors file ``f`` of ``size`` bytes.

    Returns ``(entries, metadata)``: ``{name: Entry}`` in header order and the
    ``__metadata__`` dict (``{}`` when absent). A header longer than
    ``max_bytes`` is refused before it is read.
    """
    head = f.read(8)
    if not isinstance(head, bytes):
        raise TypeError(f"cannot load {where}: the file object must be opened in binary mode ('rb'), "
                        f"its read() gave {type(head).__name__}")
    if len(head) < 8:
        _fail(where, _describe_foreign(head) or f"the file is truncated or not a safetensors file: it has {size} "
                                                "bytes, fewer than the 8-byte header length")
    (n,) = struct.unpack("<Q", head)
    if n > size - 8 or n < 2 or n > max_bytes:
        start = f.read(min(8, max(size - 8, 0)))
        foreign = _describe_foreign(head + start)  # checked only now: a valid header length can look foreign
        if foreign:
            _fail(where, foreign)
        if n > size - 8:
            _fail(where, f"not a safetensors file or truncated: the header length says {n} bytes, larger than "
                         f"the {size - 8} bytes the file has after the length")
        if n < 2:
            _fail(where, f"not a safetensors file: header length {n} is out of range (2 to {max_bytes} bytes)")
        _fail(where, f"the header is {n} bytes, more than the limit of {max_bytes} bytes (pass a larger "
                     "max_header_bytes to ember.load if the file is trusted; the safetensors library refuses "
                     f"headers over {MAX_HEADER_BYTES} bytes)")
    raw = f.read(n)
    if len(raw) != n:
        _fail(where, f"the file is truncated: the header needs {n} bytes, only {len(raw)} could be read")
    if raw[:1] != b"{":
        _fail(where, _describe_foreign(head + raw[:8]) or "not a safetensors file: the header is not a JSON object")
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        _fail(where, f"the header is not valid JSON ({exc})")
    del raw
    if not isinstance(header, dict):
        _fail(where, "the header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in metadata.items()):
        _fail(where, "the header's __metadata__ must map strings to strings")
    buffer_len = size - 8 - n
    entries = {name: _entry(name, info, 8 + n, where) for name, info in header.items()}
    _check_coverage(entries, buffer_len, 8 + n, where)
    return entries, metadata


def _no_duplicates(pairs):
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        for k, _ in pairs:
            if k in seen:
                raise ValueError(f"duplicate key {k!r:.100}")
            seen.add(k)
    return out


def _short(value, limit: int = 200) -> str:
    """``repr(value)`` cut to ``limit`` characters, for messages (a value nested too deeply to print says so)."""
    try:
        text = repr(value)
    except RecursionError:
        return f"<a {type(value).__name__} nested too deeply to print>"
    return text if len(text) <= limit else text[:limit] + "..."


_FIELDS = frozenset(("dtype", "shape", "data_offsets"))


def _entry(name, info, base, where) -> Entry:
    # (JSON numbers come back as exactly int or float, and true/false as bool: ``type(v) is int`` is the check)
    if type(info) is not dict or info.keys() != _FIELDS:
        _fail(where, f"tensor {name!r:.100}: the header entry must be an object with exactly 'dtype', 'shape' and "
                     f"'data_offsets', got {_short(info)}")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if type(code) is not str or code not in _ITEMSIZE:
        _fail(where, f"tensor {name!r:.100}: unknown dtype {_short(code, 50)} (expected one of {', '.join(_ITEMSIZE)})")
    if type(shape) is not list or len(shape) > _MAX_NDIM or not all(type(d) is int and 0 <= d < 2 ** 62
                                                                    for d in shape):
        _fail(where, f"tensor {name!r:.100}: invalid shape {_short(shape)} (expected a list of at most {_MAX_NDIM} "
                     "non-negative ints)")
    if (type(offsets) is not list or len(offsets) != 2 or type(offsets[0]) is not int or type(offsets[1]) is not int
            or not 0 <= offsets[0] <= offsets[1]):
        _fail(where, f"tensor {name!r:.100}: invalid data_offsets {_short(offsets)} (expected [begin, end] with "
                     "0 <= begin <= end)")
    if math.prod(d for d in shape if d) * _ITEMSIZE[code] >= 2 ** 62:  # NumPy could not even describe it
        _fail(where, f"tensor {name!r:.100}: invalid shape {_short(shape)} (too large for any array)")
    nbytes = math.prod(shape) * _ITEMSIZE[code]
    if nbytes != offsets[1] - offsets[0]:
        _fail(where, f"tensor {name!r:.100}: shape {shape} of dtype {code} needs {nbytes} bytes, but its data_offsets "
                     f"{offsets} span {offsets[1] - offsets[0]} bytes")
    return Entry(name, code, tuple(shape), base + offsets[0], base + offsets[1])


def _check_coverage(entries, buffer_len, base, where):
    """The byte ranges must tile the buffer exactly: no overlap, no gap, nothing past the end."""
    end = base
    for e in sorted(entries.values(), key=lambda e: (e.start, e.stop)):
        if e.stop > base + buffer_len:
            _fail(where, f"tensor {e.name!r:.100}: data_offsets [{e.start - base}, {e.stop - base}] go past the end "
                         f"of the data ({buffer_len} bytes); the file is truncated or corrupted")
        if e.start != end:
            what = "overlaps the previous tensor" if e.start < end else "leaves a gap before it"
            _fail(where, f"tensor {e.name!r:.100}: data_offsets [{e.start - base}, {e.stop - base}] {what}; "
                         "the byte ranges must tile the data buffer")
        end = e.stop
    if end != base + buffer_len:
        _fail(where, f"the tensors cover {end - base} bytes of data, but the file has {buffer_len}: "
                     "the data buffer has bytes no tensor owns")


def read_array(f, entry: Entry, where: str) -> np.ndarray:
    """The array of ``entry``, read from ``f`` with one seek and one read."""
    arr = np.empty(entry.shape, dtype=numpy_dtype(entry.code))
    if arr.size:
        f.seek(entry.start)
        got = f.readinto(memoryview(arr.reshape(-1).view(np.uint8)))
        if got != entry.stop - entry.start:
            _fail(where, f"tensor {entry.name!r:.100}: the file is truncated (read {got} of "
                         f"{entry.stop - entry.start} bytes)")
        if entry.code == "BOOL" and (arr.view(np.uint8) > 1).any():
            _fail(where, f"tensor {entry.name!r:.100}: bool data holds bytes other than 0 and 1")
    if arr.dtype.byteorder == ">":  # a big-endian machine: values are stored little-endian
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr
