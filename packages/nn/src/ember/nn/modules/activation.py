"""Activation modules: ReLU, LeakyReLU, ELU, GELU, SiLU, Tanh, Sigmoid, Softplus, Softmax, LogSoftmax, ..."""

__all__: list = []
