"""scaled_dot_product_attention and MultiheadAttention against NumPy loops; masks, dropout, gradients, errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from ember import nn

F64 = ember.float64


def np_softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ref_sdpa(q, k, v, keep=None, add=None, causal=False, scale=None):
    """Attention for every leading index in a loop; ``keep`` (bool) and ``add`` (float) are (..., L, S) masks."""
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    length, source = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    allowed = np.ones((length, source), bool)
    if causal:
        allowed = np.array([[j <= i for j in range(source)] for i in range(length)])
    out = np.zeros(lead + (length, v.shape[-1]))
    for idx in np.ndindex(*lead):
        qi, ki, vi = (np.broadcast_to(a, lead + a.shape[-2:])[idx] for a in (q, k, v))
        scores = qi @ ki.T * scale
        ok = allowed.copy()
        if keep is not None:
            ok &= np.broadcast_to(keep, lead + (length, source))[idx]
        if add is not None:
            scores = scores + np.broadcast_to(add, lead + (length, source))[idx]
        scores = np.where(ok, scores, -np.inf)
        for i in range(length):
            if np.isneginf(scores[i]).all():
                continue  # a query with nothing to attend to gives zeros
            out[idx][i] = np_softmax(scores[i]) @ vi
    return out


def _t(a, grad=False):
    return ember.tensor(a, dtype=F64, requires_grad=grad)


RNG = np.random.default_rng(0)


# -- scaled_dot_product_attention ----------------------------------------------------------------------------
def test_sdpa_matches_numpy_with_and_without_scale():
    q, k, v = RNG.standard_normal((2, 3, 4, 5)), RNG.standard_normal((2, 3, 6, 5)), RNG.standard_normal((2, 3, 6, 7))
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v))
    np.testing.assert_allclose(out.numpy(), ref_sdpa(q, k, v), rtol=1e-12)
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), scale=0.3)
    np.testing.assert_allclose(out.numpy(), ref_sdpa(q, k, v, scale=0.3), rtol=1e-12)


def test_sdpa_masks_bool_keeps_where_true_float_is_added():
    q, k, v = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 5, 2))
    keep = RNG.random((4, 5)) > 0.3
    keep[:, 0] = True
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=ember.tensor(keep))
    np.testing.assert_allclose(out.numpy(), ref_sdpa(q, k, v, keep=keep), rtol=1e-12)
    add = RNG.standard_normal((2, 1, 5))
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=_t(add))
    np.testing.assert_allclose(out.numpy(), ref_sdpa(q, k, v, add=add), rtol=1e-12)


@pytest.mark.parametrize("length, source", [(3, 3), (2, 4), (4, 2)])
def test_sdpa_causal_is_the_top_left_triangle(length, source):
    q, k, v = (RNG.standard_normal((2, n, 3)) for n in (length, source, source))
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), is_causal=True)
    np.testing.assert_allclose(out.numpy(), ref_sdpa(q, k, v, causal=True), rtol=1e-12)


def test_sdpa_fully_masked_row_gives_zeros_and_finite_gradients():
    q, k, v = (_t(RNG.standard_normal((3, 2)), grad=True) for _ in range(3))
    keep = ember.tensor([[True, False, True], [False, False, False], [True, True, True]])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    # PyTorch 2.13 gives a zero row here too (checked by hand)
    np.testing.assert_array_equal(out.detach().numpy()[1], [0.0, 0.0])
    out.sum().backward()
    assert all(np.isfinite(t.grad.numpy()).all() for t in (q, k, v))
    minus_inf = ember.zeros(3, 3).masked_fill(keep.logical_not(), float("-inf")).double()
    same = F.scaled_dot_product_attention(q, k, v, attn_mask=minus_inf)
    np.testing.assert_array_equal(same.detach().numpy(), out.detach().numpy())


def test_sdpa_grouped_query_attention_shares_key_value_heads():
    q, k, v = RNG.standard_normal((2, 4, 3, 5)), RNG.standard_normal((2, 2, 6, 5)), RNG.standard_normal((2, 2, 6, 3))
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), enable_gqa=True)
    want = ref_sdpa(q, np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1))  # heads 0,1 use kv 0; 2,3 use kv 1
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)


def test_sdpa_dropout_drops_weights_and_follows_the_seed():
    q, k = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((2, 5, 3))
    eye = np.broadcast_to(np.eye(5), (2, 5, 5))  # value = identity: the output is the weight matrix itself
    weights = F.scaled_dot_product_attention(_t(q), _t(k), _t(eye)).numpy()
    ember.manual_seed(3)
    dropped = F.scaled_dot_product_attention(_t(q), _t(k), _t(eye), dropout_p=0.5).numpy()
    kept = dropped != 0
    assert 0.2 < kept.mean() < 0.8
    np.testing.assert_allclose(dropped[kept], weights[kept] / 0.5, rtol=1e-12)
    ember.manual_seed(3)
    again = F.scaled_dot_product_attention(_t(q), _t(k), _t(eye), dropout_p=0.5).numpy()
    np.testing.assert_array_equal(again, dropped)


def test_sdpa_gradcheck_and_double_backward():
    q, k, v = (_t(RNG.standard_normal(s), grad=True) for s in ((2, 3, 2), (2, 4, 2), (2, 4, 3)))
    add = _t(RNG.standard_normal((3, 4)), grad=True)
    assert ember.autograd.gradcheck(lambda *a: F.scaled_dot_product_attention(*a[:3], attn_mask=a[3]),
                                    (q, k, v, add))
    assert ember.autograd.gradgradcheck(lambda *a: F.scaled_dot_product_attention(*a, is_causal=True), (q, k, v))


@settings(max_examples=25, deadline=None)
@given(batch=st.lists(st.integers(1, 3), max_size=2), length=st.integers(1, 4), source=st.integers(1, 4),
       embed=st.integers(1, 4), value_dim=st.integers(1, 3), mask_rank=st.integers(0, 3))
def test_sdpa_shapes_and_mask_broadcasting(batch, length, source, embed, value_dim, mask_rank):
    rng = np.random.default_rng(len(batch) + length + source)
    q, k = rng.standard_normal((*batch, length, embed)), rng.standard_normal((*batch, source, embed))
    v = rng.standard_normal((*batch, source, value_dim))
    add = rng.standard_normal((length, source)[2 - min(mask_rank, 2):]) if mask_rank else None
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=None if add is None else _t(add))
    assert tuple(out.shape) == (*batch, length, value_dim)
    np.testing.assert_allclose(out.numpy(), ref_sdpa(q, k, v, add=add), rtol=1e-10, atol=1e-12)


def test_sdpa_errors():
    x = ember.zeros(2, 3)
    # message written down from PyTorch 2.13
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(x, x, x, attn_mask=ember.ones(2, 2, dtype=ember.bool), is_causal=True)
    with pytest.raises(TypeError, match="argument 'key' must be Tensor, not list"):
        F.scaled_dot_product_attention(x, [1.0], x)
    with pytest.raises(RuntimeError, match="multiple of the key/value heads"):
        F.scaled_dot_product_attention(ember.zeros(3, 2, 2), ember.zeros(2, 2, 2), ember.zeros(2, 2, 2),
                                       enable_gqa=True)


# -- MultiheadAttention --------------------------------------------------------------------------------------
def _np(t):
    return t.detach().numpy()


def _params(m):
    return {name: t.detach().numpy() for name, t in m.named_parameters()}


def _float_mask(mask):
    mask = np.asarray(mask)
    return np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask


def ref_mha(m, query, key, value, key_padding_mask=None, attn_mask=None, average=True):
    """Multi-head attention with a loop over batch and heads (sequence-first (L, N, E) NumPy inputs)."""
    p = _params(m)
    E, H = m.embed_dim, m.num_heads
    hd = E // H
    if "in_proj_weight" in p:  # one packed projection when query, key and value share the embedding size
        w_q, w_k, w_v = np.split(p["in_proj_weight"], 3)
    else:
        w_q, w_k, w_v = p["q_proj_weight"], p["k_proj_weight"], p["v_proj_weight"]
    b_q, b_k, b_v = np.split(p["in_proj_bias"], 3) if "in_proj_bias" in p else (0, 0, 0)
    Q, K, V = query @ w_q.T + b_q, key @ w_k.T + b_k, value @ w_v.T + b_v
    L, N = Q.shape[:2]
    S = K.shape[0]
    masks = np.zeros((N, H, L, S))
    if attn_mask is not None:
        am = _float_mask(attn_mask)
        masks += am if am.ndim == 2 else am.reshape(N, H, L, S)
    if key_padding_mask is not None:
        masks += _float_mask(key_padding_mask)[:, None, None, :]
    extra = []
    if m.bias_k is not None:
        extra.append((np.broadcast_to(p["bias_k"], (1, N, E)), np.broadcast_to(p["bias_v"], (1, N, E))))
    if m.add_zero_attn:
        extra.append((np.zeros((1, N, E)), np.zeros((1, N, E))))
    for k_row, v_row in extra:
        K, V = np.concatenate([K, k_row]), np.concatenate([V, v_row])
        masks = np.concatenate([masks, np.zeros((N, H, L, 1))], axis=-1)
    out = np.zeros((L, N, E))
    weights = np.zeros((N, H, L, K.shape[0]))
    for n in range(N):
        for h in range(H):
            cols = slice(h * hd, (h + 1) * hd)
            w = np_softmax(Q[:, n, cols] @ K[:, n, cols].T / math.sqrt(hd) + masks[n, h])
            out[:, n, cols] = w @ V[:, n, cols]
            weights[n, h] = w
    out = out @ p["out_proj.weight"].T + p.get("out_proj.bias", 0)
    return out, (weights.mean(1) if average else weights)


def _mha(*args, **kw):
    ember.manual_seed(0)
    m = nn.MultiheadAttention(*args, dtype=F64, **kw)
    with ember.no_grad():  # non-zero biases, so that a bias mix-up would show
        for p in m.parameters():
            p.add_(ember.tensor(np.random.default_rng(1).uniform(-0.3, 0.3, tuple(p.shape))))
    return m


# written down by hand from PyTorch 2.13
TORCH_MHA_PARAMETERS = [
    (dict(embed_dim=8, num_heads=2),
     [("in_proj_weight", (24, 8)), ("in_proj_bias", (24,)), ("out_proj.weight", (8, 8)), ("out_proj.bias", (8,))]),
    (dict(embed_dim=8, num_heads=2, kdim=3, vdim=5, add_bias_kv=True, bias=False),
     [("q_proj_weight", (8, 8)), ("k_proj_weight", (8, 3)), ("v_proj_weight", (8, 5)), ("bias_k", (1, 1, 8)),
      ("bias_v", (1, 1, 8)), ("out_proj.weight", (8, 8))]),
]


@pytest.mark.parametrize("kwargs, expected", TORCH_MHA_PARAMETERS)
def test_mha_parameters_match_pytorch(kwargs, expected):
    m = nn.MultiheadAttention(**kwargs)
    assert [(name, tuple(p.shape)) for name, p in m.named_parameters()] == expected
    assert list(m.state_dict()) == [name for name, _ in expected]


def test_mha_repr():
    # written down from PyTorch 2.13
    assert repr(nn.MultiheadAttention(8, 2, bias=False)) == (
        "MultiheadAttention(\n"
        "  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=False)\n"
        ")")


def test_mha_init():
    ember.manual_seed(0)
    m = nn.MultiheadAttention(16, 4)
    bound = math.sqrt(6 / (16 + 48))  # xavier_uniform_ of a [48, 16] weight
    w = m.in_proj_weight.detach().numpy()
    assert -bound <= w.min() < -0.9 * bound and 0.9 * bound < w.max() <= bound
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    separate = nn.MultiheadAttention(16, 4, kdim=6, vdim=6, add_bias_kv=True)
    k_bound = math.sqrt(6 / (6 + 16))
    assert np.abs(separate.k_proj_weight.detach().numpy()).max() <= k_bound
    assert separate.bias_k.detach().numpy().std() > 0  # xavier_normal_, not left empty


MHA_CASES = {
    "self": (dict(), dict()),
    "kpm+bool-mask": (dict(), dict(key_padding_mask=np.array([[False, False, True, False, True],
                                                              [False, False, False, False, False]]),
                                   attn_mask=np.triu(np.ones((5, 5), bool), 1))),
    "float-3d-mask,per-head": (dict(), dict(attn_mask=RNG.standard_normal((4, 5, 5)), average=False)),
    "kdim-vdim": (dict(kdim=3, vdim=6), dict()),
    "bias_kv+zero_attn+kpm": (dict(add_bias_kv=True, add_zero_attn=True),
                              dict(key_padding_mask=np.array([[False, True, False, False, False]] * 2))),
    "no-bias": (dict(bias=False), dict()),
}


@pytest.mark.parametrize("case", list(MHA_CASES))
@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_matches_numpy(case, batch_first):
    kw, fw = MHA_CASES[case]
    fw = dict(fw)
    average = fw.pop("average", True)
    m = _mha(8, 2, batch_first=batch_first, **kw)
    rng = np.random.default_rng(2)
    query = rng.standard_normal((5, 2, 8))
    if "kdim" in kw:
        key, value = rng.standard_normal((5, 2, 3)), rng.standard_normal((5, 2, 6))
    else:
        key = value = query
    want_out, want_w = ref_mha(m, query, key, value, average=average, **fw)
    masks = {name: ember.tensor(mask) for name, mask in fw.items()}
    args = [query, key, value]
    inputs = [ember.tensor(a.transpose(1, 0, 2) if batch_first else a) for a in args]
    if key is query:
        inputs = [inputs[0]] * 3
    out, weights = m(*inputs, average_attn_weights=average, **masks)
    out = _np(out).transpose(1, 0, 2) if batch_first else _np(out)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(weights), want_w, rtol=1e-10, atol=1e-12)
    fast, none = m(*inputs, need_weights=False, **masks)
    assert none is None
    np.testing.assert_allclose(_np(fast), out.transpose(1, 0, 2) if batch_first else out, rtol=1e-10)


def test_mha_unbatched():
    m = _mha(4, 2)
    x = np.random.default_rng(3).standard_normal((3, 4))
    kpm = np.array([False, True, False])
    want_out, want_w = ref_mha(m, x[:, None], x[:, None], x[:, None], key_padding_mask=kpm[None])
    t = ember.tensor(x)
    out, w = m(t, t, t, key_padding_mask=ember.tensor(kpm))
    assert tuple(out.shape) == (3, 4) and tuple(w.shape) == (3, 3)
    np.testing.assert_allclose(_np(out), want_out[:, 0], rtol=1e-10)
    np.testing.assert_allclose(_np(w), want_w[0], rtol=1e-10)


def test_mha_fully_masked_query_row():
    """As PyTorch 2.13 (checked by hand): NaN with need_weights=True, zeros (before out_proj) without."""
    m = _mha(4, 2)
    x = ember.tensor(np.random.default_rng(4).standard_normal((3, 2, 4)))
    mask = ember.zeros(3, 3, dtype=F64)
    mask[1] = float("-inf")
    out, w = m(x, x, x, attn_mask=mask)
    assert np.isnan(_np(out)[1]).all() and np.isnan(_np(w)[:, 1]).all()
    out, _ = m(x, x, x, attn_mask=mask, need_weights=False)
    np.testing.assert_allclose(_np(out)[1], np.broadcast_to(m.out_proj.bias.detach().numpy(), (2, 4)))


def test_mha_causal_hint():
    m = _mha(4, 2)
    x = ember.tensor(np.random.default_rng(5).standard_normal((3, 2, 4)))
    causal = ember.triu(ember.ones(3, 3, dtype=ember.bool), 1)
    explicit, _ = m(x, x, x, attn_mask=causal, need_weights=False)
    hinted, _ = m(x, x, x, attn_mask=causal, need_weights=False, is_causal=True)
    np.testing.assert_allclose(_np(hinted), _np(explicit), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)


def test_mha_dropout_in_training_only():
    m = _mha(4, 2, dropout=0.5)
    x = ember.tensor(np.random.default_rng(6).standard_normal((5, 2, 4)))
    m.eval()
    _, w_eval = m(x, x, x, average_attn_weights=False)
    np.testing.assert_allclose(_np(w_eval), ref_mha(m, *(x.numpy(),) * 3, average=False)[1], rtol=1e-10)
    m.train()
    ember.manual_seed(0)
    out_train, w_train = m(x, x, x, average_attn_weights=False)
    kept = _np(w_train) != 0
    assert 0.2 < kept.mean() < 0.8
    np.testing.assert_allclose(_np(w_train)[kept], _np(w_eval)[kept] / 0.5, rtol=1e-12)
    ember.manual_seed(0)
    np.testing.assert_array_equal(_np(m(x, x, x)[0]), _np(out_train))


def _with_parameter(module, name, fn):
    """``fn`` of a stand-in tensor for parameter ``name`` (so gradcheck can perturb it)."""
    # ember has no functional_call yet: the registry entry is swapped so forward reads the stand-in
    def call(x, w):
        saved = module._parameters[name]
        module._parameters[name] = w
        try:
            return fn(x)
        finally:
            module._parameters[name] = saved
    return call


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_gradcheck(need_weights):
    m = _mha(4, 2, add_bias_kv=True)
    x = ember.tensor(np.random.default_rng(7).standard_normal((3, 2, 4)), requires_grad=True)
    kpm = ember.tensor([[False, False, True], [False, False, False]])

    def attend(inp):
        out, w = m(inp, inp, inp, key_padding_mask=kpm, need_weights=need_weights)
        return (out, w) if need_weights else out
    assert ember.autograd.gradcheck(_with_parameter(m, "in_proj_weight", attend), (x, m.in_proj_weight))


@pytest.mark.parametrize("call, error, message", [
    (lambda m, x: m(x, x[:2], x), AssertionError, "key shape ember.Size([2, 2, 4]) does not match value shape"),
    (lambda m, x: m(x, x, x[0]), AssertionError, "For batched (3-D) `query`, expected `key` and `value` to be 3-D "
                                                 "but found 3-D and 2-D tensors respectively"),
    (lambda m, x: m(x[0], x[0], x[0], key_padding_mask=ember.zeros(2, 3, dtype=ember.bool)), AssertionError,
     "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but found 2-D tensor instead"),
    (lambda m, x: m(x[0], x[0], x[0], attn_mask=ember.zeros(3, 3, 3)), AssertionError,
     "Expected `attn_mask` shape to be (2, 2, 2) but got"),
    (lambda m, x: m(x[0, 0], x[0, 0], x[0, 0]), AssertionError,
     "query should be unbatched 2D or batched 3D tensor but received 1-D query tensor"),
    (lambda m, x: m(ember.zeros(3, 2, 5), ember.zeros(3, 2, 5), ember.zeros(3, 2, 5)), AssertionError,
     "was expecting embedding dimension of 4, but got 5"),
    (lambda m, x: m(x, x, x, attn_mask=ember.zeros(2, 3)), RuntimeError,
     "The shape of the 2D attn_mask is ember.Size([2, 3]), but should be (3, 3)."),
    (lambda m, x: m(x, x, x, attn_mask=ember.zeros(5, 3, 3)), RuntimeError,
     "The shape of the 3D attn_mask is ember.Size([5, 3, 3]), but should be (4, 3, 3)."),
    (lambda m, x: m(x, x, x, attn_mask=ember.zeros(1, 1, 3, 3)), AssertionError,
     "expected `attn_mask` to be `None`, 2-D or 3-D but found 4-D tensor instead"),
    (lambda m, x: m(x, x, x, key_padding_mask=ember.zeros(2, 4, dtype=ember.bool)), AssertionError,
     "Expected key_padded_mask.shape[1] to be 3, but got 4"),
    (lambda m, x: m(x, x, x, attn_mask=ember.zeros(3, 3, dtype=ember.int64)), AssertionError,
     "only bool and floating types of attn_mask are supported"),
])
def test_mha_errors(call, error, message):
    # messages written down from PyTorch 2.13 (its shapes print as torch.Size)
    m = nn.MultiheadAttention(4, 2)
    x = ember.zeros(3, 2, 4)
    with pytest.raises(error) as info:
        call(m, x)
    assert message in str(info.value)


def test_mha_constructor_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(8, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0, got embed_dim=0 and "
                                         "num_heads=3 instead"):
        nn.MultiheadAttention(0, 3)
