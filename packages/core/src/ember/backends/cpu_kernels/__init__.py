"""NumPy-only kernels of the CPU backend, one module per op family, each with a ``KERNELS`` dict."""
from . import activation, convolution, normalization, pooling, recurrent


def kernels() -> dict:
    """``{op_name: kernel}`` for every op the CPU backend runs with its own NumPy kernel."""
    return {**activation.KERNELS, **convolution.KERNELS, **normalization.KERNELS, **pooling.KERNELS,
            **recurrent.KERNELS}
