"""Pooling ops: values, indices and gradients against plain-loop NumPy references, ties and NaN, errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from tests.core.helpers import check_grads, rand64

# -- plain-loop references (one output element at a time) ---------------------------------------------------------

def _taps(o, size, k, s, p, d):
    """The input positions of window ``o`` that fall inside the input."""
    return [o * s - p + i * d for i in range(k) if 0 <= o * s - p + i * d < size]


def _out_len(size, k, s, p, d, ceil_mode):
    """Window count: windows that fit in the padded input, plus (ceil mode) a partial one starting in range."""
    eff = d * (k - 1) + 1
    n = 0
    while n * s + eff <= size + 2 * p:
        n += 1
    if ceil_mode and (n - 1) * s + eff < size + 2 * p and n * s < size + p:
        n += 1
    return n


def ref_max_pool2d(x, k, s, p, d, ceil_mode=False):
    """Values and flat indices; a later element wins only if strictly greater or NaN (PyTorch's scan order)."""
    *lead, h, w = x.shape
    oh, ow = _out_len(h, k[0], s[0], p[0], d[0], ceil_mode), _out_len(w, k[1], s[1], p[1], d[1], ceil_mode)
    flat = x.reshape(-1, h, w)
    vals = np.empty((flat.shape[0], oh, ow), x.dtype)
    idx = np.empty((flat.shape[0], oh, ow), np.int64)
    for b in range(flat.shape[0]):
        for i in range(oh):
            for j in range(ow):
                best, where = None, None
                for r in _taps(i, h, k[0], s[0], p[0], d[0]):
                    for c in _taps(j, w, k[1], s[1], p[1], d[1]):
                        v = flat[b, r, c]
                        if best is None or v > best or np.isnan(v):
                            best, where = v, r * w + c
                vals[b, i, j], idx[b, i, j] = best, where
    return vals.reshape(*lead, oh, ow), idx.reshape(*lead, oh, ow)


def ref_max_grad(x_shape, idx, g):
    """The max pool gradient: each output's gradient added at its index."""
    *lead, h, w = x_shape
    out = np.zeros((int(np.prod(lead, dtype=int)), h * w))
    for b, (row, grow) in enumerate(zip(idx.reshape(out.shape[0], -1), g.reshape(out.shape[0], -1))):
        for i, v in zip(row, grow):
            out[b, i] += v
    return out.reshape(x_shape)


def ref_avg_pool2d(x, k, s, p, ceil_mode=False, count_include_pad=True, divisor_override=None):
    *lead, h, w = x.shape
    oh, ow = _out_len(h, k[0], s[0], p[0], 1, ceil_mode), _out_len(w, k[1], s[1], p[1], 1, ceil_mode)
    flat = x.reshape(-1, h, w)
    out = np.empty((flat.shape[0], oh, ow))
    for b in range(flat.shape[0]):
        for i in range(oh):
            for j in range(ow):
                rows, cols = _taps(i, h, k[0], s[0], p[0], 1), _taps(j, w, k[1], s[1], p[1], 1)
                total = sum(flat[b, r, c] for r in rows for c in cols)
                if divisor_override:
                    div = divisor_override
                elif count_include_pad:  # window size clipped to the padded input
                    div = (min(i * s[0] - p[0] + k[0], h + p[0]) - (i * s[0] - p[0])) * \
                          (min(j * s[1] - p[1] + k[1], w + p[1]) - (j * s[1] - p[1]))
                else:
                    div = len(rows) * len(cols)
                out[b, i, j] = total / div
    return out.reshape(*lead, oh, ow)


def _adaptive_ranges(size, out):
    return [(math.floor(o * size / out), math.ceil((o + 1) * size / out)) for o in range(out)]


def ref_adaptive2d(x, out_hw, reduce):
    *lead, h, w = x.shape
    flat = x.reshape(-1, h, w)
    res = np.empty((flat.shape[0],) + tuple(out_hw))
    for b in range(flat.shape[0]):
        for i, (r0, r1) in enumerate(_adaptive_ranges(h, out_hw[0])):
            for j, (c0, c1) in enumerate(_adaptive_ranges(w, out_hw[1])):
                res[b, i, j] = reduce(flat[b, r0:r1, c0:c1])
    return res.reshape(*lead, *out_hw)


def _np(t):
    return t.detach().numpy(force=True)


# -- max pooling --------------------------------------------------------------------------------------------------

MAX_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    ((2, 2), (2, 2), (0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (1, 1), True),
    ((2, 3), (1, 2), (1, 0), (2, 1), False),
    ((3, 2), (2, 3), (0, 1), (1, 2), True),
]


@pytest.mark.parametrize("k,s,p,d,ceil_mode", MAX_CASES)
def test_max_pool2d_matches_loop_reference(k, s, p, d, ceil_mode, device):
    x = rand64(2, 3, 7, 8, device=device)
    y, i = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil_mode, return_indices=True)
    ref, ref_i = ref_max_pool2d(_np(x), k, s, p, d, ceil_mode)
    np.testing.assert_array_equal(_np(y), ref)
    np.testing.assert_array_equal(_np(i), ref_i)
    assert i.dtype == ember.int64 and y.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    g = rand64(*ref.shape, seed=3, requires_grad=False, device=device)
    y.backward(g)
    np.testing.assert_allclose(_np(x.grad), ref_max_grad(x.shape, ref_i, _np(g)))


@pytest.mark.parametrize("k,s,p,d,ceil_mode", MAX_CASES)
def test_max_pool2d_gradients_first_and_second_order(k, s, p, d, ceil_mode, device):
    x = rand64(1, 1, 5, 6, device=device)
    check_grads(lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode), x, gradgrad=True)


def test_max_pool2d_float32_ties_and_integer_grid(device):
    # small integers give many ties; the gradient must go to the first maximum of each window
    rng = np.random.default_rng(5)
    data = rng.integers(-2, 3, size=(2, 3, 9, 8)).astype(np.float32)
    for k, s, p, d, ceil_mode in MAX_CASES:
        x = ember.tensor(data, requires_grad=True, device=device)
        y, i = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil_mode, return_indices=True)
        ref, ref_i = ref_max_pool2d(data, k, s, p, d, ceil_mode)
        assert y.dtype == ember.float32
        np.testing.assert_array_equal(_np(y), ref)
        np.testing.assert_array_equal(_np(i), ref_i)
        g = np.arange(ref.size, dtype=np.float32).reshape(ref.shape)
        y.backward(ember.tensor(g, device=device))
        np.testing.assert_array_equal(_np(x.grad), ref_max_grad(data.shape, ref_i, g))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int32])
def test_max_pool2d_without_grad_mode_gives_the_same_values(dtype, device):
    # under no_grad only the maxima are computed (no winners kept): same values, NaN and -inf included
    rng = np.random.default_rng(7)
    data = rng.integers(-2, 3, size=(2, 3, 9, 8)).astype(np.float64)
    data[0, 0, 1, 1] = np.nan
    data[1, 2, :3, :3] = -np.inf
    if dtype is ember.int32:
        data = np.nan_to_num(data, nan=0.0, neginf=-5.0)
    x = ember.tensor(data, device=device).to(dtype)
    for k, s, p, d, ceil_mode in MAX_CASES:
        with_grad = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil_mode)
        with ember.no_grad():
            without = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil_mode)
        assert without.dtype == dtype
        np.testing.assert_array_equal(_np(without), _np(with_grad))
    with_grad = F.max_pool1d(x[0], 3, 2, 1)
    with ember.no_grad():
        np.testing.assert_array_equal(_np(F.max_pool1d(x[0], 3, 2, 1)), _np(with_grad))


def test_max_pool_tie_goes_to_first_in_row_major_order(device):
    # equal maxima at (0, 1) and (1, 0): PyTorch picks (0, 1), the first in row-major order
    x = ember.tensor([[[[0.0, 5.0], [5.0, 1.0]]]], requires_grad=True, device=device)
    y, i = F.max_pool2d(x, 2, return_indices=True)
    assert i.tolist() == [[[[1]]]]
    y.sum().backward()
    assert x.grad.tolist() == [[[[0.0, 1.0], [0.0, 0.0]]]]


def test_max_pool_nan_and_minus_infinity(device):
    nan, inf = float("nan"), float("inf")
    # expected values and indices taken from PyTorch by hand: NaN propagates and the last NaN is the index
    y, i = F.max_pool1d(ember.tensor([[[nan, 1.0, nan, 2.0]]], device=device), 4, return_indices=True)
    assert math.isnan(y.item()) and i.item() == 2
    y, i = F.max_pool2d(ember.tensor([[[[1.0, nan], [nan, 3.0]]]], device=device), 2, return_indices=True)
    assert math.isnan(y.item()) and i.item() == 2
    # a window over padding and -inf inputs: the value is -inf and the index the window's first input
    x = ember.tensor([[[-inf, -inf, -inf, -inf]]], requires_grad=True, device=device)
    y, i = F.max_pool1d(x, 3, padding=1, return_indices=True)
    assert y.tolist() == [[[-inf, -inf]]] and i.tolist() == [[[0, 2]]]
    y.sum().backward()
    assert x.grad.tolist() == [[[1.0, 0.0, 1.0, 0.0]]]


def test_max_pool_non_finite_gradient_reaches_only_the_winner(device):
    x = ember.tensor([[[1.0, 3.0, 2.0, 0.0]]], requires_grad=True, device=device)
    F.max_pool1d(x, 2).backward(ember.tensor([[[float("inf"), 1.0]]], device=device))
    assert x.grad.tolist() == [[[0.0, float("inf"), 1.0, 0.0]]]
    x.grad = None  # overlapping windows, both won by the 3
    F.max_pool1d(x, 3, stride=1).backward(ember.tensor([[[float("inf"), 1.0]]], device=device))
    assert x.grad.tolist() == [[[0.0, float("inf"), 0.0, 0.0]]]


def test_second_backward_needs_retain_graph(device):
    x = rand64(1, 4, 4, device=device)
    y = F.max_pool2d(x, 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.sum().item() == 8.0  # four winners, twice
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_max_pool1d_unbatched_and_integers(device):
    x = rand64(2, 9, device=device)
    y, i = F.max_pool1d(x, 3, 2, 1, 2, ceil_mode=True, return_indices=True)
    ref, ref_i = ref_max_pool2d(_np(x)[:, None, :], (1, 3), (1, 2), (0, 1), (1, 2), True)
    np.testing.assert_array_equal(_np(y), ref[:, 0])
    np.testing.assert_array_equal(_np(i), ref_i[:, 0])
    assert y.grad_fn.name() == "MaxPool1DWithIndicesBackward0"
    check_grads(lambda t: F.max_pool1d(t, 3, 2, 1, 2, ceil_mode=True), x, gradgrad=True)
    ints = ember.tensor([[[5, -7, 3, 9, 2]]], device=device)
    out = F.max_pool1d(ints, 2, stride=1, padding=1)
    assert out.dtype == ember.int64 and out.tolist() == [[[5, 5, 3, 9, 9, 2]]]


def test_max_pool2d_unbatched_and_empty_batch(device):
    x = rand64(2, 5, 5, device=device)
    np.testing.assert_array_equal(_np(F.max_pool2d(x, 2)), ref_max_pool2d(_np(x), (2, 2), (2, 2), (0, 0), (1, 1))[0])
    assert F.max_pool2d(ember.zeros(0, 1, 4, 4, device=device), 2).shape == (0, 1, 2, 2)


@settings(max_examples=40, deadline=None)
@given(size=st.integers(1, 12), k=st.integers(1, 4), s=st.integers(1, 3), d=st.integers(1, 3),
       p_frac=st.floats(0, 1), ceil_mode=st.booleans(), seed=st.integers(0, 1000))
def test_output_length_and_values_property(size, k, s, d, p_frac, ceil_mode, seed):
    p = int(p_frac * (k // 2))
    if _out_len(size, k, s, p, d, ceil_mode) < 1:
        with pytest.raises(RuntimeError, match="Output size is too small"):
            F.max_pool1d(ember.zeros(1, size), k, s, p, d, ceil_mode)
        return
    data = np.random.default_rng(seed).integers(-3, 4, size=(2, size)).astype(np.float64)
    if any(not _taps(o, size, k, s, p, d) for o in range(_out_len(size, k, s, p, d, ceil_mode))):
        return  # a window over padding alone (possible with dilation): PyTorch's index is meaningless there
    y, i = F.max_pool1d(ember.tensor(data), k, s, p, d, ceil_mode, return_indices=True)
    ref, ref_i = ref_max_pool2d(data[:, None, :], (1, k), (1, s), (0, p), (1, d), ceil_mode)
    np.testing.assert_array_equal(y.numpy(), ref[:, 0])
    np.testing.assert_array_equal(i.numpy(), ref_i[:, 0])
    avg = F.avg_pool1d(ember.tensor(data), k, s, p, ceil_mode, count_include_pad=bool(seed % 2))
    ref_avg = ref_avg_pool2d(data[:, None, :], (1, k), (1, s), (0, p), ceil_mode, bool(seed % 2))
    np.testing.assert_allclose(avg.numpy(), ref_avg[:, 0])


# -- average pooling ----------------------------------------------------------------------------------------------

AVG_CASES = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    ((2, 2), (2, 2), (0, 0), False, True, None),
    ((3, 3), (2, 2), (1, 1), True, True, None),
    ((3, 2), (2, 1), (1, 1), True, False, None),
    ((2, 3), (3, 2), (1, 0), False, True, 5),
]


@pytest.mark.parametrize("k,s,p,ceil_mode,cip,div", AVG_CASES)
def test_avg_pool2d_matches_loop_reference_and_gradchecks(k, s, p, ceil_mode, cip, div, device):
    x = rand64(2, 2, 7, 6, device=device)
    y = F.avg_pool2d(x, k, s, p, ceil_mode, cip, div)
    np.testing.assert_allclose(_np(y), ref_avg_pool2d(_np(x), k, s, p, ceil_mode, cip, div), rtol=1e-12)
    assert y.grad_fn.name() == "AvgPool2DBackward0"
    check_grads(lambda t: F.avg_pool2d(t, k, s, p, ceil_mode, cip, div), rand64(1, 1, 5, 6, device=device),
                gradgrad=True)


def test_avg_pool1d_unbatched_float32_and_infinity(device):
    x = ember.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]], dtype=ember.float32, device=device)
    y = F.avg_pool1d(x, 2, 2, 1, ceil_mode=True, count_include_pad=False)
    assert y.dtype == ember.float32 and y.tolist() == [[1.0, 2.5, 4.5]]
    # count_include_pad counts the padding (2 of 2 for the first window, 1 real element)
    assert F.avg_pool1d(x, 2, 2, 1).tolist() == [[0.5, 2.5, 4.5]]
    inf = ember.tensor([[float("inf"), 1.0, 2.0, 3.0]], device=device)
    assert F.avg_pool1d(inf, 2).tolist() == [[float("inf"), 2.5]]
    check_grads(lambda t: F.avg_pool1d(t, 3, 2, 1, True, False), rand64(2, 8, device=device), gradgrad=True)
    assert F.avg_pool1d(rand64(1, 4, device=device), 2).grad_fn.name() == "AvgPool1DBackward0"


# -- adaptive pooling ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("out", [(1, 1), (3, 4), (2, 7), (5, 3), (7, 9)])
def test_adaptive_pools_match_loop_reference(out, device):
    x = rand64(2, 3, 5, 7, device=device)
    avg = F.adaptive_avg_pool2d(x, out)
    np.testing.assert_allclose(_np(avg), ref_adaptive2d(_np(x), out, np.mean), rtol=1e-12)
    mx, i = F.adaptive_max_pool2d(x, out, return_indices=True)
    np.testing.assert_array_equal(_np(mx), ref_adaptive2d(_np(x), out, np.max))
    flat = _np(x).reshape(6, 35)
    np.testing.assert_array_equal(np.take_along_axis(flat, _np(i).reshape(6, -1), 1).reshape(_np(mx).shape),
                                  _np(mx))


@pytest.mark.parametrize("out", [(1, 1), (3, 2), (5, 6)])
def test_adaptive_pools_gradients_first_and_second_order(out, device):
    x = rand64(1, 1, 4, 5, device=device)
    check_grads(lambda t: F.adaptive_avg_pool2d(t, out), x, gradgrad=True)
    check_grads(lambda t: F.adaptive_max_pool2d(t, out), x, gradgrad=True)


def test_adaptive_names_none_sizes_unbatched_and_1d(device):
    x = rand64(2, 3, 5, device=device)
    assert F.adaptive_avg_pool2d(x, (None, 2)).shape == (2, 3, 2)
    assert F.adaptive_avg_pool2d(x, (2, 2)).grad_fn.name() == "AdaptiveAvgPool2DBackward0"
    assert F.adaptive_max_pool2d(x, 2).grad_fn.name() == "AdaptiveMaxPool2DBackward0"
    y = F.adaptive_avg_pool1d(x, 3)
    np.testing.assert_allclose(_np(y), ref_adaptive2d(_np(x)[:, :, None, :], (1, 3), np.mean)[:, :, 0])
    check_grads(lambda t: F.adaptive_avg_pool1d(t, 4), x, gradgrad=True)
    check_grads(lambda t: F.adaptive_max_pool1d(t, 2), x, gradgrad=True)
    mx, i = F.adaptive_max_pool1d(ember.tensor([[1.0, 9.0, 3.0, 9.0, 2.0]], device=device), 2, return_indices=True)
    assert mx.tolist() == [[9.0, 9.0]] and i.tolist() == [[1, 3]]
    # -inf inside a window is averaged as -inf, never as NaN
    assert F.adaptive_avg_pool1d(ember.tensor([[-float("inf"), 1.0, 2.0]], device=device), 2).tolist() == \
        [[-float("inf"), 1.5]]
    assert F.adaptive_avg_pool2d(x, 0).shape == (2, 0, 0)


# -- errors -------------------------------------------------------------------------------------------------------

def test_argument_errors():
    x = ember.zeros(1, 1, 5, 5)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, but got pad=2, "
                                           "kernel_size=2 and dilation=1"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="pad should be smaller than or equal to half of kernel size"):
        F.max_pool2d(x, 3, padding=2, dilation=2)
    with pytest.raises(RuntimeError, match=r"Given input size: \(1x5x5\). Calculated output size: \(1x0x0\). "
                                           "Output size is too small"):
        F.avg_pool2d(x, 6)
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        F.max_pool2d(x, 2, stride=0)
    with pytest.raises(RuntimeError, match="kernel_size should be greater than zero"):
        F.max_pool1d(x[0], 0)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        F.max_pool2d(x, 2, dilation=0)
    with pytest.raises(RuntimeError, match="pad must be non-negative, but got pad: -1"):
        F.avg_pool2d(x, 2, padding=-1)
    with pytest.raises(RuntimeError, match="max_pool2d: kernel_size must either be a single int, or a tuple of "
                                           "two ints"):
        F.max_pool2d(x, (2, 2, 2))
    with pytest.raises(RuntimeError, match="stride must either be omitted, a single int, or a tuple of one int"):
        F.avg_pool1d(x[0], 2, stride=(1, 1))
    with pytest.raises(TypeError, match="argument 'kernel_size' must be tuple of ints, not float"):
        F.max_pool2d(x, 2.0)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)


def test_input_errors():
    with pytest.raises(RuntimeError, match=r"max_pool2d: Expected 3D or 4D \(batch mode\) tensor with optional 0 "
                                           r"dim batch size for input, but got: \[5, 5\]"):
        F.max_pool2d(ember.zeros(5, 5), 2)
    with pytest.raises(RuntimeError, match=r"but got: \[2, 0, 4, 4\]"):
        F.max_pool2d(ember.zeros(2, 0, 4, 4), 2)
    with pytest.raises(RuntimeError, match=r"avg_pool1d: Expected 2D or 3D .* but got: \[1, 1, 5, 5\]"):
        F.avg_pool1d(ember.zeros(1, 1, 5, 5), 2)
    with pytest.raises(NotImplementedError, match="\"avg_pool2d\" not implemented for 'Long'"):
        F.avg_pool2d(ember.zeros(1, 4, 4, dtype=ember.int64), 2)
    with pytest.raises(NotImplementedError, match="\"max_pool2d\" not implemented for 'Bool'"):
        F.max_pool2d(ember.zeros(1, 4, 4, dtype=ember.bool), 2)
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        F.max_pool1d([[1.0, 2.0]], 2)


def test_adaptive_errors():
    x = ember.zeros(1, 1, 5, 5)
    with pytest.raises(RuntimeError, match="adaptive_avg_pool2d: output_size must be 2"):
        F.adaptive_avg_pool2d(x, (2, 2, 2))
    with pytest.raises(RuntimeError, match=r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got \[5, 5\]"):
        F.adaptive_avg_pool2d(x[0, 0], 2)
    with pytest.raises(RuntimeError, match=r"elements of output_size must be greater than or equal to 0 but "
                                           r"received \{2, -1\}"):
        F.adaptive_max_pool2d(x, (2, -1))
    with pytest.raises(RuntimeError, match=r"non-zero size for non-batch dimensions, but input has sizes "
                                           r"\[1, 1, 0, 3\] with dimension 2 being empty"):
        F.adaptive_max_pool2d(ember.zeros(1, 1, 0, 3), 2)
    with pytest.raises(RuntimeError, match="adaptive_avg_pool1d: output_size must be 1"):
        F.adaptive_avg_pool1d(x[0], (2, 2))
    with pytest.raises(NotImplementedError, match="\"adaptive_avg_pool2d\" not implemented for 'Long'"):
        F.adaptive_avg_pool2d(ember.zeros(1, 4, 4, dtype=ember.int64), 2)
