"""``ember.nn.parallel``: PyTorch's ``torch.nn.parallel`` path to the data parallelism of ember-parallel.

ember-parallel, a distribution above ember-nn, provides these classes and functions; this module re-exports
them under PyTorch's path and, when ember-parallel is not installed, says which distribution to install.
Importing ``ember.nn`` never imports it.

>>> from ember.nn.parallel import DistributedDataParallel as DDP
>>> import ember.parallel
>>> DDP is ember.parallel.DistributedDataParallel
True
"""
try:
    from ember.parallel import (
        DataParallel,
        DistributedDataParallel,
        gather,
        parallel_apply,
        replicate,
        scatter,
        scatter_kwargs,
    )
except ModuleNotFoundError as exc:
    if exc.name != "ember.parallel":
        raise  # ember-parallel is there but something it needs is not: show that
    raise ModuleNotFoundError("ember.nn.parallel is provided by the ember-parallel distribution, which is not "
                              "installed: pip install ember-parallel", name="ember.parallel") from exc

__all__ = ["DataParallel", "DistributedDataParallel", "scatter", "scatter_kwargs", "gather", "replicate",
           "parallel_apply"]
