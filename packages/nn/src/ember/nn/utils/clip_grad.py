"""clip_grad_norm_ and clip_grad_value_."""

__all__: list = []
