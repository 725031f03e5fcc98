"""The adagrad optimizer."""

__all__: list = []
