"""Convolution layers: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d."""

__all__: list = []
