"""``default_collate`` and ``default_convert``: samples into batches, NumPy into tensors.

``default_collate`` turns a list of samples into one batch with the structure
of a sample: tensors, NumPy arrays and numbers become stacked tensors, strings
stay strings, and dicts, namedtuples and lists are rebuilt around their collated
fields, at any depth. ``collate(batch, collate_fn_map=...)`` is the same walk
with a table of per-type functions that a user can extend for their own types.

>>> import ember
>>> from ember.data import default_collate
>>> batch = default_collate([(ember.tensor([1.0, 2.0]), 0, "cat"), (ember.tensor([3.0, 4.0]), 1, "dog")])
>>> batch
[tensor([[1., 2.],
        [3., 4.]]), tensor([0, 1]), ('cat', 'dog')]
"""
from __future__ import annotations

import collections.abc as cabc
import copy

import numpy as np

import ember
from ember import Tensor
from ember._sibling_api import from_array, uniform_arrays

__all__ = ["default_collate", "default_convert"]

_UNSUPPORTED = ("default_collate: batch must contain tensors, numpy arrays, numbers, strings, dicts or lists; "
                "found {}")
#: NumPy dtype kinds that cannot become tensors: byte strings, unicode strings, Python objects, records
_NOT_NUMERIC = frozenset("SUOV")


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples) by the structure of its first sample.

    ``collate_fn_map`` maps a type (or a tuple of types) to a function
    ``fn(batch, *, collate_fn_map)`` that collates a batch of samples of that
    type; the exact type is looked up first, then each key by ``isinstance``
    in the map's order. Mappings, namedtuples and other sequences are walked
    into; anything else that no entry matches is a ``TypeError``.

    Collating a type of your own, with the built-in rules for everything else:

    >>> import ember
    >>> from ember.data.collate import collate, default_collate_fn_map
    >>> class Point:
    ...     def __init__(self, x, y): self.x, self.y = x, y
    >>> def collate_points(batch, *, collate_fn_map=None):
    ...     return ember.tensor([[p.x, p.y] for p in batch])
    >>> collate([{"p": Point(1, 2), "label": 0}, {"p": Point(3, 4), "label": 1}],
    ...         collate_fn_map={**default_collate_fn_map, Point: collate_points})
    {'p': tensor([[1, 2],
            [3, 4]]), 'label': tensor([0, 1])}
    """
    try:
        elem = batch[0]
    except IndexError:
        raise IndexError("default_collate: the batch is empty; expected a list of at least one sample") from None
    elem_type = type(elem)
    if collate_fn_map is not None:
        fn = collate_fn_map.get(elem_type)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
        for types, fn in collate_fn_map.items():
            if isinstance(elem, types):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, cabc.Mapping):
        return _rebuild_mapping(elem, {key: collate(_column(batch, key), collate_fn_map=collate_fn_map)
                                       for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple keeps its type
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, cabc.Sequence) and not isinstance(elem, (str, bytes)):
        if len(set(map(len, batch))) != 1:
            size = len(elem)
            i = next(i for i, sample in enumerate(batch) if len(sample) != size)
            raise RuntimeError(f"each element in list of batch should be of equal size (sample 0 has {size} "
                               f"elements, sample {i} has {len(batch[i])})")
        collated = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        return collated if isinstance(elem, tuple) else _rebuild_sequence(elem, collated)
    raise TypeError(_UNSUPPORTED.format(elem_type))


def _column(batch, key):
    try:
        return [sample[key] for sample in batch]
    except KeyError:
        missing = next((i for i, sample in enumerate(batch) if key not in sample), None)
        if missing is None:  # the key is there, the mapping itself failed: its own error says more
            raise
        raise KeyError(f"default_collate: sample {missing} of the batch has no key {key!r}, which the first "
                       "sample has; every sample must have the first sample's keys") from None


def _rebuild_mapping(like, values: dict):
    """``values`` in a mapping of ``like``'s type where one can be made that way, else the dict itself."""
    if type(like) is dict:
        return values
    try:
        if isinstance(like, cabc.MutableMapping):
            clone = copy.copy(like)  # keeps what the constructor needs (a defaultdict's default factory)
            clone.update(values)
            return clone
        return type(like)(values)
    except TypeError:  # the type cannot be built from a dict
        return values


def _rebuild_sequence(like, values: list):
    """``values`` in a sequence of ``like``'s type where one can be made that way, else the list itself."""
    if type(like) is list:
        return values
    try:
        if isinstance(like, cabc.MutableSequence):
            clone = copy.copy(like)
            for i, v in enumerate(values):
                clone[i] = v
            return clone
        return type(like)(values)
    except TypeError:  # e.g. range(list)
        return values


# -- the built-in per-type functions -------------------------------------------------------------------------

def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Tensors stacked on a new first dimension (``ember.stack``, so autograd and dtype promotion apply).

    CPU tensors of one dtype and shape that need no gradient take a fast path:
    one join of their arrays' bytes, wrapped in a tensor.
    """
    first = batch[0]
    device = first.device if isinstance(first, Tensor) else None
    arrays = uniform_arrays(batch) if device is not None and device.type == "cpu" else None
    if arrays is None:  # (ember.stack names an odd one out)
        return ember.stack(batch)
    return from_array(_stack(arrays, arrays[0].shape), device, first.dtype)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """NumPy arrays as one stacked tensor (strings and objects are a ``TypeError``, as in PyTorch)."""
    first = batch[0]
    if first.dtype.kind in _NOT_NUMERIC:
        raise TypeError(_UNSUPPORTED.format(first.dtype))
    dtype, shape = first.dtype, first.shape
    for a in batch:
        if not isinstance(a, np.ndarray) or a.dtype is not dtype or a.shape != shape:
            return collate([ember.as_tensor(a) for a in batch], collate_fn_map=collate_fn_map)
    return ember.from_numpy(_stack(batch, shape))


def _stack(arrays, shape):
    """``np.stack(arrays)`` for arrays of one dtype and ``shape``, with less overhead per array.

    Joining the arrays' bytes is one copy each and about twice as fast as
    NumPy's stacking for a few hundred small arrays (the usual batch); arrays
    that are not C-contiguous have no flat buffer and go to NumPy instead.
    """
    try:
        flat = np.frombuffer(bytearray().join(arrays), arrays[0].dtype)  # a bytearray is writable
    except TypeError:  # strided arrays
        return np.stack(arrays)
    return flat.reshape((len(arrays),) + shape)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    """NumPy scalars (``np.float32(1.5)``, ``np.bool_(True)``) as a 1-d tensor of their dtype."""
    arr = np.asarray(batch)
    if arr.dtype.kind in _NOT_NUMERIC:
        raise TypeError(_UNSUPPORTED.format(arr.dtype))
    return ember.from_numpy(arr)


def collate_float_fn(batch, *, collate_fn_map=None):
    """Python floats as a float64 tensor (they are double precision)."""
    arr = np.array(batch)
    return ember.from_numpy(arr) if arr.dtype is _FLOAT64 else ember.tensor(batch, dtype=ember.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    """Python ints as an int64 tensor; bools as a bool tensor (mixed with floats: ``ember.tensor``'s dtype)."""
    arr = np.array(batch)
    return ember.from_numpy(arr) if arr.dtype is _INT64 else ember.tensor(batch)


_FLOAT64, _INT64 = np.dtype(np.float64), np.dtype(np.int64)


def collate_str_fn(batch, *, collate_fn_map=None):
    """Strings and bytes stay as they are: the batch is the list of them."""
    return batch


#: the built-in rules of :func:`default_collate`; copy and extend it for :func:`collate`
default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number): collate_numpy_scalar_fn,  # before float: np.float64 is a float too
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """A list of samples as one batch: the DataLoader's ``collate_fn`` unless you give your own.

    Each leaf of the samples' structure is collated across the batch: tensors
    and NumPy arrays of one shape are stacked (``[B, *shape]``), NumPy scalars
    become a tensor of their dtype, Python floats a float64 tensor, ints an
    int64 tensor, bools a bool tensor, and strings/bytes stay as they are, in the
    batch's own container (a list; a tuple for the fields of tuple or list samples,
    as in PyTorch). A dict
    (any ``Mapping``) keeps its keys and, where it can be rebuilt, its type; a
    namedtuple keeps its type; a tuple becomes a list; other sequences keep
    their type where it can be rebuilt and must all have the same length.

    >>> import ember, numpy as np
    >>> from ember.data import default_collate
    >>> default_collate([{"x": np.zeros(2, np.float32), "y": 1.5}, {"x": np.ones(2, np.float32), "y": 2.5}])
    {'x': tensor([[0., 0.],
            [1., 1.]]), 'y': tensor([1.5000, 2.5000], dtype=ember.float64)}
    >>> default_collate([[1, 2], [3, 4]])
    [tensor([1, 3]), tensor([2, 4])]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """NumPy arrays and scalars in ``data`` as tensors, keeping the structure; the ``collate_fn`` without batching.

    The DataLoader uses it when automatic batching is off (``batch_size=None``).
    Mappings, namedtuples and sequences are walked into (a tuple becomes a list,
    as in PyTorch); NumPy arrays of strings or objects, NumPy string scalars and
    everything else are returned unchanged.

    >>> import numpy as np
    >>> from ember.data import default_convert
    >>> default_convert((np.arange(3), 7, "id"))
    [tensor([0, 1, 2]), 7, 'id']
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, (np.ndarray, np.generic)):
        return data if data.dtype.kind in _NOT_NUMERIC else ember.as_tensor(data)
    if isinstance(data, cabc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple):
        converted = [default_convert(d) for d in data]
        return type(data)(*converted) if hasattr(data, "_fields") else converted
    if isinstance(data, cabc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data
