"""ember.parallel: DataParallel, model and pipeline parallelism."""
from .pipelining import PipelineScheduleSingle, PipelineStage, Schedule1F1B, ScheduleGPipe  # noqa: F401
