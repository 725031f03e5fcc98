"""normalize, cosine_similarity, pairwise_distance."""

__all__: list = []
