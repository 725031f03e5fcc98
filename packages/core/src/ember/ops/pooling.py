"""Pooling as ops: max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d."""

__all__: list = []
