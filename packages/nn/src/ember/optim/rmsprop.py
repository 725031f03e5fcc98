"""The rmsprop optimizer."""

__all__: list = []
