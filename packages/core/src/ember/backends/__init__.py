"""Device backends. :class:`Backend` is the contract; ``cpu`` (NumPy) is built in, ``cuda`` (CuPy) is a plugin of
ember-core. ``cuda``, ``cudnn`` and ``mps`` hold PyTorch's switches and availability checks of the same names."""
from . import cuda, cudnn, mps
from .backend import Backend

__all__ = ["Backend", "cuda", "cudnn", "mps"]
