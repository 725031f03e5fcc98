"""interpolate: nearest and (bi)linear resizing."""

__all__: list = []
