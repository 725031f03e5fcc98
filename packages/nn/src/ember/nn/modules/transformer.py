"""Transformer and its encoder and decoder stacks and layers, with PyTorch's submodule names (so state-dict keys
match), arguments, masks and initialisation.

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

from ember import Tensor, bool_, full, triu, zeros_like

from .. import functional as F
from .. import init
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder",
           "Transformer"]


def _activation_function(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None):
    return triu(full((sz, sz), float("-inf"), dtype=dtype, device=device), diagonal=1)


def _canonical_mask(mask, name: str, dtype):
    """A boolean mask (True = ignore) as PyTorch's float mask (-inf where True, 0 elsewhere); float masks stay."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name} must be a Tensor (bool or floating point) or None, got {type(mask).__name__}")
    if mask.dtype == bool_:
        return zeros_like(mask, dtype=dtype).masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _seq_len(src, batch_first: bool) -> int:
    """The sequence length of ``src``: ``(S, E)`` unbatched, else ``(S, N, E)`` or ``(N, S, E)``."""
    if src.dim() == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal, size: int) -> bool:
    """PyTorch's rule: ``is_causal`` when given; when None, whether ``mask`` equals the causal float mask."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    causal = _generate_square_subsequent_mask(size, device=mask.device, dtype=mask.dtype)
    return tuple(mask.shape) == tuple(causal.shape) and bool((mask == causal).all())


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
    ``(S, E)``); the masks are those of :class:`MultiheadAttention` (bool, True =
    ignore, or float, added to the scores).

    >>> import ember
    >>> layer = ember.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    >>> layer(ember.randn(5, 3, 8)).shape
    ember.Size([5, 3, 8])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation=F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
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
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", src.dtype)
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
    layers in turn with the same masks; with ``is_causal=None`` the layers are told
    the mask is causal when it equals :meth:`Transformer.generate_square_subsequent_mask`
    (as PyTorch detects it). ``enable_nested_tensor`` and ``mask_check`` are accepted
    for PyTorch compatibility; ember has no nested tensors, so padded positions are
    always computed (and masked). PyTorch's nested-tensor fast path (eval mode without
    gradients, ``batch_first``, a key padding mask) returns zeros at padded positions
    instead; the unpadded positions agree.

    >>> import ember
    >>> encoder = ember.nn.TransformerEncoder(ember.nn.TransformerEncoderLayer(8, 2, 16), num_layers=2)
    >>> encoder(ember.randn(5, 3, 8)).shape
    ember.Size([5, 3, 8])
    """

    def __init__(self, encoder_layer, num_layers: int, norm=None, enable_nested_tensor: bool = True,
                 mask_check: bool = True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False  # ember has no nested tensors
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", src.dtype)
        mask = _canonical_mask(mask, "mask", src.dtype)
        first = self.layers[0] if len(self.layers) else None
        batch_first = bool(getattr(getattr(first, "self_attn", None), "batch_first", False))
        is_causal = _detect_is_causal_mask(mask, is_causal, _seq_len(src, batch_first))
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's output (``memory``), then a feed-forward block; each with
    dropout, a residual connection and LayerNorm.

    ``norm_first=False`` (post-norm): ``x = norm1(x + sa(x))``, ``x = norm2(x + mha(x, memory))``,
    ``x = norm3(x + ff(x))``; ``norm_first=True`` (pre-norm): ``x = x + sa(norm1(x))``,
    ``x = x + mha(norm2(x), memory)``, ``x = x + ff(norm3(x))``. Submodules as PyTorch's:
    ``self_attn``, ``multihead_attn``, ``linear1``, ``dropout``, ``linear2``, ``norm1..3``,
    ``dropout1..3`` (and ``activation`` when it is a module).

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False)``.

    >>> import ember
    >>> layer = ember.nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
    >>> layer(ember.randn(3, 4, 8), ember.randn(3, 6, 8)).shape
    ember.Size([3, 4, 8])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation=F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation_function(activation) if isinstance(activation, str) else activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Module):
    """A stack of ``num_layers`` deep copies of ``decoder_layer`` (``layers.0``, ...), then ``norm``.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False)`` runs the
    layers in turn on ``tgt`` with the same ``memory`` and masks; with ``tgt_is_causal=None``
    the layers are told ``tgt_mask`` is causal when it equals the causal float mask.

    >>> import ember
    >>> decoder = ember.nn.TransformerDecoder(ember.nn.TransformerDecoderLayer(8, 2, 16), num_layers=2)
    >>> decoder(ember.randn(4, 3, 8), ember.randn(6, 3, 8)).shape
    ember.Size([4, 3, 8])
    """

    def __init__(self, decoder_layer, num_layers: int, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal: bool = False):
        first = self.layers[0] if len(self.layers) else None
        batch_first = bool(getattr(getattr(first, "self_attn", None), "batch_first", False))
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, _seq_len(tgt, batch_first))
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                           memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder Transformer ("Attention Is All You Need"), as ``torch.nn.Transformer``.

    ``encoder`` is a :class:`TransformerEncoder` of ``num_encoder_layers`` layers with a
    final LayerNorm (or ``custom_encoder``), ``decoder`` likewise; every parameter with
    more than one dimension is then drawn again with :func:`~ember.nn.init.xavier_uniform_`
    (PyTorch's ``_reset_parameters``), in ``parameters()`` order.

    ``forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None,
    src_is_causal=None, tgt_is_causal=None, memory_is_causal=False)``: ``src`` ``(S, N, E)``,
    ``tgt`` ``(T, N, E)`` (``(N, S, E)``/``(N, T, E)`` with ``batch_first``; unbatched
    ``(S, E)``/``(T, E)``); returns ``(T, N, E)``. Masks: ``src_mask`` ``(S, S)``, ``tgt_mask``
    ``(T, T)``, ``memory_mask`` ``(T, S)`` (or with ``N * nhead`` in front), key padding masks
    ``(N, S)``/``(N, T)``; bool (True = ignore) or float (added to the scores).

    >>> import ember
    >>> model = ember.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
    ...                              dim_feedforward=16, batch_first=True)
    >>> src, tgt = ember.randn(3, 5, 8), ember.randn(3, 4, 8)
    >>> model(src, tgt, tgt_mask=model.generate_square_subsequent_mask(4)).shape
    ember.Size([3, 4, 8])
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation=F.relu, custom_encoder=None, custom_decoder=None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                    layer_norm_eps, batch_first, norm_first, bias, **factory)
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                    layer_norm_eps, batch_first, norm_first, bias, **factory)
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        batch_dim = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The causal mask for a sequence of ``sz``: ``-inf`` above the diagonal (a position may not attend to
        later ones), ``0.0`` on and below it; float32 (the default dtype) unless ``dtype`` is given.

        >>> import ember
        >>> ember.nn.Transformer.generate_square_subsequent_mask(3)
        tensor([[0., -inf, -inf],
                [0., 0., -inf],
                [0., 0., 0.]])
        """
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
