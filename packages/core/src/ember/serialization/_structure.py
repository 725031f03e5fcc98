"""A checkpoint's structure as JSON: containers and plain values inline, tensors as references to file keys.

A node is a JSON value. ``null``, ``true``/``false``, ints, finite floats and
strings stand for themselves; everything else is an object with one tag:

- ``{"list": [...]}``, ``{"tuple": [...]}``, ``{"dict": [[key, value], ...]}``,
  ``{"odict": [...]}`` (``OrderedDict``): keys are nodes too, so int keys (an
  optimizer's ``state``) come back as ints;
- ``{"float": "nan" | "inf" | "-inf"}``;
- ``{"tensor": name, "device": "cpu"}``, ``{"ndarray": name}``,
  ``{"npscalar": name}``: data stored in the file under ``name``;
- ``{"dtype": "float32"}``, ``{"device": "cpu:1"}``.
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from .. import _dtype as dt
from .._device import device as _device_cls
from .._tensor import Tensor
from ..errors import CheckpointError

__all__ = ["Encoder", "Decoder", "select"]

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_CONTAINERS = ("list", "tuple", "dict", "odict")


class Encoder:
    """Turns an object into a node tree, collecting its arrays as ``{file key: ndarray}`` in :attr:`arrays`.

    Tensors are named by their dotted path (``model_state_dict.fc.weight``);
    a tensor whose storage and layout another one already has (the same tensor
    twice, tied weights) is stored once and referenced by both.
    """

    def __init__(self):
        self.arrays: dict = {}
        self._seen: dict = {}  # identity of the data -> file key
        self._keep = []        # arrays whose id() is part of an identity stay alive while encoding

    def encode(self, obj, path=()):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            if math.isfinite(obj):
                return float(obj)
            return {"float": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
        if isinstance(obj, Tensor):
            arr = obj.detach().numpy(force=True)
            return {"tensor": self._store("tensor", obj._data, arr, path), "device": str(obj.device)}
        if isinstance(obj, np.ndarray):
            if obj.dtype == object:
                raise TypeError(f"cannot save {_where(path)}: NumPy arrays of dtype object are not data")
            return {"ndarray": self._store("ndarray", obj, obj, path)}
        if isinstance(obj, np.generic):
            return {"npscalar": self._store("npscalar", None, np.asarray(obj), path)}
        if isinstance(obj, dt.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, _device_cls):
            return {"device": str(obj)}
        if isinstance(obj, dict):
            for k in obj:
                if not (k is None or isinstance(k, (bool, int, float, str, tuple))):
                    raise TypeError(f"cannot save {_where(path)}: dict keys must be strings, numbers, None or "
                                    f"tuples of them, got {type(k).__name__}")
            tag = "odict" if isinstance(obj, OrderedDict) else "dict"
            return {tag: [[self.encode(k, path + ("<key>",)), self.encode(v, path + (k,))] for k, v in obj.items()]}
        if isinstance(obj, (list, tuple)):
            tag = "list" if isinstance(obj, list) else "tuple"  # ember.Size and namedtuples come back as tuples
            return {tag: [self.encode(v, path + (i,)) for i, v in enumerate(obj)]}
        raise TypeError(f"cannot save {_where(path)} of type {type(obj).__name__}: ember.save stores tensors, "
                        "NumPy arrays, numbers, strings, bools, None, and dicts, lists and tuples of them")

    def _store(self, kind, data, arr, path):
        ident = None
        if data is not None:
            ident = (kind, _identity(data))
            name = self._seen.get(ident)
            if name is not None:
                return name
            self._keep.append(data)
        name = base = ".".join(str(p) for p in path) or kind
        n = 1
        while name in self.arrays or name == "__metadata__":
            name = f"{base}#{n}"
            n += 1
        self.arrays[name] = arr
        if ident is not None:
            self._seen[ident] = name
        return name


def _identity(data):
    """What makes two arrays the same data: address, layout and dtype for NumPy, the object otherwise."""
    if isinstance(data, np.ndarray):
        return (data.__array_interface__["data"][0], data.shape, data.strides, data.dtype.str)
    return id(data)


def _where(path) -> str:
    return "the object" if not path else "entry " + ".".join(str(p) for p in path)


class Decoder:
    """Rebuilds an object from a node tree; ``fetch(kind, name, device_str)`` makes each stored value once."""

    def __init__(self, fetch, names, where):
        self._fetch = fetch
        self._names = names
        self._where = where
        self._made: dict = {}

    def _bad(self, problem):
        raise CheckpointError(f"cannot load {self._where}: the ember metadata does not match the file: {problem}")

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list) or not isinstance(node, dict) or len(node) not in (1, 2):
            self._bad(f"unexpected node {node!r:.100}")
        if "tensor" in node or "ndarray" in node or "npscalar" in node:
            return self._stored(node)
        if len(node) != 1:
            self._bad(f"unexpected node {node!r:.100}")
        (tag, value), = node.items()
        if tag in _CONTAINERS:
            if not isinstance(value, list):
                self._bad(f"{tag} node holds {type(value).__name__}, expected a list")
            if tag in ("list", "tuple"):
                items = [self.decode(v) for v in value]
                return items if tag == "list" else tuple(items)
            out = OrderedDict() if tag == "odict" else {}
            for pair in value:
                if not isinstance(pair, list) or len(pair) != 2:
                    self._bad(f"dict item {pair!r:.100} is not a [key, value] pair")
                key = self.decode(pair[0])
                try:
                    out[key] = self.decode(pair[1])
                except TypeError:
                    self._bad(f"dict key {key!r:.100} is not hashable")
            return out
        if tag == "float" and value in _NONFINITE:
            return _NONFINITE[value]
        if tag == "dtype" and isinstance(value, str) and value in dt._BY_NAME:
            return dt._BY_NAME[value]
        if tag == "device" and isinstance(value, str):
            try:
                return _device_cls(value)
            except (TypeError, ValueError) as exc:
                self._bad(f"invalid device {value!r:.50}: {exc}")
        self._bad(f"unexpected node {node!r:.100}")

    def _stored(self, node):
        kind = next(k for k in ("tensor", "ndarray", "npscalar") if k in node)
        name = node[kind]
        dev = node.get("device", "cpu")
        if set(node) - {kind, "device"} or not isinstance(name, str) or not isinstance(dev, str):
            self._bad(f"unexpected node {node!r:.100}")
        if name not in self._names:
            self._bad(f"it refers to tensor {name!r:.100}, which the file does not hold")
        key = (kind, name)
        if key not in self._made:
            self._made[key] = self._fetch(kind, name, dev)
        return self._made[key]


def references(node, out: set) -> set:
    """The file keys a node tree refers to (validated later by :class:`Decoder`)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            for kind in ("tensor", "ndarray", "npscalar"):
                if isinstance(n.get(kind), str):
                    out.add(n[kind])
            stack.extend(n.values())
        elif isinstance(n, list):
            stack.extend(n)
    return out


def select(node, keys, where):
    """The part of a node tree that ``keys`` (top-level or dotted dict entries) name; lists are kept whole."""
    wanted = [str(k) for k in keys]
    found = set()

    def prune(n, prefix):
        if not (isinstance(n, dict) and len(n) == 1 and ("dict" in n or "odict" in n)):
            return None
        tag = "dict" if "dict" in n else "odict"
        kept = []
        for pair in n[tag]:
            if not (isinstance(pair, list) and len(pair) == 2):
                continue
            k, v = pair
            if isinstance(k, dict) or isinstance(k, list):
                continue
            path = f"{prefix}{k}"
            hits = [w for w in wanted if w == path]
            if hits:
                found.update(hits)
                kept.append(pair)
            elif any(w.startswith(path + ".") for w in wanted):
                sub = prune(v, path + ".")
                if sub is not None:
                    kept.append([k, sub])
        return {tag: kept}

    result = prune(node, "")
    missing = [w for w in wanted if w not in found]
    if missing:
        raise KeyError(f"{where} has no entry {missing[0]!r} (keys= names top-level entries or dotted paths "
                       f"through nested dicts, e.g. 'model_state_dict' or 'model_state_dict.fc.weight')")
    return result
