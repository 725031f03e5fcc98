"""NumPy-only kernels of the CPU backend, one module per op family, each with a ``KERNELS`` dict."""
from ...ops import _recurrent_numpy
from . import convolution, pooling


def kernels() -> dict:
    """``{op_name: kernel}`` for every op the CPU backend runs with its own NumPy kernel."""
    return {**convolution.KERNELS, **pooling.KERNELS, **_recurrent_numpy.KERNELS}
