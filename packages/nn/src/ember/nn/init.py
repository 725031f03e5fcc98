"""Weight initialisation: uniform_, normal_, xavier_*, kaiming_*, orthogonal_, trunc_normal_, calculate_gain."""

__all__: list = []
