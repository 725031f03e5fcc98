"""NumPy kernels for the pooling ops (strided windows)."""

KERNELS: dict = {}
