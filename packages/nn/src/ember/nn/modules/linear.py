"""Identity, Linear, Bilinear."""

__all__: list = []
