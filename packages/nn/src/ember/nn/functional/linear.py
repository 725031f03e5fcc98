"""linear and bilinear: affine maps, as F.linear and F.bilinear."""

__all__: list = []
