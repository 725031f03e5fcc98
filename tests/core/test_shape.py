"""Shape ops: values against NumPy (property tests), gradients on every backend, errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from tests.core.helpers import check_grads, rand64

shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4)
SETTINGS = settings(max_examples=40, deadline=None)


def arr(shape, seed=0):
    return np.random.default_rng(seed).integers(-5, 5, size=shape).astype(np.float64)


@SETTINGS
@given(shapes, st.data())
def test_cat_stack_match_numpy(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    n = data.draw(st.integers(1, 3))
    parts = []
    for i in range(n):
        s = list(shape)
        s[dim] = data.draw(st.integers(0, 3))
        parts.append(arr(s, i))
    got = ember.cat([ember.tensor(p) for p in parts], dim=dim).numpy()
    np.testing.assert_array_equal(got, np.concatenate(parts, axis=dim))
    same = [arr(shape, i) for i in range(n)]
    sdim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    np.testing.assert_array_equal(ember.stack([ember.tensor(p) for p in same], sdim).numpy(), np.stack(same, sdim))


@SETTINGS
@given(shapes, st.data())
def test_split_chunk_match_numpy(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    a = arr(shape)
    n = shape[dim]
    size = data.draw(st.integers(1, 5))
    got = [p.numpy() for p in ember.tensor(a).split(size, dim)]
    want = np.split(a, range(size, n, size), axis=dim) if n else [a]
    assert len(got) == len(want) and all(np.array_equal(g, w) for g, w in zip(got, want))
    chunks = data.draw(st.integers(1, 5))
    got = ember.tensor(a).chunk(chunks, dim)
    assert sum(c.shape[dim] for c in got) == n and len(got) <= chunks
    np.testing.assert_array_equal(np.concatenate([c.numpy() for c in got], axis=dim), a)


@SETTINGS
@given(shapes, st.data())
def test_permute_flip_roll_match_numpy(shape, data):
    a = arr(shape)
    x = ember.tensor(a)
    perm = data.draw(st.permutations(range(len(shape))))
    np.testing.assert_array_equal(x.permute(*perm).numpy(), a.transpose(perm))
    dims = tuple(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    np.testing.assert_array_equal(x.flip(dims).numpy(), np.flip(a, dims))
    shifts = tuple(data.draw(st.integers(-6, 6)) for _ in dims)
    np.testing.assert_array_equal(x.roll(shifts, dims).numpy(), np.roll(a, shifts, dims))
    np.testing.assert_array_equal(x.roll(shifts[0]).numpy(), np.roll(a, shifts[0]))


@SETTINGS
@given(shapes, st.data())
def test_repeat_tile_squeeze_unsqueeze_match_numpy(shape, data):
    a = arr(shape)
    x = ember.tensor(a)
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=len(shape), max_size=len(shape) + 2)))
    np.testing.assert_array_equal(x.repeat(*reps).numpy(), np.tile(a, reps))
    short = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=len(shape) + 1)))
    np.testing.assert_array_equal(x.tile(short).numpy(), np.tile(a, short))
    np.testing.assert_array_equal(x.squeeze().numpy(), np.squeeze(a))
    d = data.draw(st.integers(-len(shape) - 1, len(shape)))
    np.testing.assert_array_equal(x.unsqueeze(d).numpy(), np.expand_dims(a, d))


def test_cat_promotes_and_skips_legacy_empty(device):
    a = ember.tensor([[1, 2]], device=device)
    b = ember.tensor([[0.5, 1.5]], device=device)
    out = ember.cat([a, b])
    assert out.dtype == ember.float32 and out.tolist() == [[1.0, 2.0], [0.5, 1.5]]
    assert ember.cat([a, ember.zeros(0, dtype=ember.int64, device=device)]).shape == (1, 2)
    assert ember.concat is ember.cat and ember.concatenate is ember.cat


def test_hstack_vstack(device):
    a, b = ember.tensor([1, 2], device=device), ember.tensor([3, 4], device=device)
    assert ember.hstack([a, b]).tolist() == [1, 2, 3, 4]
    assert ember.vstack([a, b]).tolist() == [[1, 2], [3, 4]]
    m = ember.ones(2, 1, device=device)
    assert ember.hstack([m, m]).shape == (2, 2)


@pytest.mark.parametrize("fn", [
    lambda a, b: ember.cat([a, b], dim=1), lambda a, b: ember.cat([a, b * 2, a]), lambda a, b: ember.stack([a, b], 1),
    lambda a, b: ember.hstack([a, b]), lambda a, b: ember.vstack([a, b]), lambda a, b: ember.where(a > 0, a, b),
    lambda a, b: ember.where(a > b, a, 0.5), lambda a, b: ember.where(a > b, 2.0, b[:1]),
])
def test_binary_shape_op_grads(device, fn):
    check_grads(fn, rand64(2, 3, device=device, seed=1), rand64(2, 3, device=device, seed=2), gradgrad=True)


@pytest.mark.parametrize("fn", [
    lambda t: t.flip(0), lambda t: t.flip((0, 1)), lambda t: t.roll(1), lambda t: t.roll((1, -2), (0, 1)),
    lambda t: t.repeat(2, 1), lambda t: t.repeat(2, 1, 3), lambda t: t.tile((2,)), lambda t: t.tril(),
    lambda t: t.triu(1), lambda t: t.tril(-1), lambda t: t.masked_fill(t > 0, 0.0), lambda t: ember.fliplr(t),
    lambda t: t.masked_fill(ember.tensor([True, False, True], device=t.device), -1.0),
])
def test_unary_shape_op_grads(device, fn):
    check_grads(fn, rand64(2, 3, device=device), gradgrad=True)


def test_masked_fill_value_tensor_gets_grad(device):
    x = rand64(2, 3, device=device)
    v = rand64(device=device, seed=3)
    check_grads(lambda a, b: a.masked_fill(a > 0, b), x, v)


def test_where_dtypes_and_single_argument(device):
    c = ember.tensor([True, False], device=device)
    assert ember.where(c, 1, 0).dtype == ember.int64
    assert ember.where(c, 1.0, 0).dtype == ember.float32
    x = ember.tensor([1, 2], device=device)
    assert ember.where(c, x, 0.5).tolist() == [1.0, 0.5]
    idx, = ember.where(ember.tensor([0, 3, 0, 1], device=device) > 0)
    assert idx.tolist() == [1, 3]
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, but got a tensor "
                                           "with dtype Float"):
        ember.where(ember.ones(2, device=device), x, x)


def test_nonzero(device):
    x = ember.tensor([[0, 1, 0], [2, 0, 3]], device=device)
    assert x.nonzero().tolist() == [[0, 1], [1, 0], [1, 2]]
    assert x.nonzero().dtype == ember.int64
    rows, cols = x.nonzero(as_tuple=True)
    assert rows.tolist() == [0, 1, 1] and cols.tolist() == [1, 0, 2]
    assert ember.tensor(5, device=device).nonzero().shape == (1, 0)
    assert not ember.ones(2, requires_grad=True).nonzero().requires_grad


def test_shape_op_grad_fn_names():
    x = ember.ones(2, 2, requires_grad=True) * 1
    assert ember.cat([x, x]).grad_fn.name() == "CatBackward0"
    assert ember.stack([x, x]).grad_fn.name() == "StackBackward0"
    assert x.flip(0).grad_fn.name() == "FlipBackward0"
    assert x.roll(1).grad_fn.name() == "RollBackward0"
    assert x.repeat(2, 1).grad_fn.name() == "RepeatBackward0" == x.tile((2,)).grad_fn.name()
    assert x.tril().grad_fn.name() == "TrilBackward0" and x.triu().grad_fn.name() == "TriuBackward0"
    assert ember.where(x > 0, x, 0.0).grad_fn.name() == "WhereBackward0"
    assert x.masked_fill(x > 0, 1.0).grad_fn.name() == "MaskedFillBackward0"


@pytest.mark.parametrize("call,exc,msg", [
    (lambda x: ember.cat([]), ValueError, r"expected a non-empty list of Tensors"),
    (lambda x: ember.cat([x, ember.zeros(3, 3, device=x.device)], dim=1), RuntimeError,
     "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the "
     "list."),
    (lambda x: ember.cat([x, x[0]]), RuntimeError, "Tensors must have same number of dimensions: got 2 and 1"),
    (lambda x: ember.cat([x[0, 0], x[0, 0]]), RuntimeError, "zero-dimensional tensor \\(at position 0\\) cannot be "
                                                            "concatenated"),
    (lambda x: ember.cat([x, x], dim=2), IndexError, "Dimension out of range"),
    (lambda x: ember.cat(x), TypeError, "must be a tuple or list of Tensors"),
    (lambda x: ember.stack([x, x.t()]), RuntimeError, r"stack expects each tensor to be equal size, but got \[2, 3\] "
                                                      r"at entry 0 and \[3, 2\] at entry 1"),
    (lambda x: x.repeat(2), RuntimeError, "Number of dimensions of repeat dims can not be smaller"),
    (lambda x: x.flip((0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda x: x.roll((1, 2), 0), RuntimeError, "shifts and dimensions must align"),
    (lambda x: x[0].tril(), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    (lambda x: x.masked_fill(x, 1.0), RuntimeError, "masked_fill_ only supports boolean masks"),
    (lambda x: x.masked_fill(x > 0, x[0]), RuntimeError, "only supports a 0-dimensional value tensor, but got "
                                                         "tensor with 1 dimension"),
])
def test_shape_errors(device, call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(ember.zeros(2, 3, device=device))


# -- repeat_interleave -----------------------------------------------------------------

@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)), st.data())
@settings(max_examples=40, deadline=None)
def test_repeat_interleave_matches_numpy_repeat(a, data):
    dim = data.draw(st.integers(0, a.ndim - 1))
    counts = data.draw(st.lists(st.integers(0, 3), min_size=a.shape[dim], max_size=a.shape[dim]))
    got = ember.tensor(a).repeat_interleave(ember.tensor(counts), dim=dim)
    np.testing.assert_array_equal(got.numpy(), np.repeat(a, counts, axis=dim))
    np.testing.assert_array_equal(ember.tensor(a).repeat_interleave(2).numpy(), np.repeat(a.reshape(-1), 2))


def test_repeat_interleave_of_counts_alone_and_its_gradient():
    assert ember.repeat_interleave(ember.tensor([1, 0, 2])).tolist() == [0, 2, 2]
    x = rand64(2, 3)
    check_grads(lambda t: t.repeat_interleave(ember.tensor([2, 1]), dim=0), x)
    x.repeat_interleave(3, dim=1).sum().backward()
    assert x.grad.tolist() == [[3.0] * 3] * 2


def test_repeat_interleave_rejects_bad_repeats():
    with pytest.raises(RuntimeError, match="repeats must be 0-dim or 1-dim tensor with 2 elements"):
        ember.ones(2, 2).repeat_interleave(ember.tensor([1, 2, 3]), dim=0)
    with pytest.raises(RuntimeError, match="negative"):
        ember.ones(2).repeat_interleave(-1)


def test_stack_of_zero_dim_tensors_promotes_like_any_other():
    a, b = ember.tensor(1.0), ember.tensor(2.0, dtype=ember.float64)
    assert ember.stack([a, b]).dtype == ember.float64  # PyTorch: float64; 0-d inputs are not "scalars" here
    assert ember.cat([ember.ones(1, dtype=ember.int32), ember.ones(1)]).dtype == ember.float32
