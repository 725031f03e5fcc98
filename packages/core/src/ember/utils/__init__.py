"""Small utilities: ``ember.utils.hooks`` (the handle every ``register_*hook`` returns),
``ember.utils.checkpoint`` (activation checkpointing) and :func:`find_max_batch_size`.

``ember.utils.checkpoint`` is loaded with the rest of ``ember`` (by ``ember._api``). The tensor and the graph
nodes take their hook handles from ``ember._hooks`` (re-exported as ``ember.utils.hooks``), not from this
package, whose functions build on them.
"""
from . import hooks
from .batch_size import BatchSizeSearch, find_max_batch_size

__all__ = ["hooks", "find_max_batch_size", "BatchSizeSearch"]
