"""Device backends. :class:`Backend` is the contract; ``cpu`` (NumPy) is built in."""
from .backend import Backend

__all__ = ["Backend"]
