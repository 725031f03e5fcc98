"""``scatter`` a batch over devices and ``gather`` the replicas' outputs back, as ``torch.nn.parallel`` does.

Both are differentiable: the pieces are ``chunk`` views moved with ``.to(device)``, and the gathered output is
``ember.cat`` of the pieces moved to the target device, so the gradient of the gathered output flows back to
each piece and on to the original input. A piece already on its device is not copied (a tensor on ``'cpu'``
stays there for ``'cpu:0'``: both name the same memory).

>>> import ember
>>> from ember.parallel import gather, scatter
>>> ember.backends.cpu.set_device_count(2)
>>> pieces = scatter(ember.arange(6.0).reshape(3, 2), ["cpu:0", "cpu:1"])
>>> [(tuple(p.shape), str(p.device)) for p in pieces]
[((2, 2), 'cpu'), ((1, 2), 'cpu:1')]
>>> gather(pieces, "cpu:0").tolist()
[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
"""
from __future__ import annotations

import warnings

import ember

from ._devices import resolve_device, resolve_devices

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def _scatter_tensor(t, devices, dim):
    return [piece.to(dev) for piece, dev in zip(t.chunk(len(devices), dim), devices)]


def scatter(inputs, target_gpus, dim=0):
    """Split every tensor in ``inputs`` into ``len(target_gpus)`` chunks along ``dim`` and move chunk ``i`` to
    device ``i``; tuples, lists, dicts and named tuples are walked, other objects are given to every device as
    they are. Returns one entry per device that got a chunk.

    As in PyTorch, a batch with fewer rows than devices gives fewer entries (one per row), and only the
    first devices are used. ``target_gpus`` takes int indices, device strings or ``ember.device`` objects.

    >>> import ember
    >>> from ember.parallel import scatter
    >>> ember.backends.cpu.set_device_count(2)
    >>> [(tuple(x.shape), flag) for x, flag in scatter((ember.zeros(4, 3), True), [0, 1])]
    [((2, 3), True), ((2, 3), True)]
    """
    devices = resolve_devices(target_gpus, "target_gpus")

    def scatter_map(obj):
        if isinstance(obj, ember.Tensor):
            return _scatter_tensor(obj, devices, dim)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in devices]

    return scatter_map(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """:func:`scatter` for a call's positional ``inputs`` (a tuple) and ``kwargs`` (a dict): two tuples of equal
    length, one ``(args, kwargs)`` pair per device.

    >>> import ember
    >>> from ember.parallel import scatter_kwargs
    >>> ember.backends.cpu.set_device_count(2)
    >>> args, kwargs = scatter_kwargs((ember.zeros(2, 1),), {"scale": 2}, [0, 1])
    >>> len(args), kwargs
    (2, ({'scale': 2}, {'scale': 2}))
    """
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def _gather_tensors(tensors, target, dim):
    if all(t.dim() == 0 for t in tensors) and dim == 0:
        warnings.warn("Was asked to gather along dimension 0, but all input tensors were scalars; will instead "
                      "unsqueeze and return a vector.", stacklevel=4)
        tensors = [t.reshape(1) for t in tensors]
    return ember.cat([t.to(target) for t in tensors], dim)


def gather(outputs, target_device, dim=0):
    """Concatenate the replicas' ``outputs`` (one per device, each a tensor or a tuple, list, dict or named tuple
    of them) along ``dim`` on ``target_device``; ``-1`` means the CPU, as in PyTorch.

    >>> import ember
    >>> from ember.parallel import gather
    >>> ember.backends.cpu.set_device_count(2)
    >>> out = gather([{"y": ember.ones(1)}, {"y": ember.zeros(1, device="cpu:1")}], "cpu:1")
    >>> out["y"].tolist(), str(out["y"].device)
    ([1.0, 0.0], 'cpu:1')
    """
    target = ember.device("cpu") if target_device == -1 else resolve_device(target_device, "target_device")

    def gather_map(outs):
        out = outs[0]
        if isinstance(out, ember.Tensor):
            return _gather_tensors(outs, target, dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        if _is_namedtuple(out):
            return type(out)(*map(gather_map, zip(*outs)))
        return type(out)(map(gather_map, zip(*outs)))

    return gather_map(outputs)
