"""Embedding."""

__all__: list = []
