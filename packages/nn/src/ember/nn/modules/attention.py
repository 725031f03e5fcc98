"""MultiheadAttention."""

__all__: list = []
