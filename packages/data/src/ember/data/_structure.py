"""Rebuilding a container of a batch around new contents (shared by the shared-memory transport and pinning)."""
from __future__ import annotations

from .collate import _rebuild_mapping, _rebuild_sequence


def is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def rebuild(like, items):
    """A container of ``like``'s type (dict, namedtuple, list, tuple or a subclass) holding ``items``
    (``(key, value)`` pairs for a mapping), or the plain dict or list where that type cannot be made."""
    if isinstance(like, dict):
        return _rebuild_mapping(like, dict(items))
    if is_namedtuple(like):
        return type(like)(*items)
    return _rebuild_sequence(like, list(items))


def map_leaves(obj, leaf):
    """``obj`` with ``leaf(x)`` in place of every ``x`` that is not a list, tuple or dict (nested any depth)."""
    if isinstance(obj, (list, tuple)):
        return rebuild(obj, [map_leaves(x, leaf) for x in obj])
    if isinstance(obj, dict):
        return rebuild(obj, [(k, map_leaves(v, leaf)) for k, v in obj.items()])
    return leaf(obj)
