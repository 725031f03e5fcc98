"""``DataParallel``: one process, a batch split over several devices, the module replicated on each.

Each call scatters the inputs along ``dim`` over ``device_ids``, replicates the module onto those devices
(:func:`~ember.parallel.replicate`), runs the replicas in threads (:func:`~ember.parallel.parallel_apply`) and
gathers the outputs on ``output_device``. Everything is differentiable, so ``loss.backward()`` on the gathered
output accumulates into the original module's parameters the gradients single-device training would give ("the
rest is the same as a normal model"); only layers that use batch statistics (BatchNorm in training mode) differ,
since each replica normalises its own slice of the batch, as in PyTorch.
"""
from __future__ import annotations

import ember
from ember.nn import Module

from ._devices import default_device_type, device_count, resolve_device, resolve_devices, same_device
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter_kwargs

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Data parallelism in one process: ``DataParallel(module, device_ids=None, output_device=None, dim=0)``.

    ``device_ids`` defaults to every device of the default type (CUDA's when available, else the CPU backend's
    logical devices ``cpu:0`` ... ``cpu:N-1``, ``EMBER_CPU_DEVICES=N``); entries are int indices, device strings
    such as ``'cpu:1'`` or ``ember.device`` objects. ``module`` must have its parameters and buffers on
    ``device_ids[0]``; ``output_device`` (default ``device_ids[0]``) receives the gathered output. As in
    PyTorch, a batch with fewer rows than devices runs on the first ``len(batch)`` devices only, buffers
    (BatchNorm's running statistics) are updated by the replica on ``device_ids[0]`` only, and the wrapped
    model is ``self.module``, so ``state_dict()`` keys start with ``module.``.

    ``device_ids`` is kept as a list of int indices and ``output_device`` as an ``ember.device``.

    >>> import ember
    >>> from ember import nn
    >>> ember.backends.cpu.set_device_count(2)
    >>> model = nn.Linear(3, 1)
    >>> parallel_model = nn.DataParallel(model)  # the rest is the same as a normal model
    >>> parallel_model(ember.ones(4, 3)).sum().backward()
    >>> model.weight.grad.tolist(), list(parallel_model.state_dict())
    ([[4.0, 4.0, 4.0]], ['module.weight', 'module.bias'])
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel() expects an ember.nn.Module to wrap, got {type(module).__name__}")
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"DataParallel(dim=...) must be an int, got {dim!r}")
        if device_ids is None:
            device_type = default_device_type()
            device_ids = [ember.device(device_type, i) for i in range(device_count(device_type))]
        devices = resolve_devices(device_ids, "device_ids")
        self.module = module
        self.dim = dim
        self.device_ids = [d.index for d in devices]
        self.src_device_obj = devices[0]
        self.output_device = devices[0] if output_device is None else resolve_device(output_device, "output_device")
        self._devices = devices

    def _check_module_device(self) -> None:
        src = self.src_device_obj
        for kind, named in (("parameter", self.module.named_parameters()), ("buffer", self.module.named_buffers())):
            for name, t in named:
                if not same_device(t.device, src):
                    raise RuntimeError(f"module must have its parameters and buffers on device {src} "
                                       f"(device_ids[0]) but found one of them on device: {t.device} ({kind} "
                                       f"'{name}'); move the module there first with module.to('{src}')")

    def forward(self, *inputs, **kwargs):
        self._check_module_device()
        inputs, kwargs = scatter_kwargs(inputs, kwargs, self._devices, self.dim)
        if not inputs and not kwargs:  # a module called without arguments still runs once
            inputs, kwargs = ((),), ({},)
        if len(self._devices) == 1:
            return self.module(*inputs[0], **kwargs[0])
        devices = self._devices[:len(inputs)]
        replicas = replicate(self.module, devices, not ember.is_grad_enabled())
        outputs = parallel_apply(replicas, inputs, kwargs, devices)
        return gather(outputs, self.output_device, self.dim)
