"""Multi-process pipeline parallelism with ``torch.distributed.pipelining``'s names: each stage of a model is a rank,
exchanging activations forward and gradients backward with ``ember.distributed`` send/recv, run micro-batch by
micro-batch by a GPipe or 1F1B schedule.

>>> from ember.parallel.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
>>> ScheduleGPipe.order(stage_index=1, num_stages=2, n_microbatches=2)
['F0', 'F1', 'B0', 'B1']
"""
from .schedules import PipelineScheduleSingle, Schedule1F1B, ScheduleGPipe
from .stage import PipelineStage

__all__ = ["PipelineStage", "PipelineScheduleSingle", "ScheduleGPipe", "Schedule1F1B"]
