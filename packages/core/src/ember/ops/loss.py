"""Losses as ops: mse, l1, smooth_l1, huber, cross_entropy, nll, binary_cross_entropy (with logits), kl_div."""

__all__: list = []
