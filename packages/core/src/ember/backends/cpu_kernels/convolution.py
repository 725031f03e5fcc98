"""NumPy kernels for the convolution ops (strided windows and one matrix multiply)."""

KERNELS: dict = {}
