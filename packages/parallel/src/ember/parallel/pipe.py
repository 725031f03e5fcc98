"""``Pipe``: pipeline parallelism in one process (GPipe), with ``torch.distributed.pipeline.sync.Pipe``'s options.

An ``nn.Sequential`` is cut into stages, each on its own device; the batch is cut into ``chunks`` micro-batches
that flow through the stages on GPipe's clock-cycle schedule: at clock ``k`` stage ``j`` works on micro-batch
``k - j``, all stages of a clock at the same time in their own threads (NumPy releases the GIL in its
kernels). Activations cross devices with ``.to(device)``, so one ``backward`` on the output brings every
stage's gradients back, equal to the unpipelined model's (batch statistics aside: a BatchNorm layer sees
micro-batches). The output is the micro-batches' outputs concatenated on the last stage's device.
"""
from __future__ import annotations

import functools
from collections import OrderedDict

import ember
from ember.nn import Module, ModuleList, Sequential

from ._checkpoint import checkpoint_stage
from ._devices import default_device_type, device_count, resolve_device, resolve_devices
from ._threads import run_in_threads

__all__ = ["Pipe"]

_CHECKPOINT = ("always", "except_last", "never")


def _layer_device(name, layer):
    """The one device holding ``layer``'s parameters and buffers, or None when it has none."""
    devices = {f"{t.device.type}:{t.device.index or 0}" for t in (*layer.parameters(), *layer.buffers())}
    if len(devices) > 1:
        raise ValueError(f"layer '{name}' has parameters or buffers on several devices ({', '.join(sorted(devices))})"
                         ": a layer is a stage's smallest piece and must live on one device; move it with "
                         "layer.to(device), or pass balance= to let Pipe place the layers")
    return resolve_device(devices.pop(), f"the device of layer '{name}'") if devices else None


def _split_by_placement(layers):
    """Stages from where the layers already live: consecutive layers on one device form a stage; a layer without
    parameters or buffers joins the stage before it (or the first one)."""
    balance, devices = [], []
    for name, layer in layers:
        dev = _layer_device(name, layer)
        if dev is not None and (not devices or dev != devices[-1]):
            balance.append(0)
            devices.append(dev)
        if not balance:  # leading layers without parameters: they go with the first stage
            balance.append(0)
            devices.append(None)
        balance[-1] += 1
    if devices and devices[0] is None:
        devices[0] = devices[1] if len(devices) > 1 else ember.device(default_device_type(), 0)
        if len(devices) > 1:
            balance[:2] = [balance[0] + balance[1]]
            devices.pop(1)
    return balance, devices


def _even_balance(n_layers, n_stages):
    base, extra = divmod(n_layers, n_stages)
    return [base + (1 if i < extra else 0) for i in range(n_stages)]


class Pipe(Module):
    """``Pipe(module, chunks=1, checkpoint="except_last", balance=None, devices=None)``: ``module`` (an
    ``nn.Sequential``) run as a GPipe pipeline over devices.

    Where the stages go:

    - ``balance`` (a list of layer counts, one per stage, summing to ``len(module)``) and optional ``devices``
      (default: the first ``len(balance)`` devices of the default type; CUDA's when available, else the CPU
      backend's logical devices): Pipe moves the layers there;
    - ``devices`` alone: the layers are split as evenly as possible over them, in order;
    - neither: as PyTorch's Pipe, the layers are already placed (``layer.to('cpu:1')``), and each run of
      consecutive layers on one device is a stage.

    ``chunks`` is the number of micro-batches (a batch with fewer rows gives fewer). ``checkpoint`` is
    ``"always"`` (recompute every stage's activations in backward instead of keeping them), ``"except_last"``
    (all micro-batches but the last; PyTorch's default) or ``"never"``; nothing is checkpointed when gradients
    are off. Unlike PyTorch's Pipe, which returns an RPC ``RRef``, ``forward`` returns the output tensor.
    ``partitions`` (an ``nn.ModuleList`` of ``nn.Sequential`` stages), ``devices`` and ``balance`` describe the
    split; ``len(pipe)``, ``pipe[i]`` and iteration go over the layers as on the ``Sequential``.

    >>> import ember
    >>> from ember import nn
    >>> from ember.parallel import Pipe
    >>> ember.backends.cpu.set_device_count(2)
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> pipe = Pipe(model, chunks=2, balance=[2, 1], devices=["cpu:0", "cpu:1"])
    >>> out = pipe(ember.ones(6, 4))
    >>> out.shape, str(out.device), [str(d) for d in pipe.devices]
    (ember.Size([6, 2]), 'cpu:1', ['cpu:0', 'cpu:1'])
    >>> out.sum().backward()
    >>> str(model[0].weight.grad.device)
    'cpu'
    """

    def __init__(self, module, chunks=1, checkpoint="except_last", balance=None, devices=None):
        super().__init__()
        if not isinstance(module, Sequential):
            raise TypeError(f"Pipe expects an ember.nn.Sequential whose layers become the stages, got "
                            f"{type(module).__name__}")
        if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks <= 0:
            raise ValueError(f"number of chunks must be a positive integer, got {chunks!r}")
        if checkpoint not in _CHECKPOINT:
            raise ValueError(f"checkpoint is not one of 'always', 'except_last', or 'never', got {checkpoint!r}")
        layers = list(module.named_children())
        if not layers:
            raise ValueError("Pipe needs a Sequential with at least one layer")
        if balance is None and devices is None:
            balance, devices = _split_by_placement(layers)
        else:
            devices = self._devices_for(balance, devices, len(layers))
            if balance is None:
                balance = _even_balance(len(layers), len(devices))
            devices = devices[:len(balance)]
        self.chunks, self.checkpoint = chunks, checkpoint
        self.balance, self.devices = list(balance), devices
        stages, start = [], 0
        for count, device in zip(balance, devices):
            stages.append(Sequential(OrderedDict(layers[start:start + count])).to(device))
            start += count
        self.partitions = ModuleList(stages)
        self._check_no_shared_parameters()

    @staticmethod
    def _devices_for(balance, devices, n_layers):
        if balance is not None:
            if not isinstance(balance, (list, tuple)) or not balance or any(
                    isinstance(b, bool) or not isinstance(b, int) or b <= 0 for b in balance):
                raise ValueError(f"balance must be a non-empty list of positive ints (layers per stage), got "
                                 f"{balance!r}")
            if sum(balance) != n_layers:
                raise ValueError(f"balance {list(balance)} sums to {sum(balance)}, but the module has {n_layers} "
                                 "layers: the balance must give every layer to one stage")
        if devices is None:
            device_type = default_device_type()
            devices = [ember.device(device_type, i) for i in range(device_count(device_type))]
            if len(devices) < len(balance):
                raise ValueError(f"balance {list(balance)} has {len(balance)} stages but only {len(devices)} "
                                 f"{device_type} device(s) exist; set EMBER_CPU_DEVICES=N or "
                                 "ember.backends.cpu.set_device_count(N), or pass devices=")
            return devices
        devices = resolve_devices(devices, "devices")
        if balance is not None and len(devices) < len(balance):
            raise ValueError(f"balance {list(balance)} has {len(balance)} stages but devices has only "
                             f"{len(devices)}: give one device per stage")
        if balance is None and len(devices) > n_layers:
            devices = devices[:n_layers]
        return devices

    def _check_no_shared_parameters(self):
        owner = {}
        for j, stage in enumerate(self.partitions):
            for name, t in (*stage.named_parameters(), *stage.named_buffers()):
                if owner.setdefault(id(t), (j, name))[0] != j:
                    raise ValueError(f"'{name}' of stage {j} is shared with '{owner[id(t)][1]}' of stage "
                                     f"{owner[id(t)][0]}: a tensor can live on one stage's device only")

    # -- the layers, as on the Sequential ----------------------------------------------------------------------
    def __len__(self):
        return sum(len(stage) for stage in self.partitions)

    def __iter__(self):
        for stage in self.partitions:
            yield from stage

    def __getitem__(self, index):
        layers = list(self)
        return layers[index]

    # -- the schedule -----------------------------------------------------------------------------------------
    def forward(self, input):
        if not isinstance(input, ember.Tensor):
            raise TypeError(f"Pipe's input must be a Tensor (the batch, split along dim 0), got "
                            f"{type(input).__name__}")
        if input.dim() == 0 or input.shape[0] == 0:
            raise ValueError(f"Pipe needs a batch of at least one row along dim 0, got input of size {input.shape}")
        micro = list(input.chunk(self.chunks, 0))
        n_micro, n_stages = len(micro), len(self.partitions)
        grad_enabled = ember.is_grad_enabled()
        stop = {"always": n_micro, "except_last": n_micro - 1, "never": 0}[self.checkpoint] if grad_enabled else 0
        for clock in range(n_micro + n_stages - 1):
            tasks = [(clock - j, j) for j in range(n_stages) if 0 <= clock - j < n_micro]
            self._run_clock(tasks, micro, stop)
        return ember.cat(micro, 0)

    def _run_clock(self, tasks, micro, stop):
        """Run stage ``j`` on micro-batch ``i`` for every ``(i, j)`` in ``tasks``, one thread each."""
        def work(i, j):
            x = micro[i].to(self.devices[j])
            stage = self.partitions[j]
            micro[i] = checkpoint_stage(stage, x) if i < stop else stage(x)

        where = [f"stage {j} on device {self.devices[j]}, micro-batch {i}" for i, j in tasks]
        run_in_threads([functools.partial(work, i, j) for i, j in tasks], where, "ember-pipe-stage")
