"""ember.parallel: data, model and pipeline parallelism, with ``torch.nn.parallel``'s names.

- :class:`DataParallel`: a batch scattered over devices, the module replicated, replicas run in threads, the
  outputs gathered; also ``ember.nn.DataParallel``. Its pieces are functions too: :func:`scatter`,
  :func:`scatter_kwargs`, :func:`gather`, :func:`replicate`, :func:`parallel_apply`.
- :class:`Pipe`: an ``nn.Sequential`` cut into stages on devices, micro-batches flowing through them on GPipe's
  schedule (stages in threads), optional activation checkpointing.
- :class:`PipelineStage`, :class:`ScheduleGPipe`, :class:`Schedule1F1B`: a pipeline whose stages are ranks of a
  process group, exchanging activations and gradients with ``ember.distributed.send``/``recv``
  (``torch.distributed.pipelining``'s names).
- :class:`DistributedDataParallel`: one process per device, gradients averaged over ranks in buckets during
  backward; :class:`SyncBatchNorm` (batch statistics over ranks) and :class:`ZeroRedundancyOptimizer` (optimizer
  state sharded over ranks) go with it; ``comm_hooks`` compress what it sends.
- Model parallelism needs nothing from here: put the parts of a module on devices and call ``.to(device)`` in
  ``forward``; autograd carries the gradients back (``examples/model_parallel_resnet50.py``).

Without GPUs, the CPU backend's logical devices stand in for them (``EMBER_CPU_DEVICES=2`` or
``ember.backends.cpu.set_device_count(2)`` gives ``cpu:0`` and ``cpu:1``).

>>> import ember
>>> from ember import nn, parallel
>>> ember.backends.cpu.set_device_count(2)
>>> parallel.DataParallel(nn.Linear(2, 2), device_ids=["cpu:0", "cpu:1"])(ember.ones(4, 2)).shape
ember.Size([4, 2])
"""
from .data_parallel import DataParallel
from .distributed import DistributedDataParallel
from .parallel_apply import parallel_apply
from .pipe import Pipe
from .pipelining import PipelineScheduleSingle, PipelineStage, Schedule1F1B, ScheduleGPipe
from .replicate import replicate
from .scatter_gather import gather, scatter, scatter_kwargs
from .sync_batchnorm import SyncBatchNorm
from .zero import ZeroRedundancyOptimizer

__all__ = ["DataParallel", "Pipe", "scatter", "scatter_kwargs", "gather", "replicate", "parallel_apply",
           "PipelineStage", "PipelineScheduleSingle", "ScheduleGPipe", "Schedule1F1B", "DistributedDataParallel",
           "SyncBatchNorm", "ZeroRedundancyOptimizer"]
