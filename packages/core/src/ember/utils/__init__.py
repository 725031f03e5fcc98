"""Small utilities: ``ember.utils.hooks`` (the handle every ``register_*hook`` returns),
``ember.utils.checkpoint`` (activation checkpointing) and :func:`find_max_batch_size`.

``ember.utils.checkpoint`` is loaded with the rest of ``ember`` (by ``ember._api``), not here: it builds on
``ember.autograd``, whose graph nodes import ``ember.utils.hooks``, so importing it here would be a cycle.
"""
from . import hooks
from .batch_size import BatchSizeSearch, find_max_batch_size

__all__ = ["hooks", "find_max_batch_size", "BatchSizeSearch"]
