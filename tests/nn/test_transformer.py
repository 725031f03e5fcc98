"""TransformerEncoderLayer and TransformerEncoder against a NumPy reference; names, repr, dropout, gradients."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn

from .test_attention import _with_parameter, ref_mha

F64 = ember.float64


def _layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _gelu(x):
    return np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.ravel()]).reshape(x.shape)


def ref_layer(layer, src, src_mask=None, key_padding_mask=None, activation=None):
    """The encoder layer's equations in NumPy (eval mode), for sequence-first ``src`` (S, N, E)."""
    p = {name: t.detach().numpy() for name, t in layer.named_parameters()}
    act = activation or (lambda a: np.maximum(a, 0))

    def norm(k, x):
        return _layer_norm(x, p[f"norm{k}.weight"], p.get(f"norm{k}.bias", 0), layer.norm1.eps)

    def sa(x):
        return ref_mha(layer.self_attn, x, x, x, key_padding_mask=key_padding_mask, attn_mask=src_mask)[0]

    def ff(x):
        hidden = act(x @ p["linear1.weight"].T + p.get("linear1.bias", 0))
        return hidden @ p["linear2.weight"].T + p.get("linear2.bias", 0)

    x = src
    if layer.norm_first:
        x = x + sa(norm(1, x))
        return x + ff(norm(2, x))
    x = norm(1, x + sa(x))
    return norm(2, x + ff(x))


def _layer(*args, **kw):
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(*args, dtype=F64, **kw)
    with ember.no_grad():  # move the norms and biases off their 1 / 0 start, so mix-ups would show
        for p in layer.parameters():
            p.add_(ember.tensor(np.random.default_rng(1).uniform(-0.2, 0.2, tuple(p.shape))))
    return layer.eval()


# written down by hand from PyTorch 2.13: list(layer.state_dict())
TORCH_LAYER_KEYS = ["self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                    "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                    "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]

# written down by hand from PyTorch 2.13: print(nn.TransformerEncoderLayer(8, 2, 16))
TORCH_LAYER_REPR = """TransformerEncoderLayer(
  (self_attn): MultiheadAttention(
    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)
  )
  (linear1): Linear(in_features=8, out_features=16, bias=True)
  (dropout): Dropout(p=0.1, inplace=False)
  (linear2): Linear(in_features=16, out_features=8, bias=True)
  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
  (dropout1): Dropout(p=0.1, inplace=False)
  (dropout2): Dropout(p=0.1, inplace=False)
)"""


def test_state_dict_keys_and_repr_match_pytorch():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    assert list(layer.state_dict()) == TORCH_LAYER_KEYS
    assert repr(layer) == TORCH_LAYER_REPR
    no_bias = nn.TransformerEncoderLayer(8, 2, 16, bias=False)
    assert list(no_bias.state_dict()) == ["self_attn.in_proj_weight", "self_attn.out_proj.weight", "linear1.weight",
                                          "linear2.weight", "norm1.weight", "norm2.weight"]


def test_activation_module_becomes_a_submodule():
    layer = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU())
    assert repr(layer).endswith("  (dropout2): Dropout(p=0.1, inplace=False)\n"
                                "  (activation): GELU(approximate='none')\n)")
    assert list(layer.state_dict()) == TORCH_LAYER_KEYS
    # message written down from PyTorch 2.13
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, 16, activation="tanh")


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
def test_layer_matches_numpy(norm_first, activation):
    act = F.silu if activation == "callable" else activation
    layer = _layer(8, 2, 16, activation=act, norm_first=norm_first)
    src = np.random.default_rng(2).standard_normal((5, 3, 8))
    ref_act = {"relu": None, "gelu": _gelu, "callable": lambda a: a / (1 + np.exp(-a))}[activation]
    out = layer(ember.tensor(src))
    np.testing.assert_allclose(out.detach().numpy(), ref_layer(layer, src, activation=ref_act), rtol=1e-10,
                               atol=1e-12)


def test_layer_masks_batch_first_and_unbatched():
    layer = _layer(8, 2, 16, batch_first=True)
    src = np.random.default_rng(3).standard_normal((5, 3, 8))  # sequence-first for the reference
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    kpm = np.zeros((3, 5), bool)
    kpm[0, 3:] = True
    want = ref_layer(layer, src, src_mask=mask, key_padding_mask=kpm)
    out = layer(ember.tensor(src.transpose(1, 0, 2)), src_mask=ember.tensor(mask),
                src_key_padding_mask=ember.tensor(kpm))
    np.testing.assert_allclose(out.detach().numpy().transpose(1, 0, 2), want, rtol=1e-10, atol=1e-12)
    causal = layer(ember.tensor(src.transpose(1, 0, 2)), src_mask=ember.tensor(mask), is_causal=True)
    np.testing.assert_allclose(causal.detach().numpy().transpose(1, 0, 2), ref_layer(layer, src, src_mask=mask),
                               rtol=1e-10, atol=1e-12)
    single = layer(ember.tensor(src[:, 1]))
    np.testing.assert_allclose(single.detach().numpy(), ref_layer(layer, src[:, 1:2])[:, 0], rtol=1e-10)


def test_dropout_only_in_training():
    layer = _layer(8, 2, 16, dropout=0.3)
    src = ember.tensor(np.random.default_rng(4).standard_normal((4, 2, 8)))
    want = ref_layer(layer, src.numpy())
    np.testing.assert_allclose(layer(src).detach().numpy(), want, rtol=1e-10)
    layer.train()
    ember.manual_seed(5)
    train = layer(src).detach().numpy()
    assert not np.allclose(train, want)
    ember.manual_seed(5)
    np.testing.assert_array_equal(layer(src).detach().numpy(), train)


@pytest.mark.parametrize("norm_first", [False, True])
def test_gradcheck_wrt_input_and_a_parameter(norm_first):
    layer = _layer(4, 2, 6, dropout=0.0, norm_first=norm_first)
    src = ember.tensor(np.random.default_rng(6).standard_normal((3, 2, 4)), requires_grad=True)
    kpm = ember.tensor([[False, False, True], [False, False, False]])
    whole = _with_parameter(layer.linear1, "weight", lambda x: layer(x, src_key_padding_mask=kpm))
    assert ember.autograd.gradcheck(whole, (src, layer.linear1.weight))


def test_encoder_stacks_deep_copies_then_norm():
    layer = _layer(8, 2, 16)
    encoder = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(8, dtype=F64)).eval()
    assert encoder.layers[0] is not layer and encoder.layers[0] is not encoder.layers[1]
    assert encoder.layers[0].linear1.weight is not encoder.layers[1].linear1.weight
    np.testing.assert_array_equal(encoder.layers[1].linear1.weight.detach().numpy(),
                                  layer.linear1.weight.detach().numpy())
    with ember.no_grad():
        encoder.layers[1].linear2.weight.mul_(2.0)  # the copies are independent
    src = np.random.default_rng(7).standard_normal((5, 2, 8))
    kpm = np.array([[False] * 5, [False, False, False, True, True]])
    x = src
    for sub in encoder.layers:
        x = ref_layer(sub, x, key_padding_mask=kpm)
    norm = encoder.norm
    want = _layer_norm(x, norm.weight.detach().numpy(), norm.bias.detach().numpy(), norm.eps)
    out = encoder(ember.tensor(src), src_key_padding_mask=ember.tensor(kpm))
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-10, atol=1e-12)
    keys = list(encoder.state_dict())
    assert keys[:2] == ["layers.0.self_attn.in_proj_weight", "layers.0.self_attn.in_proj_bias"]
    assert keys[-2:] == ["norm.weight", "norm.bias"] and len(keys) == 2 * len(TORCH_LAYER_KEYS) + 2


# -- Transformer, TransformerDecoderLayer, TransformerDecoder (PyTorch's numbers: test_transformer_torch.py) ------
def test_generate_square_subsequent_mask_is_pytorchs():
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    assert mask.dtype == ember.float32 and mask.shape == (4, 4)
    np.testing.assert_array_equal(mask.numpy(), np.triu(np.full((4, 4), -np.inf, np.float32), 1))
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=F64).dtype == F64
    assert nn.Transformer(8, 2, 1, 1, 16).generate_square_subsequent_mask(1).tolist() == [[0.0]]


def test_transformer_initialisation_is_xavier_on_matrices():
    ember.manual_seed(0)
    model = nn.Transformer(d_model=64, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=256)
    for name, p in model.named_parameters():
        values = p.detach().numpy()
        if p.dim() > 1:
            bound = math.sqrt(6 / sum(p.shape))
            assert np.abs(values).max() <= bound, name
            # the variance of U(-b, b) is b^2 / 3; Linear's own init (b = 1/sqrt(fan_in)) gives 25% less here
            np.testing.assert_allclose(values.var(), bound ** 2 / 3, rtol=0.08, err_msg=name)
        elif name.endswith("in_proj_bias") or name.endswith("out_proj.bias") or name.endswith("norm1.bias"):
            assert not values.any(), name
        elif "norm" in name and name.endswith("weight"):
            assert (values == 1).all(), name
    assert model.d_model == 64 and model.nhead == 4 and model.batch_first is False


def test_transformer_custom_encoder_and_decoder_and_defaults():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1)
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 3)
    model = nn.Transformer(d_model=8, nhead=2, custom_encoder=encoder, custom_decoder=decoder)
    assert model.encoder is encoder and model.decoder is decoder and len(model.decoder.layers) == 3
    assert encoder.norm is None and not any(k.startswith("decoder.norm") for k in model.state_dict())
    default = nn.Transformer()
    assert len(default.encoder.layers) == 6 and len(default.decoder.layers) == 6
    assert default.encoder.layers[0].linear1.out_features == 2048
    assert default.decoder.layers[0].dropout.p == 0.1 and default.encoder.norm.eps == 1e-5


def test_transformer_shape_errors_are_pytorchs():
    model = nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(ember.randn(5, 2, 8), ember.randn(4, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(ember.randn(5, 2, 8), ember.randn(4, 2, 6))
    first = nn.Transformer(8, 2, 1, 1, 16, batch_first=True)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        first(ember.randn(2, 5, 8), ember.randn(3, 5, 8))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        model(ember.randn(5, 2, 8), ember.randn(4, 2, 8), memory_is_causal=True)
    with pytest.raises(AssertionError, match="only bool and floating types of src_key_padding_mask"):
        model(ember.randn(5, 2, 8), ember.randn(4, 2, 8), src_key_padding_mask=ember.zeros(2, 5, dtype=ember.int64))


def _causal_flags(stack):
    """The ``is_causal`` / ``tgt_is_causal`` each layer of ``stack`` is called with (forward pre-hooks)."""
    seen = []
    for layer in stack.layers:
        layer.register_forward_pre_hook(
            lambda m, args, kwargs: seen.append(kwargs.get("is_causal", kwargs.get("tgt_is_causal"))),
            with_kwargs=True)
    return seen


def test_encoder_and_decoder_detect_a_causal_mask_as_pytorch_does():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2).eval()
    seen = _causal_flags(encoder)
    src = ember.randn(3, 5, 8)
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    encoder(src, mask=causal)
    encoder(src, mask=causal.masked_fill(ember.eye(5, dtype=ember.bool), -1.0))  # not the causal mask
    encoder(src, mask=causal, is_causal=False)  # an explicit hint wins
    encoder(src, mask=causal < 0)  # a bool mask (True = ignore) is made float first, and then recognised
    assert seen == [True, True, False, False, False, False, True, True]
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 1).eval()
    seen = _causal_flags(decoder)
    tgt, memory = ember.randn(5, 3, 8), ember.randn(6, 3, 8)
    decoder(tgt, memory, tgt_mask=causal)
    decoder(tgt, memory)
    decoder(tgt, memory, tgt_mask=causal < 0)  # a bool mask is compared with the bool causal mask
    assert seen == [True, False, True]
    # the hint changes how the mask is applied, never the result
    hinted = decoder(tgt, memory, tgt_mask=causal, tgt_is_causal=True)
    plain = decoder(tgt, memory, tgt_mask=causal, tgt_is_causal=False)
    np.testing.assert_allclose(hinted.detach().numpy(), plain.detach().numpy(), rtol=1e-5, atol=1e-6)


def ref_decoder_layer(layer, tgt, memory, tgt_mask=None, memory_key_padding_mask=None):
    """The decoder layer's equations in NumPy (eval mode, relu), sequence-first."""
    p = {name: t.detach().numpy() for name, t in layer.named_parameters()}

    def norm(k, x):
        return _layer_norm(x, p[f"norm{k}.weight"], p[f"norm{k}.bias"], layer.norm1.eps)

    def sa(x):
        return ref_mha(layer.self_attn, x, x, x, attn_mask=tgt_mask)[0]

    def mha(x):
        return ref_mha(layer.multihead_attn, x, memory, memory, key_padding_mask=memory_key_padding_mask)[0]

    def ff(x):
        return np.maximum(x @ p["linear1.weight"].T + p["linear1.bias"], 0) @ p["linear2.weight"].T + p["linear2.bias"]

    x = tgt
    if layer.norm_first:
        x = x + sa(norm(1, x))
        x = x + mha(norm(2, x))
        return x + ff(norm(3, x))
    x = norm(1, x + sa(x))
    x = norm(2, x + mha(x))
    return norm(3, x + ff(x))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_numpy(norm_first):
    ember.manual_seed(0)
    layer = nn.TransformerDecoderLayer(8, 2, 16, norm_first=norm_first, dtype=F64)
    with ember.no_grad():
        for p in layer.parameters():
            p.add_(ember.tensor(np.random.default_rng(1).uniform(-0.2, 0.2, tuple(p.shape))))
    layer.eval()
    rng = np.random.default_rng(8)
    tgt, memory = rng.standard_normal((4, 2, 8)), rng.standard_normal((6, 2, 8))
    mask = np.triu(np.full((4, 4), -np.inf), 1)
    kpm = np.zeros((2, 6), bool)
    kpm[1, 4:] = True
    out = layer(ember.tensor(tgt), ember.tensor(memory), tgt_mask=ember.tensor(mask),
                memory_key_padding_mask=ember.tensor(kpm))
    want = ref_decoder_layer(layer, tgt, memory, tgt_mask=mask, memory_key_padding_mask=kpm)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-10, atol=1e-12)
    assert list(layer.state_dict())[4:8] == ["multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
                                             "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias"]


def test_transformer_gradcheck_and_training_dropout():
    ember.manual_seed(0)
    model = nn.Transformer(4, 2, 1, 1, 6, dropout=0.0, dtype=F64)
    rng = np.random.default_rng(9)
    src = ember.tensor(rng.standard_normal((3, 2, 4)), requires_grad=True)
    tgt = ember.tensor(rng.standard_normal((2, 2, 4)))
    mask = nn.Transformer.generate_square_subsequent_mask(2, dtype=F64)
    assert ember.autograd.gradcheck(lambda s: model(s, tgt, tgt_mask=mask), (src,))
    dropped = nn.Transformer(8, 2, 1, 1, 16, dropout=0.5).train()
    src, tgt = ember.randn(5, 2, 8), ember.randn(4, 2, 8)
    ember.manual_seed(3)
    first = dropped(src, tgt)
    ember.manual_seed(3)
    np.testing.assert_array_equal(dropped(src, tgt).detach().numpy(), first.detach().numpy())
    assert not np.allclose(dropped.eval()(src, tgt).detach().numpy(), first.detach().numpy())
