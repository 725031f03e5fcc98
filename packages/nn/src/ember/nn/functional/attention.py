"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward`` (what MultiheadAttention runs).

Both are compositions of ember ops (batched matmuls, softmax, dropout), so
they differentiate to any order. Mask conventions are PyTorch's, which differ
between the two: for ``scaled_dot_product_attention`` a boolean mask says
where attention is *allowed* (True = keep); for ``multi_head_attention_forward``
(and ``nn.MultiheadAttention``) a boolean ``attn_mask`` or ``key_padding_mask``
says what to *ignore* (True = masked out). Float masks are added to the scores
in both.

>>> import ember
>>> import ember.nn.functional as F
>>> q = k = v = ember.ones(2, 3, 4)                 # (batch, sequence, features)
>>> F.scaled_dot_product_attention(q, k, v).shape
ember.Size([2, 3, 4])
"""
from __future__ import annotations

import math

from ember import Tensor, bmm, bool_, cat, matmul, ones, softmax, tril, zeros, zeros_like
from ember.ops.dropout import dropout

from .linear import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_NEG_INF = float("-inf")


def _safe_softmax(scores):
    """Softmax over the last dimension, giving 0 (not NaN) in rows where every score is -inf."""
    dead = scores.isneginf().all(-1, keepdim=True)
    if not dead.any():
        return softmax(scores, -1)
    # masking the -inf rows before the softmax too keeps NaN out of the backward
    return softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)


def _repeat_heads(t, groups):
    """``(..., H, S, E)`` -> ``(..., H * groups, S, E)``, each head repeated ``groups`` times in a row."""
    *lead, heads, s, e = t.shape
    return t.unsqueeze(-3).expand(*lead, heads, groups, s, e).reshape(*lead, heads * groups, s, e)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``softmax(query @ key^T * scale + mask) @ value``; ``query`` ``(..., L, E)``, ``key`` ``(..., S, E)``.

    ``value`` is ``(..., S, Ev)``; the result is ``(..., L, Ev)``. ``scale`` defaults
    to ``1 / sqrt(E)``. ``attn_mask`` broadcasts to ``(..., L, S)``: boolean (True =
    take part) or float (added to the scores). ``is_causal`` masks out keys after
    each query (the top-left triangle of ``(L, S)``). ``dropout_p`` drops attention
    weights (whatever the module mode: pass 0.0 in evaluation). ``enable_gqa`` lets
    ``key``/``value`` have fewer heads (dimension -3) than ``query``, each shared by
    a group of query heads. A query row whose keys are all masked gives zeros.

    >>> import ember
    >>> q = ember.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    >>> v = ember.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    >>> scaled_dot_product_attention(q, q, v, is_causal=True)   # first row sees only the first key
    tensor([[[1.0000, 2.0000],
             [2.3395, 3.3395]]])
    """
    for t, name in ((query, "query"), (key, "key"), (value, "value")):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        heads_q, heads_kv = query.shape[-3], key.shape[-3]
        if heads_q % heads_kv or value.shape[-3] != heads_kv:
            raise RuntimeError(f"scaled_dot_product_attention: with enable_gqa=True the number of query heads "
                               f"({heads_q}) must be a multiple of the key/value heads ({heads_kv}, {value.shape[-3]})")
        key, value = _repeat_heads(key, heads_q // heads_kv), _repeat_heads(value, heads_q // heads_kv)
    length, source = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = matmul(query * factor, key.transpose(-2, -1))
    if is_causal:
        keep = tril(ones(length, source, dtype=bool_, device=query.device))
        scores = scores.masked_fill(keep.logical_not(), _NEG_INF)
    elif attn_mask is not None:
        if attn_mask.dtype == bool_:
            scores = scores.masked_fill(attn_mask.logical_not(), _NEG_INF)
        else:
            scores = scores + attn_mask
    weights = _safe_softmax(scores) if attn_mask is not None else softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return matmul(weights, value)


# -- multi-head attention ----------------------------------------------------------------------------------
def _canonical_mask(mask, name, dtype):
    """A boolean mask (True = ignore) as the float mask PyTorch uses: -inf where True, 0 elsewhere."""
    if mask is None:
        return None
    if mask.dtype == bool_:
        return zeros_like(mask, dtype=dtype).masked_fill(mask, _NEG_INF)
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """PyTorch's rank checks for multi-head attention; True when the query is batched."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                         "tensor")


def _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate):
    """q, k, v from one packed ``[3E, E]`` weight (one matmul for self-attention) or three separate ones."""
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    if separate is not None:
        w_q, w_k, w_v = separate
        return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)
    if key is query and value is query:
        return linear(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)
    w_q, w_k, w_v = in_proj_weight.chunk(3)
    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def _append_column(mask):
    """A mask ``(..., S)`` with one more unmasked (zero) key at the end."""
    if mask is None:
        return None
    return cat([mask, zeros(*mask.shape[:-1], 1, dtype=mask.dtype, device=mask.device)], dim=-1)


def _check_attn_mask(attn_mask, tgt_len, src_len, batch_heads):
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                               f"{(tgt_len, src_len)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (batch_heads, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                               f"{(batch_heads, tgt_len, src_len)}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention on sequence-first inputs: ``query`` ``(L, N, E)``, ``key``/``value`` ``(S, N, *)``.

    Unbatched inputs (``(L, E)``) work too. Returns ``(attn_output (L, N, E),
    attn_weights)``; the weights are ``(N, L, S)`` averaged over heads (or
    ``(N, num_heads, L, S)`` with ``average_attn_weights=False``), or None when
    ``need_weights`` is False. Masks: boolean True = ignore, float = added;
    ``attn_mask`` is ``(L, S)`` or ``(N * num_heads, L, S)``, ``key_padding_mask`` ``(N, S)``.
    ``is_causal`` is only a hint that ``attn_mask`` is the causal mask (which must be given).

    >>> import ember
    >>> E = 4
    >>> x = ember.ones(3, 2, E)
    >>> out, w = multi_head_attention_forward(x, x, x, E, 2, ember.ones(3 * E, E), None, None, None, False, 0.0,
    ...                                       ember.ones(E, E), None)
    >>> out.shape, w.shape
    (ember.Size([3, 2, 4]), ember.Size([2, 3, 3]))
    """
    batched = _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if key_padding_mask is not None:
        for dim, want in enumerate((bsz, src_len)):
            if key_padding_mask.shape[dim] != want:
                raise AssertionError(f"Expected key_padded_mask.shape[{dim}] to be {want}, but got "
                                     f"{key_padding_mask.shape[dim]}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the causal hint lets the attention build the mask itself
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        is_causal = False if key_padding_mask is not None else is_causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
        separate = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        if key.shape != value.shape:
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        separate = None
    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate)
    if attn_mask is not None:
        attn_mask = _check_attn_mask(attn_mask, tgt_len, src_len, bsz * num_heads)
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None else
                                 "bias cannot be added to static value.")
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask, key_padding_mask = _append_column(attn_mask), _append_column(key_padding_mask)
    heads = bsz * num_heads
    q = q.reshape(tgt_len, heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], heads, head_dim).transpose(0, 1) if static_k is None else static_k
    v = v.reshape(v.shape[0], heads, head_dim).transpose(0, 1) if static_v is None else static_v
    for static, name in ((static_k, "k"), (static_v, "v")):
        if static is not None and (static.shape[0] != heads or static.shape[2] != head_dim):
            raise AssertionError(f"expecting static_{name}.size(0) of {heads} and static_{name}.size(2) of "
                                 f"{head_dim}, but got {static.shape[0]} and {static.shape[2]}")
    if add_zero_attn:
        k = cat([k, zeros(heads, 1, head_dim, dtype=k.dtype, device=k.device)], dim=1)
        v = cat([v, zeros(heads, 1, head_dim, dtype=v.dtype, device=v.device)], dim=1)
        attn_mask, key_padding_mask = _append_column(attn_mask), _append_column(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        padding = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        padding = padding.reshape(heads, 1, src_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = bmm(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = bmm(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
    else:
        if attn_mask is not None:  # (1 or N * heads, L or 1, S) -> (1 or N, heads, L or 1, S)
            attn_mask = (attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else
                         attn_mask.reshape(bsz, num_heads, -1, src_len))
        out = scaled_dot_product_attention(q.reshape(bsz, num_heads, tgt_len, head_dim),
                                           k.reshape(bsz, num_heads, src_len, head_dim),
                                           v.reshape(bsz, num_heads, src_len, head_dim),
                                           attn_mask, dropout_p, is_causal)
        out = out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim)
        weights = None
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not batched:
        out = out.squeeze(1)
        if weights is not None:
            weights = weights.squeeze(0)
    return out, weights
