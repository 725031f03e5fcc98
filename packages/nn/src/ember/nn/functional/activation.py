"""Activation functions with PyTorch's functional signatures (inplace=..., implicit softmax dim)."""

__all__: list = []
