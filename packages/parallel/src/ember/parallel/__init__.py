"""ember.parallel: DataParallel, model and pipeline parallelism."""
