"""``replicate(module, devices)``: a copy of a module on each device whose parameters are differentiable copies.

As in PyTorch, a replica is a shallow copy of each submodule (same class, hooks, flags and plain attributes)
whose parameters are ``param.to(device)``: tensors with a ``grad_fn`` leading back to the original
parameter, so that a backward pass through any replica accumulates into the original parameter's ``.grad``.
On the device the parameter already lives on the replica uses the parameter itself; likewise buffers there
are the original buffers, so in-place updates (BatchNorm's running statistics) made by the replica on that
device reach the original module, and those made on other devices are lost (as in PyTorch).

A replica's ``parameters()`` is empty: its weights are plain attributes, not registered parameters; train the
original module.

>>> import ember
>>> from ember import nn
>>> from ember.parallel import replicate
>>> ember.backends.cpu.set_device_count(2)
>>> lin = nn.Linear(2, 1)
>>> r0, r1 = replicate(lin, ["cpu:0", "cpu:1"])
>>> r0.weight is lin.weight, str(r1.weight.device), r1.weight.grad_fn is not None
(True, 'cpu:1', True)
>>> r1(ember.ones(3, 2, device="cpu:1")).sum().backward()
>>> lin.weight.grad.tolist()
[[3.0, 3.0]]
"""
from __future__ import annotations

import ember
from ember.nn import Module

from ._devices import resolve_devices

__all__ = ["replicate"]


def _shallow_copy(module: Module) -> Module:
    """A new instance of ``module``'s class sharing its attributes, with registries of its own to fill."""
    replica = module.__new__(type(module))
    state = module.__dict__.copy()
    state.update(_parameters={}, _buffers=dict(module._buffers), _modules=dict(module._modules))
    object.__setattr__(replica, "__dict__", state)
    return replica


def _copy_to(t, device, detach: bool):
    if t is None:
        return None
    if detach or not t.requires_grad:
        with ember.no_grad():
            moved = t.to(device)
        return moved.detach() if detach and moved is t else moved
    return t.to(device)


def replicate(network, devices, detach=False):
    """One replica of ``network`` (an ``ember.nn.Module``) per entry of ``devices``, in order.

    Shared parameters and submodules stay shared within each replica. With ``detach=True`` the replicas'
    parameters are detached copies (no gradient flows back).

    >>> import ember
    >>> from ember import nn
    >>> from ember.parallel import replicate
    >>> ember.backends.cpu.set_device_count(2)
    >>> [str(r[0].weight.device) for r in replicate(nn.Sequential(nn.Linear(2, 2)), [1, 0])]
    ['cpu:1', 'cpu']
    """
    if not isinstance(network, Module):
        raise TypeError(f"replicate() expects an ember.nn.Module, got {type(network).__name__}")
    devices = resolve_devices(devices, "devices")
    modules = list(network.modules())
    replicas = []
    for device in devices:
        tensors = {}  # id(original) -> its copy on this device, so that shared tensors stay shared

        def copy(t, device=device, tensors=tensors):
            if t is None:
                return None
            if id(t) not in tensors:
                tensors[id(t)] = _copy_to(t, device, detach)
            return tensors[id(t)]

        copies = {id(m): _shallow_copy(m) for m in modules}
        for module in modules:
            replica = copies[id(module)]
            for key, child in module._modules.items():
                replica._modules[key] = None if child is None else copies[id(child)]
            for key, param in module._parameters.items():
                object.__setattr__(replica, key, copy(param))
            for key, buf in module._buffers.items():
                replica._buffers[key] = copy(buf)
        replicas.append(copies[id(network)])
    return replicas
