"""ember.nn: modules, layers, losses and initialisation with PyTorch's names.

>>> import ember
>>> from ember import nn
>>> nn.Sequential(nn.Linear(4, 2), nn.ReLU())(ember.ones(3, 4)).shape
ember.Size([3, 2])
"""
import importlib as _importlib

from . import callbacks, functional, init, models, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import *  # noqa: F401,F403

#: names that ember-parallel (a distribution above ember-nn) provides under ``ember.nn``, as PyTorch has them
_FROM_PARALLEL = ("DataParallel", "parallel")


def __getattr__(name):
    """``ember.nn.DataParallel`` and ``ember.nn.parallel`` (PEP 562): ember-parallel sits above ember-nn, so
    ``ember.nn.parallel`` (which imports ``ember.parallel``) is imported only when one of these names is asked
    for, never with ``ember.nn``."""
    if name not in _FROM_PARALLEL:
        raise AttributeError(f"module 'ember.nn' has no attribute '{name}'")
    try:
        parallel = _importlib.import_module("ember.nn.parallel")
    except ModuleNotFoundError as exc:
        if exc.name != "ember.parallel":
            raise  # ember-parallel is there but something it needs is not: show that
        raise AttributeError(f"ember.nn.{name} is provided by the ember-parallel distribution, which is not "
                             "installed: pip install ember-parallel") from exc
    return parallel if name == "parallel" else getattr(parallel, name)
