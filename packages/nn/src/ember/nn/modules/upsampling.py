"""Upsample and padding layers built on interpolate and pad."""

__all__: list = []
