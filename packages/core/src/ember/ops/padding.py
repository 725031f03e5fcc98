"""pad: constant, reflect, replicate and circular padding of the last dimensions."""

__all__: list = []
