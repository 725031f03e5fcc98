"""Small utilities shared by ember's distributions (``ember.utils.hooks``: the handle every ``register_*hook``
returns)."""
from . import hooks

__all__ = ["hooks"]
