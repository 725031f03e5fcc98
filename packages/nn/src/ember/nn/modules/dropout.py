"""Dropout layers: Dropout, Dropout1d, Dropout2d."""

__all__: list = []
