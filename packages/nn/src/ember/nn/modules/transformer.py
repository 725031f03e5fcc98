"""TransformerEncoderLayer (and TransformerEncoder)."""

__all__: list = []
