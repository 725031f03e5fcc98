"""embedding (with padding_idx) and one_hot."""

__all__: list = []
