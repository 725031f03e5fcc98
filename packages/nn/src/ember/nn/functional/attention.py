"""scaled_dot_product_attention and multi_head_attention_forward."""

__all__: list = []
