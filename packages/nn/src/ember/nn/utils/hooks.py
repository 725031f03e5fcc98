"""``RemovableHandle``: what every ``register_*_hook`` returns (ember-core's, under nn's name as well)."""
from ember.utils.hooks import RemovableHandle

__all__ = ["RemovableHandle"]
