"""ember.parallel: DataParallel, model and pipeline parallelism."""
from .distributed import DistributedDataParallel  # noqa: F401  (issue 15, branch ddp)
from .sync_batchnorm import SyncBatchNorm  # noqa: F401  (issue 15, branch ddp)
from .zero import ZeroRedundancyOptimizer  # noqa: F401  (issue 15, branch ddp)
