"""The adamw optimizer."""

__all__: list = []
