"""TransformerEncoderLayer and TransformerEncoder, with PyTorch's submodule names (so state-dict keys match).

>>> import ember
>>> from ember import nn
>>> _ = ember.manual_seed(0)
>>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
>>> encoder = nn.TransformerEncoder(layer, num_layers=2)
>>> encoder(ember.randn(3, 5, 8)).shape
ember.Size([3, 5, 8])
>>> [key for key in encoder.state_dict() if key.startswith("layers.1.self_attn")]
['layers.1.self_attn.in_proj_weight', 'layers.1.self_attn.in_proj_bias', 'layers.1.self_attn.out_proj.weight', \
'layers.1.self_attn.out_proj.bias']
"""
from __future__ import annotations

import copy

from .. import functional as F
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder"]


def _activation_function(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with dropout, a residual connection and LayerNorm.

    ``norm_first=False`` (post-norm, the original Transformer):
    ``x = norm1(x + sa(x))``, ``x = norm2(x + ff(x))``; ``norm_first=True`` (pre-norm):
    ``x = x + sa(norm1(x))``, ``x = x + ff(norm2(x))``, where
    ``ff(x) = dropout2(linear2(dropout(activation(linear1(x)))))`` and
    ``sa(x) = dropout1(self_attn(x, x, x)[0])``. ``activation`` is ``"relu"``,
    ``"gelu"`` or any callable (a module given here becomes the submodule ``activation``).

    ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``:
    ``src`` is ``(S, N, E)`` (``(N, S, E)`` with ``batch_first``, or unbatched
    ``(S, E)``); the masks are those of :class:`MultiheadAttention`.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation_function(activation) if isinstance(activation, str) else activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer`` (``layers.0``, ``layers.1``, ...), then ``norm``.

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)`` runs the
    layers in turn with the same masks. ``enable_nested_tensor`` and ``mask_check``
    are accepted for PyTorch compatibility; ember has no nested tensors, so padded
    positions are always computed (and masked).
    """

    def __init__(self, encoder_layer, num_layers: int, norm=None, enable_nested_tensor: bool = True,
                 mask_check: bool = True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        if self.norm is not None:
            output = self.norm(output)
        return output
