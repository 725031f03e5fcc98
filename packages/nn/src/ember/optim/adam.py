"""The adam optimizer."""

__all__: list = []
