"""Dropout as ops: dropout, feature (channel) dropout."""

__all__: list = []
