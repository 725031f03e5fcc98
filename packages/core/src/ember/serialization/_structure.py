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

Version 2 (written only when one of these is needed, so that a plain
checkpoint stays readable by version-1 readers) adds:

- ``{"set": [...]}``, ``{"frozenset": [...]}``, ``{"size": [2, 3]}``
  (``ember.Size``), ``{"counter": [[key, value], ...]}``,
  ``{"defaultdict": [[key, value], ...], "factory": "dict"}`` (the factory one
  of :data:`FACTORIES`);
- on a tensor node, ``"class": "ember.nn.parameter:Parameter"`` (a tensor
  subclass) and ``"requires_grad": true``;
- ``{"global": "package.module:Name"}``: a class or function, by import path;
- ``{"object": "package.module:Name", "id": n, "attrs": {name: node}}``: an
  instance, as its class's import path and its attributes (its ``__dict__``,
  or what the class's ``__ember_getstate__`` returns);
  ``{"ref": n}``: the same instance again (shared submodules, the optimizer's
  scheduler), always after the object node it refers to.

Containers and objects nest at most :data:`MAX_DEPTH` levels deep, and never
contain themselves (a cycle is refused when saving and when loading).
"""
from __future__ import annotations

import math
import types
from collections import Counter, OrderedDict, defaultdict

import numpy as np

from .. import _dtype as dt
from .._device import device as _device_cls
from .._size import Size
from .._tensor import Tensor
from ._globals import global_path

__all__ = ["Encoder", "MAX_DEPTH", "FACTORIES", "defined_in_python"]

#: how deep containers and objects may nest in a checkpoint (a module inside a module counts 2: the object and
#: its ``_modules`` dict)
MAX_DEPTH = 100
#: the ``default_factory`` a saved ``defaultdict`` may have
FACTORIES = {"dict": dict, "list": list, "set": set, "int": int, "float": float, "str": str, "tuple": tuple,
             "OrderedDict": OrderedDict}
_FACTORY_NAMES = {v: k for k, v in FACTORIES.items()}
_SCALAR_KEYS = (bool, int, float, str, tuple)
#: values that are code or operating-system state, never data
_NOT_DATA = (types.ModuleType, types.MethodType, types.BuiltinMethodType, types.GeneratorType, types.CodeType,
             types.FrameType, types.CoroutineType, types.AsyncGeneratorType, types.TracebackType)


def defined_in_python(cls) -> bool:
    """Whether ``cls`` is a class statement's (a mutable heap type), not a built-in or extension type."""
    return bool(cls.__flags__ & (1 << 9)) and not cls.__flags__ & (1 << 8)  # HEAPTYPE, not IMMUTABLETYPE


class Encoder:
    """Turns an object into a node tree, collecting its arrays as ``{file key: ndarray}`` in :attr:`arrays`.

    Tensors are named by their dotted path (``model_state_dict.fc.weight``);
    a tensor whose storage and layout another one already has (the same tensor
    twice, tied weights) is stored once and referenced by both. An object's
    private attributes that hold dicts add no name to the path, so a module's
    tensors get their state-dict names (``fc.weight``, not
    ``_modules.fc._parameters.weight``). :attr:`version` is the format version
    the tree needs.
    """

    def __init__(self):
        self.arrays: dict = {}
        self.version = 1
        self._seen: dict = {}    # identity of the data -> file key
        self._keep = []          # arrays whose id() is part of an identity stay alive while encoding
        self._nodes: dict = {}   # file key -> the nodes that refer to it
        self._roots: dict = {}   # (kind, id of the array owning the memory) -> file keys of views into it
        self._objects: dict = {}  # id of an object already stored -> its node id
        self._active: dict = {}  # id of each container and object being encoded (the path down to here)
        self._next_id = 0

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
            return self._tensor(obj, path)
        if isinstance(obj, np.ndarray):
            if obj.dtype == object:
                raise TypeError(f"cannot save {_where(path)}: NumPy arrays of dtype object are not data")
            return self._node({"ndarray": self._store("ndarray", obj, obj, path)})
        if isinstance(obj, np.generic):
            return {"npscalar": self._store("npscalar", None, np.asarray(obj), path)}
        if isinstance(obj, dt.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, _device_cls):
            return {"device": str(obj)}
        if isinstance(obj, Size):
            self.version = 2
            return {"size": [int(n) for n in obj]}
        if isinstance(obj, (dict, list, tuple, set, frozenset)):
            self._enter(obj, path)
            try:
                return self._container(obj, path)
            finally:
                del self._active[id(obj)]
        if isinstance(obj, type) or isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
            self.version = 2
            return {"global": global_path(obj, _where(path))}
        return self._object(obj, path)

    def _enter(self, obj, path):
        if id(obj) in self._active:
            raise ValueError(f"cannot save {_where(path)}: it contains itself (a cycle); ember.save stores trees "
                             "of containers and objects, in which an object may appear more than once but never "
                             "inside itself")
        if len(self._active) >= MAX_DEPTH:
            raise ValueError(f"cannot save {_where(path)}: containers and objects nest more than {MAX_DEPTH} "
                             "levels deep, more than ember.load accepts")
        self._active[id(obj)] = obj

    def _container(self, obj, path):
        if isinstance(obj, dict):
            if isinstance(obj, Counter):
                self.version = 2
                return {"counter": self._items(obj, path)}
            if isinstance(obj, defaultdict) and obj.default_factory in _FACTORY_NAMES:
                self.version = 2
                return {"defaultdict": self._items(obj, path), "factory": _FACTORY_NAMES[obj.default_factory]}
            return {"odict" if isinstance(obj, OrderedDict) else "dict": self._items(obj, path)}
        if isinstance(obj, (list, tuple)):
            tag = "list" if isinstance(obj, list) else "tuple"  # namedtuples come back as tuples
            return {tag: [self.encode(v, path + (i,)) for i, v in enumerate(obj)]}
        self.version = 2
        return {"set" if isinstance(obj, set) else "frozenset": [self.encode(v, path + (i,))
                                                                 for i, v in enumerate(obj)]}

    def _items(self, obj, path):
        out = []
        for i, (k, v) in enumerate(obj.items()):
            if k is not None and not isinstance(k, _SCALAR_KEYS):
                self.version = 2  # a tensor or object key (an optimizer's state is keyed by its parameters)
            step = k if k is None or isinstance(k, _SCALAR_KEYS) else f"#{i}"
            out.append([self.encode(k, path + (f"<key{i}>",)), self.encode(v, path + (step,))])
        return out

    def _tensor(self, obj, path):
        arr = obj.detach().numpy(force=True)
        node = self._node({"tensor": self._store("tensor", obj._data, arr, path), "device": str(obj.device)})
        if type(obj) is not Tensor:
            self.version = 2
            node["class"] = global_path(type(obj), _where(path))
        if obj.requires_grad:
            self.version = 2
            node["requires_grad"] = True
        return node

    def _object(self, obj, path):
        done = self._objects.get(id(obj))
        if done is not None:
            return {"ref": done}
        where = _where(path)
        cls = type(obj)
        if isinstance(obj, _NOT_DATA):
            raise TypeError(f"cannot save {where}: a {cls.__name__} is not data")
        if not defined_in_python(cls):
            raise TypeError(f"cannot save {where} of type {cls.__module__}.{cls.__qualname__}: a built-in type keeps "
                            "its state where ember.save cannot see it (only instances of classes defined in Python "
                            "are stored, as their attributes)")
        getstate = getattr(cls, "__ember_getstate__", None)
        state = getstate(obj) if getstate is not None else getattr(obj, "__dict__", None)
        if not isinstance(state, dict):
            raise TypeError(f"cannot save {where} of type {cls.__module__}.{cls.__qualname__}: ember.save stores "
                            "an object as its attributes (its __dict__), and this one has none; give the class "
                            "__ember_getstate__() returning a dict of attributes and __ember_setstate__(state)")
        name = global_path(cls, where)
        for key in state:
            if not isinstance(key, str) or (key.startswith("__") and key.endswith("__")):
                raise TypeError(f"cannot save {where}: attribute name {key!r} is not a plain name (a str, not a "
                                "dunder)")
        self.version = 2
        self._enter(obj, path)
        try:
            node_id = self._next_id
            self._next_id += 1
            attrs = {key: self.encode(value, path if key.startswith("_") and isinstance(value, dict)
                                      else path + (key,))
                     for key, value in state.items()}
        finally:
            del self._active[id(obj)]
        self._keep.append(obj)
        self._objects[id(obj)] = node_id
        return {"object": name, "id": node_id, "attrs": attrs}

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
            if isinstance(data, np.ndarray):
                self._roots.setdefault((kind, id(_owner(data))), []).append(name)
        return name

    def _node(self, node):
        name = node.get("tensor", node.get("ndarray"))
        self._nodes.setdefault(name, []).append(node)
        return node

    def finish(self) -> dict:
        """Store views of one memory block (``w`` and ``w.T``, chunks of one tensor) once; returns the arrays.

        The block's span that the views cover is stored under the first view's
        key as a 1-D array, and each view's node gets ``"view": [offset, shape,
        strides]`` in elements to rebuild it from there.
        """
        for names in self._roots.values():
            if len(names) < 2:
                continue
            span = _shared_span([self.arrays[n] for n in names])
            if span is None:
                continue
            storage, views = span
            first = names[0]
            self.arrays = {(first if k == first else k): (storage if k == first else a)
                           for k, a in self.arrays.items() if k == first or k not in names}
            for name, view in zip(names, views):
                for node in self._nodes[name]:
                    node["tensor" if "tensor" in node else "ndarray"] = first
                    node["view"] = view
        return self.arrays



def _owner(arr: np.ndarray) -> np.ndarray:
    """The outermost NumPy array whose memory ``arr`` views."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _shared_span(arrays):
    """``(storage, [[offset, shape, strides], ...])`` for views of one contiguous block, or ``None``.

    ``None`` also when the span the views cover is larger than copies of them, and when a view has more
    elements than the span (it reaches some twice, as ``expand``'s do).
    """
    root = _owner(arrays[0])
    dtype = arrays[0].dtype
    if not (root.flags.c_contiguous or root.flags.f_contiguous) or any(a.dtype != dtype for a in arrays):
        return None
    size = dtype.itemsize
    mem = root.reshape(-1, order="C" if root.flags.c_contiguous else "F").view(np.uint8)
    start = mem.__array_interface__["data"][0]
    bounds = []
    for a in arrays:
        offset = a.__array_interface__["data"][0] - start
        if any(st % size for st in a.strides) or offset % size:
            return None
        low = offset + sum(min(0, (n - 1) * st) for n, st in zip(a.shape, a.strides))
        high = offset + sum(max(0, (n - 1) * st) for n, st in zip(a.shape, a.strides)) + size
        bounds.append((offset, low, high))
    lo = min(b[1] for b in bounds)
    hi = max(b[2] for b in bounds)
    if lo < 0 or hi > mem.size or lo % size or hi - lo > sum(a.nbytes for a in arrays):
        return None  # (the last: far-apart slices of a big block are cheaper as copies)
    if any(a.nbytes > hi - lo for a in arrays):
        return None  # a view reaching elements twice (expand's): ember.load refuses views larger than their storage
    storage = mem[lo:hi].view(dtype)
    views = [[(offset - lo) // size, list(a.shape), [st // size for st in a.strides]]
             for a, (offset, _, _) in zip(arrays, bounds)]
    return storage, views


def _identity(data):
    """What makes two arrays the same data: address, layout and dtype for NumPy, the object otherwise."""
    if isinstance(data, np.ndarray):
        return (data.__array_interface__["data"][0], data.shape, data.strides, data.dtype.str)
    return id(data)


def _where(path) -> str:
    return "the object" if not path else "entry " + ".".join(str(p) for p in path)


