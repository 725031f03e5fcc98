"""Flatten and Unflatten."""

__all__: list = []
