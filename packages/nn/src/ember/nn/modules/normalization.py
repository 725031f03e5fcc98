"""Normalisation layers: BatchNorm1d, BatchNorm2d, LayerNorm, GroupNorm."""

__all__: list = []
