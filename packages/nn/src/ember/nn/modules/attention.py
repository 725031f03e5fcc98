"""MultiheadAttention, with PyTorch's parameters, initialisation, masks and shapes.

>>> import ember
>>> from ember import nn
>>> _ = ember.manual_seed(0)
>>> mha = nn.MultiheadAttention(8, 2, batch_first=True)
>>> mha
MultiheadAttention(
  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)
)
>>> x = ember.randn(3, 5, 8)
>>> out, weights = mha(x, x, x)
>>> out.shape, weights.shape
(ember.Size([3, 5, 8]), ember.Size([3, 5, 5]))
"""
from __future__ import annotations

from ember import Tensor, empty

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["MultiheadAttention"]


def _sequence_first(query, key, value):
    """``(N, L, E) -> (L, N, E)`` for each; a tensor passed twice is transposed once, so that
    self-attention is still recognised (``query is key is value``) and projected in one matmul."""
    same_qk, same_kv = query is key, key is value
    query = query.transpose(1, 0)
    key = query if same_qk else key.transpose(1, 0)
    value = key if same_kv else value.transpose(1, 0)
    return query, key, value


class MultiheadAttention(Module):
    """Attention over ``num_heads`` subspaces of ``embed_dim`` features, as ``torch.nn.MultiheadAttention``.

    Parameters: ``in_proj_weight`` ``[3E, E]`` (or ``q_proj_weight`` ``[E, E]``,
    ``k_proj_weight`` ``[E, kdim]``, ``v_proj_weight`` ``[E, vdim]`` when ``kdim`` or
    ``vdim`` differ from ``embed_dim``), ``in_proj_bias`` ``[3E]``, ``out_proj`` (a
    Linear), and with ``add_bias_kv`` ``bias_k`` and ``bias_v`` ``[1, 1, E]``.
    Projection weights start xavier-uniform, the in/out biases zero.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False)`` takes ``(L, N, E)``
    inputs (``(N, L, E)`` with ``batch_first``, or unbatched ``(L, E)``) and returns
    ``(attn_output, attn_weights)``; see
    :func:`ember.nn.functional.multi_head_attention_forward` for masks and shapes.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")

        def param(*shape):
            return Parameter(empty(shape, device=device, dtype=dtype))

        if self._qkv_same_embed_dim:
            self.in_proj_weight = param(3 * embed_dim, embed_dim)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = param(embed_dim, embed_dim)
            self.k_proj_weight = param(embed_dim, self.kdim)
            self.v_proj_weight = param(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = param(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = param(1, 1, embed_dim)
            self.bias_v = param(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        for t, name in ((query, "query"), (key, "key"), (value, "value")):
            if not isinstance(t, Tensor):
                raise TypeError(f"MultiheadAttention: expected {name} to be a Tensor, got {type(t).__name__}")
        batched = query.dim() == 3
        if self.batch_first and batched:
            query, key, value = _sequence_first(query, key, value)
        separate = not self._qkv_same_embed_dim
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights
