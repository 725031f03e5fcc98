"""Normalisation as ops: batch_norm, layer_norm, group_norm."""

__all__: list = []
