"""The sgd optimizer."""

__all__: list = []
