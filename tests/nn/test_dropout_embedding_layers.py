"""Dropout layers (train vs eval, reprs) and the Embedding layer (init, padding, from_pretrained, reprs)."""
import numpy as np
import pytest

import ember
from ember import nn


def _np(t):
    return t.detach().numpy(force=True)


@pytest.mark.parametrize("layer,shape", [(nn.Dropout, (40, 50)), (nn.Dropout1d, (40, 50, 3)),
                                         (nn.Dropout2d, (40, 50, 2, 2)), (nn.Dropout3d, (20, 50, 2, 2, 2))])
def test_dropout_layers_train_and_eval(layer, shape):
    drop = layer(p=0.3)
    x = ember.ones(*shape)
    ember.manual_seed(0)
    y = _np(drop(x))
    values = np.unique(y)
    assert len(values) == 2 and values[0] == 0 and values[1] == pytest.approx(1 / 0.7)
    assert abs((y == 0).mean() - 0.3) < 0.08
    drop.eval()
    assert drop(x) is x


def test_alpha_dropout_layers_train_and_eval():
    ember.manual_seed(0)
    x = ember.randn(20000)
    y = _np(nn.AlphaDropout(0.2)(x))
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05
    assert nn.AlphaDropout(0.2).eval()(x) is x
    feature = _np(nn.FeatureAlphaDropout(0.5)(ember.zeros(4, 8, 3)))
    assert (feature == feature[:, :, :1]).all()


def test_dropout_layers_inplace_and_reprs():
    h = ember.ones(10)
    assert nn.Dropout(inplace=True)(h) is h
    # repr strings printed by torch 2.13 (taken by hand)
    assert repr(nn.Dropout()) == "Dropout(p=0.5, inplace=False)"
    assert repr(nn.Dropout(0.2, True)) == "Dropout(p=0.2, inplace=True)"
    assert repr(nn.Dropout1d()) == "Dropout1d(p=0.5, inplace=False)"
    assert repr(nn.Dropout2d(0.1)) == "Dropout2d(p=0.1, inplace=False)"
    assert repr(nn.Dropout3d()) == "Dropout3d(p=0.5, inplace=False)"
    assert repr(nn.AlphaDropout(0.3)) == "AlphaDropout(p=0.3, inplace=False)"
    assert repr(nn.FeatureAlphaDropout()) == "FeatureAlphaDropout(p=0.5, inplace=False)"
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 2"):
        nn.Dropout(2)
    assert list(nn.Dropout().state_dict()) == []


def test_embedding_init_padding_and_gradient():
    ember.manual_seed(0)
    emb = nn.Embedding(200, 50, padding_idx=-1)
    assert emb.padding_idx == 199 and emb.weight.shape == (200, 50) and emb.weight.requires_grad
    w = _np(emb.weight)
    assert (w[199] == 0).all()
    assert abs(w[:199].mean()) < 0.02 and abs(w[:199].std() - 1) < 0.02  # N(0, 1)
    idx = ember.tensor([[1, 199, 1], [0, 5, 199]])
    out = emb(idx)
    np.testing.assert_array_equal(_np(out), w[_np(idx)])
    out.sum().backward()
    grad = _np(emb.weight.grad)
    assert grad[1].tolist() == [2.0] * 50 and grad[0].tolist() == [1.0] * 50
    assert (grad[199] == 0).all() and (grad[2] == 0).all()
    assert list(emb.state_dict()) == ["weight"]


def test_embedding_max_norm_through_the_layer():
    emb = nn.Embedding(3, 2, max_norm=1.0)
    with ember.no_grad():
        emb.weight.copy_(ember.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]]))
    out = emb(ember.tensor([0, 1]))
    np.testing.assert_allclose(_np(out), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)
    np.testing.assert_allclose(_np(emb.weight)[2], [6.0, 8.0])


def test_embedding_from_pretrained_and_weight_argument():
    table = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    emb = nn.Embedding.from_pretrained(table, padding_idx=0)
    assert not emb.weight.requires_grad and emb.weight.tolist()[0] == [1.0, 2.0]  # given rows are kept
    assert repr(emb) == "Embedding(3, 2, padding_idx=0)"
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(ember.ones(3))
    with pytest.raises(AssertionError, match="Shape of weight does not match num_embeddings and embedding_dim"):
        nn.Embedding(3, 2, _weight=ember.ones(2, 2))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)


def test_embedding_reprs():
    # repr strings printed by torch 2.13 (taken by hand)
    assert repr(nn.Embedding(10, 3)) == "Embedding(10, 3)"
    assert repr(nn.Embedding(10, 3, padding_idx=0)) == "Embedding(10, 3, padding_idx=0)"
    assert repr(nn.Embedding(10, 3, padding_idx=-1, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True,
                             sparse=True)) == ("Embedding(10, 3, padding_idx=9, max_norm=1.0, norm_type=1.0, "
                                               "scale_grad_by_freq=True, sparse=True)")
    assert repr(nn.Embedding(10, 3, max_norm=2, norm_type=2.0)) == "Embedding(10, 3, max_norm=2)"
