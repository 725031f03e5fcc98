"""Rebuilding an object from a checkpoint's node tree (see :mod:`._structure` for the nodes), refusing hostile ones.

Nothing in the tree is ever run: classes and functions are looked up by import
path under the allow-list of :mod:`._globals`; an object is made without its
class's ``__new__`` or ``__init__`` (as ``copyreg`` does: ``object.__new__(cls)``,
or the ``__new__`` of its first built-in base) and gets its attributes put
straight into its ``__dict__``, unless its class declares
``__ember_setstate__(state)``, which is then called with them (the one method
of a class that loading calls; ``__setstate__``, ``__reduce__`` and
``__init__`` never are). A tree nesting deeper than ``MAX_DEPTH``, an object
inside itself, an attribute with a dunder name, a class path that is not
allowed or not a class: each raises :class:`~ember.errors.CheckpointError`
naming the file.
"""
from __future__ import annotations

import math
from collections import Counter, OrderedDict, defaultdict

from .. import _dtype as dt
from .._device import device as _device_cls
from .._sibling_api import share_storage
from .._size import Size
from ..errors import CheckpointError
from ._globals import Refused, resolve
from ._structure import FACTORIES, MAX_DEPTH, defined_in_python

__all__ = ["Decoder", "references", "select"]

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_V1_CONTAINERS = ("list", "tuple", "dict", "odict")
_V2_CONTAINERS = ("set", "frozenset", "counter")
_STORED = ("tensor", "ndarray", "npscalar")
#: (kind, version >= 2) -> the fields a node of stored data may have
_FIELDS = {(kind, v2): frozenset({kind, "device", "view"} | ({"class", "requires_grad"} if v2 and kind == "tensor"
                                                           else set()))
           for kind in _STORED for v2 in (False, True)}
_BUILDING = object()  # the entry of an object whose attributes are being rebuilt
#: the bound on a view's offset, sizes and strides (in elements): 8-byte elements' byte strides still fit NumPy's
_MAX_INDEX = 2 ** 59
#: how many keys of one dict or set may share a hash: more is a hash-flooding attack (Python's int hash is not
#: randomized: ``i * (2**61 - 1)`` all hash to 0), which would make building the container quadratic
MAX_SAME_HASH = 64


class Decoder:
    """Rebuilds an object from a node tree; ``fetch(kind, name, device_str, view)`` makes each stored array once.

    ``version`` is the file's format version (a version-1 file may hold only
    version-1 nodes); ``weights_only`` chooses the allow-list that class paths
    are looked up in (see :func:`._globals.resolve`).
    """

    def __init__(self, fetch, names, where, version=1, weights_only=True):
        self._fetch = fetch
        self._names = names
        self._where = where
        self._v2 = version >= 2
        self._weights_only = weights_only
        self._made: dict = {}
        self._objects: dict = {}  # object node id -> the object (or _BUILDING while its attributes are made)
        self._globals: dict = {}  # (path, kind) -> what it names
        self._depth = 0

    def _bad(self, problem):
        raise CheckpointError(f"cannot load {self._where}: the ember metadata does not match the file: {problem}")

    def _refuse(self, problem):
        raise CheckpointError(f"cannot load {self._where}: {problem}")

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or not node:
            self._bad(f"unexpected node {node!r:.100}")
        if any(k in node for k in _STORED):
            return self._stored(node)
        if self._v2 and ("object" in node or "defaultdict" in node):
            return self._nested(self._object if "object" in node else self._defaultdict, node)
        if len(node) != 1:
            self._bad(f"unexpected node {node!r:.100}")
        (tag, value), = node.items()
        if tag in _V1_CONTAINERS or (self._v2 and tag in _V2_CONTAINERS):
            return self._nested(self._container, tag, value)
        if tag == "float" and isinstance(value, str) and value in _NONFINITE:
            return _NONFINITE[value]
        if tag == "dtype" and isinstance(value, str) and value in dt._BY_NAME:
            return dt._BY_NAME[value]
        if tag == "device" and isinstance(value, str):
            try:
                return _device_cls(value)
            except (TypeError, ValueError) as exc:
                self._bad(f"invalid device {value!r:.50}: {exc}")
        if self._v2:
            if tag == "size" and isinstance(value, list) and all(type(n) is int and n >= 0 for n in value):
                return Size(value)
            if tag == "global":
                return self._global(value, "global")
            if tag == "ref":
                return self._ref(value)
        self._bad(f"unexpected node {node!r:.100}")

    def _nested(self, build, *args):
        if self._depth >= MAX_DEPTH:
            self._refuse(f"the structure nests more than {MAX_DEPTH} levels deep (ember's limit for containers "
                         "and objects inside one another)")
        self._depth += 1
        try:
            return build(*args)
        finally:
            self._depth -= 1

    # -- containers ---------------------------------------------------------------------------------------------
    def _container(self, tag, value):
        if not isinstance(value, list):
            self._bad(f"{tag} node holds {type(value).__name__}, expected a list")
        if tag in ("list", "tuple"):
            items = [self.decode(v) for v in value]
            return items if tag == "list" else tuple(items)
        if tag in ("set", "frozenset"):
            items: set = set()
            same: dict = {}
            for v in value:
                item = self.decode(v)
                self._new_key(items, item, same, "set element")
                items.add(item)
            return items if tag == "set" else frozenset(items)
        out = {"odict": OrderedDict, "counter": Counter}.get(tag, dict)()
        self._fill(out, value)
        return out

    def _defaultdict(self, node):
        name = node.get("factory")
        factory = FACTORIES.get(name) if isinstance(name, str) else None
        if set(node) != {"defaultdict", "factory"} or factory is None or not isinstance(node["defaultdict"], list):
            self._bad(f"invalid defaultdict node {node!r:.100} (the factory must be one of {sorted(FACTORIES)})")
        out: defaultdict = defaultdict(factory)
        self._fill(out, node["defaultdict"])
        return out

    def _fill(self, out, pairs):
        same: dict = {}
        for pair in pairs:
            if not isinstance(pair, list) or len(pair) != 2:
                self._bad(f"dict item {pair!r:.100} is not a [key, value] pair")
            key = self.decode(pair[0])
            self._new_key(out, key, same, "dict key")
            out[key] = self.decode(pair[1])

    def _new_key(self, container, key, same, what):
        """Check that ``key`` can go into ``container`` in constant time; ``same`` counts its keys per hash."""
        try:
            h = hash(key)
        except TypeError:
            self._bad(f"{what} {key!r:.100} is not hashable")
        n = same.get(h, 0)
        if n >= MAX_SAME_HASH:
            self._refuse(f"more than {MAX_SAME_HASH} keys of one dict or set have the same hash as {what} "
                         f"{key!r:.50} (a hash-flooding pattern that would make loading take quadratic time)")
        if key not in container:  # (at most MAX_SAME_HASH comparisons)
            same[h] = n + 1

    # -- classes, functions and objects -------------------------------------------------------------------------
    def _global(self, path, kind):
        key = (path if isinstance(path, str) else repr(path), kind)
        found = self._globals.get(key)
        if found is None:
            try:
                found = self._globals[key] = resolve(path, kind, self._weights_only)
            except Refused as exc:
                self._refuse(str(exc))
        return found

    def _ref(self, n):
        obj = self._objects.get(n) if type(n) is int else None
        if obj is None:
            self._bad(f"{{'ref': {n!r:.20}}} refers to no object defined before it (with keys=, load the entry "
                      "that holds that object too)")
        if obj is _BUILDING:
            self._refuse(f"the structure has a cycle: object {n} contains itself (ember checkpoints are trees in "
                         "which an object may be shared but never nested in itself)")
        return obj

    def _object(self, node):
        n, attrs = node.get("id"), node.get("attrs")
        if set(node) != {"object", "id", "attrs"} or type(n) is not int or not isinstance(attrs, dict):
            self._bad(f"invalid object node {node!r:.100} (expected 'object', an int 'id' and 'attrs')")
        if n in self._objects:
            self._bad(f"object id {n} is defined twice")
        for name in attrs:
            if name.startswith("__") and name.endswith("__"):
                self._refuse(f"object {node['object']!r:.100} would set attribute {name!r:.50}: dunder attributes "
                             "are never set from a file")
        cls = self._global(node["object"], "object")
        self._objects[n] = _BUILDING
        state = {name: self.decode(value) for name, value in attrs.items()}
        self._objects[n] = obj = self._build(cls, state)
        return obj

    def _build(self, cls, state):
        """An instance of ``cls`` with attributes ``state``: no ``__new__``/``__init__`` of ``cls`` runs."""
        name = f"{cls.__module__}.{cls.__qualname__}"
        base = next(b for b in cls.__mro__ if not defined_in_python(b))
        try:
            obj = object.__new__(cls) if base is object else base.__new__(cls)
            setstate = getattr(cls, "__ember_setstate__", None)  # the class's own: the file cannot name a method
            if setstate is not None:
                setstate(obj, state)
            elif cls.__dictoffset__:
                object.__getattribute__(obj, "__dict__").update(state)  # (no __getattr__ of the class runs)
            else:
                raise TypeError("its instances have no __dict__ and it declares no __ember_setstate__")
        except Exception as exc:  # the class refused these attributes: the file's problem
            self._refuse(f"could not rebuild a {name} from the file ({type(exc).__name__}: {exc})")
        return obj

    # -- stored data --------------------------------------------------------------------------------------------
    def _stored(self, node):
        kind = "tensor" if "tensor" in node else ("ndarray" if "ndarray" in node else "npscalar")
        name = node[kind]
        dev = node.get("device", "cpu")
        view = node.get("view")
        cls_path, grad = node.get("class"), node.get("requires_grad", False)
        if (not node.keys() <= _FIELDS[kind, self._v2] or type(name) is not str or type(dev) is not str
                or type(grad) is not bool):
            self._bad(f"unexpected node {node!r:.100}")
        if name not in self._names:
            self._bad(f"it refers to tensor {name!r:.100}, which the file does not hold")
        key = (kind, name, repr(view), repr(cls_path), grad)
        if key not in self._made:
            cls = None if cls_path is None else self._global(cls_path, "tensor")
            t = self._fetch(kind, name, dev, None if view is None else self._view(view, name))
            self._made[key] = self._tensor(t, cls, grad) if kind == "tensor" else t
        return self._made[key]

    def _tensor(self, t, cls, requires_grad):
        if cls is not None and type(t) is not cls:
            t = share_storage(cls, t)
        if requires_grad:
            try:
                t.requires_grad_(True)
            except RuntimeError as exc:
                self._bad(f"a tensor of dtype {t.dtype} cannot require grad ({exc})")
        return t

    def _view(self, view, name):
        """A checked ``(offset, shape, strides)`` of 1-D entry ``name``: inside it, and no more elements than it has.

        A view ember saves never reaches an element twice (self-overlapping views,
        such as ``expand``'s, are saved as copies), so it has at most as many
        elements as its storage: a zero-stride view cannot make a tensor larger
        than the file's data.
        """
        entry = self._names[name]
        ok = (isinstance(view, list) and len(view) == 3 and isinstance(view[1], list) and isinstance(view[2], list)
              and len(view[1]) == len(view[2]) <= 32 and len(entry.shape) == 1
              and all(type(v) is int and abs(v) < _MAX_INDEX for v in [view[0], *view[1], *view[2]])
              and all(n >= 0 for n in view[1]))
        if not ok:
            self._bad(f"invalid view {view!r:.100} of tensor {name!r:.100} (expected [offset, shape, strides] in "
                      f"elements, ints of magnitude below 2**{_MAX_INDEX.bit_length() - 1}, shape non-negative)")
        offset, shape, strides = view
        size = entry.shape[0]
        count = math.prod(shape)
        if count > size:
            self._bad(f"view {view!r:.100} of tensor {name!r:.100} has {count} elements, more than the {size} its "
                      "storage holds")
        if count:
            low = offset + sum(min(0, (n - 1) * st) for n, st in zip(shape, strides))
            high = offset + sum(max(0, (n - 1) * st) for n, st in zip(shape, strides))
            if low < 0 or high >= size:
                self._bad(f"view {view!r:.100} reaches outside tensor {name!r:.100} of {size} elements")
        elif not 0 <= offset <= size:
            self._bad(f"view {view!r:.100} starts outside tensor {name!r:.100} of {size} elements")
        return offset, tuple(shape), tuple(strides)


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
    """The part of a node tree that ``keys`` name, each a dict entry or a dotted path through nested dicts.

    A key also takes the entries it is a dotted prefix of (``'fc'`` takes
    ``'fc.weight'`` of a flat state dict); lists and tuples are kept whole.
    """
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
            hits = [w for w in wanted if path == w or path.startswith(w + ".")]  # 'fc' takes 'fc.weight' too
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
