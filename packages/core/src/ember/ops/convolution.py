"""Convolutions as ops: conv1d, conv2d, conv_transpose1d, conv_transpose2d."""

__all__: list = []
