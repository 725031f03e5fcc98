"""embedding (lookup, gradient, padding_idx, max_norm, scale_grad_by_freq) and one_hot."""
import numpy as np
import pytest

import ember
from ember.ops.embedding import embedding, one_hot
from tests.core.helpers import check_grads, rand64


def _np(t):
    return t.detach().numpy(force=True)


@pytest.mark.parametrize("dtype", [ember.int64, ember.int32])
def test_lookup_matches_numpy_indexing(dtype, device):
    w = rand64(6, 3, device=device)
    idx = np.array([[0, 5, 2], [2, 2, 1]])
    out = embedding(ember.tensor(idx, dtype=dtype, device=device), w)
    assert out.shape == (2, 3, 3) and out.grad_fn.name() == "EmbeddingBackward0"
    np.testing.assert_array_equal(_np(out), _np(w)[idx])
    np.testing.assert_array_equal(_np(embedding(ember.tensor(4, device=device), w)), _np(w)[4])


def _ref_weight_grad(idx, g, rows, padding_idx=None, by_freq=False):
    """Each output row's gradient added into its weight row, loop by loop."""
    out = np.zeros((rows, g.shape[-1]))
    flat_idx, flat_g = idx.ravel(), g.reshape(-1, g.shape[-1])
    counts = np.bincount(flat_idx, minlength=rows)
    for i, row in zip(flat_idx, flat_g):
        if i == padding_idx:
            continue
        out[i] += row / counts[i] if by_freq else row
    return out


@pytest.mark.parametrize("padding_idx,by_freq", [(None, False), (1, False), (-1, False), (None, True), (2, True)])
def test_weight_gradient(padding_idx, by_freq, device):
    rows = 5
    w = rand64(rows, 3, device=device)
    idx = np.array([[0, 1, 1, 4], [4, 2, 0, 4]])
    g = np.random.default_rng(1).normal(size=(2, 4, 3))
    out = embedding(ember.tensor(idx, device=device), w, padding_idx=padding_idx, scale_grad_by_freq=by_freq)
    out.backward(ember.tensor(g, device=device))
    pad = None if padding_idx is None else padding_idx % rows
    np.testing.assert_allclose(_np(w.grad), _ref_weight_grad(idx, g, rows, pad, by_freq), rtol=1e-12)


def test_gradcheck_first_and_second_order(device):
    w = rand64(5, 2, device=device)
    idx = ember.tensor([[3, 0], [3, 1]], device=device)
    check_grads(lambda w: embedding(idx, w), w, gradgrad=True)


def test_sparse_gives_the_dense_gradient(device):
    w = rand64(4, 2, device=device)
    embedding(ember.tensor([0, 0, 3], device=device), w, sparse=True).sum().backward()
    np.testing.assert_array_equal(_np(w.grad), [[2, 2], [0, 0], [0, 0], [1, 1]])


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_max_norm_renormalises_looked_up_rows_in_place(norm_type, device):
    start = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0], [-1.0, 2.5]])
    w = ember.tensor(start, device=device)
    idx = [0, 1, 0, 3]
    out = embedding(ember.tensor(idx, device=device), w, max_norm=1.5, norm_type=norm_type)
    expected = start.copy()
    for i in set(idx):
        norm = np.sum(np.abs(start[i]) ** norm_type) ** (1 / norm_type)
        if norm > 1.5:
            expected[i] = start[i] * 1.5 / (norm + 1e-7)
    np.testing.assert_allclose(_np(w), expected, rtol=1e-12)  # row 2 was not looked up: unchanged
    np.testing.assert_allclose(_np(out), expected[idx], rtol=1e-12)
    assert w._version == 1


def test_errors():
    w = ember.randn(5, 3)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int; but got Float"):
        embedding(ember.tensor([1.0]), w)
    for bad in (5, -1):
        with pytest.raises(IndexError, match="index out of range in self"):
            embedding(ember.tensor([bad]), w)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        embedding(ember.tensor([1]), ember.randn(5))
    for pad in (5, -6):
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            embedding(ember.tensor([1]), w, padding_idx=pad)


# -- one_hot -----------------------------------------------------------------------------------------------------------
def test_one_hot_matches_identity_rows(device):
    values = np.array([[1, 0], [3, 3]])
    out = one_hot(ember.tensor(values, device=device), num_classes=5)
    assert out.dtype == ember.int64 and out.shape == (2, 2, 5)
    np.testing.assert_array_equal(_np(out), np.eye(5, dtype=np.int64)[values])
    np.testing.assert_array_equal(_np(one_hot(ember.tensor(values, device=device))), np.eye(4)[values])
    assert one_hot(ember.tensor([], dtype=ember.int64, device=device), 3).shape == (0, 3)
    assert _np(one_hot(ember.tensor(2, device=device), 3)).tolist() == [0, 0, 1]


def test_one_hot_seed_snippet():
    # seeds/001: F.one_hot(torch.LongTensor([1, 2, 4, 4, 5]), num_classes = 6) printed these rows
    out = one_hot(ember.LongTensor([1, 2, 4, 4, 5]), num_classes=6)
    assert out.tolist() == [[0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 1, 0],
                            [0, 0, 0, 0, 0, 1]]


def test_one_hot_errors():
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        one_hot(ember.tensor([1], dtype=ember.int32))
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor."):
        one_hot(ember.tensor([], dtype=ember.int64))
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        one_hot(ember.tensor([-1]))
    for n in (3, 0, -2):
        with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
            one_hot(ember.tensor([3]), n)
