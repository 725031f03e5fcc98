"""Module: the base class of every layer and model, its registries, hooks and state dict."""

__all__: list = []
