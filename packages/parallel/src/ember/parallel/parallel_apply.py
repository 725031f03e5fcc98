"""``parallel_apply(modules, inputs)``: call each module on its own inputs, one thread per module
(:func:`~ember.parallel._threads.run_in_threads`: the caller's grad mode in each; an exception in a replica is raised
again in the caller, naming the replica and its device).

>>> import ember
>>> from ember import nn
>>> from ember.parallel import parallel_apply
>>> double = nn.Linear(1, 1, bias=False)
>>> _ = nn.init.constant_(double.weight, 2.0)
>>> [y.tolist() for y in parallel_apply([double, double], [ember.ones(1, 1), ember.zeros(1, 1)])]
[[[2.0]], [[0.0]]]
"""
from __future__ import annotations

import functools

import ember

from ._threads import run_in_threads

__all__ = ["parallel_apply"]


def _device_of(inputs):
    """The device of the first tensor found in ``inputs`` (for error messages), or None."""
    if isinstance(inputs, ember.Tensor):
        return inputs.device
    items = inputs.values() if isinstance(inputs, dict) else inputs if isinstance(inputs, (list, tuple)) else ()
    for item in items:
        found = _device_of(item)
        if found is not None:
            return found
    return None


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """``[modules[i](*inputs[i], **kwargs_tup[i]) for i ...]``, computed in parallel threads.

    ``inputs[i]`` is a tuple of arguments (a single tensor is taken as one argument); ``kwargs_tup`` defaults
    to no keyword arguments; ``devices`` (optional) names each replica's device in error messages.

    >>> import ember
    >>> from ember import nn
    >>> from ember.parallel import parallel_apply
    >>> len(parallel_apply([nn.ReLU(), nn.Tanh()], [(ember.ones(2),), (ember.zeros(2),)]))
    2
    """
    modules, inputs = list(modules), list(inputs)
    if len(modules) != len(inputs):
        raise ValueError(f"parallel_apply() needs one input per module, got {len(modules)} modules and "
                         f"{len(inputs)} inputs")
    kwargs_tup = [{}] * len(modules) if kwargs_tup is None else list(kwargs_tup)
    if len(kwargs_tup) != len(modules):
        raise ValueError(f"parallel_apply() needs one kwargs dict per module, got {len(modules)} modules and "
                         f"{len(kwargs_tup)} kwargs dicts")
    devices = [None] * len(modules) if devices is None else list(devices)
    calls, where = [], []
    for i, (module, args, kwargs) in enumerate(zip(modules, inputs, kwargs_tup)):
        args = args if isinstance(args, (list, tuple)) else (args,)
        calls.append(functools.partial(module, *args, **kwargs))
        device = devices[i] if devices[i] is not None else _device_of(args)
        where.append(f"replica {i}" + (f" on device {device}" if device is not None else ""))
    return run_in_threads(calls, where, "ember-replica")
