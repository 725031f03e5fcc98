"""Device backends. :class:`Backend` is the contract; ``cpu`` (NumPy) is built in. ``cudnn`` and ``mps`` hold
PyTorch's switches and availability checks of the same names."""
from . import cudnn, mps
from .backend import Backend

__all__ = ["Backend", "cudnn", "mps"]
