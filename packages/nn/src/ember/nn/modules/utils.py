"""Helpers of PyTorch's ``torch.nn.modules.utils``: the argument normalisers ``_single``, ``_pair``, ``_triple``,
``_quadruple`` (which layers and user code import to accept ``3`` as well as ``(3, 3)``) and state-dict helpers.

>>> from ember.nn.modules.utils import _pair, _single
>>> _pair(3), _pair([1, 2]), _single((4,))
((3, 3), (1, 2), (4,))
"""
from __future__ import annotations

from collections.abc import Iterable, MutableMapping

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse"):
    """A function that turns a single value into an ``n``-tuple of it and any iterable into a tuple of its items
    (a str too, as in PyTorch); the length of an iterable is not checked."""
    def parse(x):
        if isinstance(x, Iterable):
            return tuple(x)
        return (x,) * n

    parse.__name__ = parse.__qualname__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """``t`` reversed, each item repeated ``n`` times: conv padding ``(pH, pW)`` as ``F.pad``'s ``(pW, pW, pH, pH)``.

    >>> _reverse_repeat_tuple((1, 2), 2)
    (2, 2, 1, 1)
    """
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """An adaptive pool's ``output_size`` with each None replaced by the matching trailing item of ``defaults``
    (the input's size); an int comes back as it is.

    >>> _list_with_default([None, 3], (5, 6, 7, 8))
    [7, 3]
    """
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict: MutableMapping, prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` that start with it, in place.

    A wrapper such as ``DistributedDataParallel`` or ``DataParallel`` holds the model as its submodule
    ``module``, so its state dict's keys start with ``"module."``; strip that prefix to load the checkpoint
    into the bare model. Keys without the prefix stay as they are. As in PyTorch, each stripped entry is
    popped and inserted again, so it moves after the keys that had no prefix (a stripped key that already
    existed keeps its place and takes the stripped entry's value). The per-module metadata that
    ``state_dict()`` keeps in ``state_dict._metadata`` is renamed the same way: the wrapped model's own entry
    (the prefix without its final ``"."``) becomes the root entry ``""``, for a nested prefix such as
    ``"module.module."`` too (PyTorch compares that entry with the prefix stripped of every ``"."`` and so
    leaves it behind).

    >>> from collections import OrderedDict
    >>> from ember.nn.modules.utils import consume_prefix_in_state_dict_if_present
    >>> sd = OrderedDict([("module.0.weight", 1), ("module.0.bias", 2), ("step", 3)])
    >>> consume_prefix_in_state_dict_if_present(sd, "module.")
    >>> list(sd)
    ['step', '0.weight', '0.bias']
    """
    if not isinstance(state_dict, MutableMapping):
        raise TypeError(f"consume_prefix_in_state_dict_if_present: state_dict must be a mutable mapping (a dict or "
                        f"the OrderedDict that state_dict() returns), got {type(state_dict).__name__}")
    if not isinstance(prefix, str):
        raise TypeError(f"consume_prefix_in_state_dict_if_present: prefix must be a str such as 'module.', got "
                        f"{type(prefix).__name__}")
    _strip(state_dict, prefix, lambda key: key.startswith(prefix))
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        own = prefix[:-1] if prefix.endswith(".") else prefix
        # '' is the wrapper's own entry, which the wrapped model's (``own``) replaces
        _strip(metadata, prefix, lambda key: key != "" and (key == own or key.startswith(prefix)))


def _strip(mapping: MutableMapping, prefix: str, matches) -> None:
    for key in [k for k in mapping if matches(k)]:
        mapping[key[len(prefix):]] = mapping.pop(key)
