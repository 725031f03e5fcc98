"""conv1d / conv2d / conv_transpose1d / conv_transpose2d: values against loop references, gradients (first and
second order), output shapes, the CPU kernel's block loop, and PyTorch's errors."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from ember.backends.cpu_kernels import convolution as cpu_conv
from tests.core.helpers import check_grads, rand64


# -- independent references: one output (or input) position at a time ---------------------------------------
def _tup(v, nd):
    return (v,) * nd if isinstance(v, int) else tuple(v)


def ref_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation by direct loops over output positions; ``padding`` may be 'same' or 'valid'."""
    nd = x.ndim - 2
    stride, dilation = _tup(stride, nd), _tup(dilation, nd)
    kernel = w.shape[2:]
    if padding == "valid":
        before = after = (0,) * nd
    elif padding == "same":
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        before = tuple(t // 2 for t in total)
        after = tuple(t - t // 2 for t in total)
    else:
        before = after = _tup(padding, nd)
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(before, after)))
    out_size = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    n, c_in = x.shape[:2]
    c_out = w.shape[0]
    per_in, per_out = c_in // groups, c_out // groups
    out = np.zeros((n, c_out, *out_size), dtype=np.result_type(x, w))
    for b_i, co in itertools.product(range(n), range(c_out)):
        g = co // per_out
        for pos in itertools.product(*map(range, out_size)):
            total = 0
            for ci in range(per_in):
                for k in itertools.product(*map(range, kernel)):
                    src = tuple(p * s + kk * d for p, s, kk, d in zip(pos, stride, k, dilation))
                    total += xp[(b_i, g * per_in + ci) + src] * w[(co, ci) + k]
            out[(b_i, co) + pos] = total
    if b is not None:
        out += b.reshape((-1,) + (1,) * nd)
    return out


def ref_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed convolution by scattering every input entry through the kernel (the textbook definition)."""
    nd = x.ndim - 2
    stride, padding, output_padding, dilation = (_tup(v, nd) for v in (stride, padding, output_padding, dilation))
    kernel = w.shape[2:]
    n, c_in = x.shape[:2]
    per_in, per_out = c_in // groups, w.shape[1]
    size = [(x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + 1
            + output_padding[i] for i in range(nd)]
    out = np.zeros((n, per_out * groups, *size), dtype=np.result_type(x, w))
    for b_i, ci in itertools.product(range(n), range(c_in)):
        g = ci // per_in
        for pos in itertools.product(*map(range, x.shape[2:])):
            for co in range(per_out):
                for k in itertools.product(*map(range, kernel)):
                    dst = tuple(p * s + kk * d - pad for p, s, kk, d, pad in zip(pos, stride, k, dilation, padding))
                    if all(0 <= q < m for q, m in zip(dst, size)):
                        out[(b_i, g * per_out + co) + dst] += x[(b_i, ci) + pos] * w[(ci, co) + k]
    if b is not None:
        out += b.reshape((-1,) + (1,) * nd)
    return out


def _np(t):
    return t.detach().numpy(force=True)


CONV_CASES = [  # nd, input spatial, kernel, groups, kwargs
    (1, (7,), (3,), 1, {}),
    (1, (8,), (2,), 2, dict(stride=2, padding=1, dilation=2)),
    (1, (6,), (4,), 1, dict(padding="same")),
    (1, (9,), (3,), 1, dict(stride=3, padding="valid")),
    (2, (5, 6), (3, 3), 1, {}),
    (2, (6, 7), (3, 2), 2, dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2))),
    (2, (5, 5), (2, 4), 1, dict(padding="same", dilation=(2, 1))),
    (2, (7, 6), (3, 3), 4, dict(stride=2, padding=1)),
    (2, (6, 6), (1, 1), 1, dict(stride=(3, 2))),
]


@pytest.mark.parametrize("nd,size,kernel,groups,kw", CONV_CASES)
def test_conv_matches_loop_reference(nd, size, kernel, groups, kw, device):
    x = rand64(2, 4, *size, device=device, requires_grad=False)
    w = rand64(4, 4 // groups, *kernel, device=device, seed=1, requires_grad=False)
    b = rand64(4, device=device, seed=2, requires_grad=False)
    fn = F.conv1d if nd == 1 else F.conv2d
    out = fn(x, w, b, groups=groups, **kw)
    np.testing.assert_allclose(_np(out), ref_conv(_np(x), _np(w), _np(b), groups=groups, **kw), atol=1e-12)
    # without bias, and unbatched input (C, *spatial)
    np.testing.assert_allclose(_np(fn(x[0], w, groups=groups, **kw)),
                               ref_conv(_np(x[:1]), _np(w), groups=groups, **kw)[0], atol=1e-12)


TRANSPOSE_CASES = [  # nd, input spatial, kernel, groups, kwargs
    (1, (5,), (3,), 1, {}),
    (1, (4,), (2,), 2, dict(stride=3, padding=1, output_padding=2, dilation=2)),
    (1, (4,), (3,), 1, dict(stride=2, padding=2, output_padding=1)),
    (2, (3, 4), (3, 3), 1, {}),
    (2, (3, 3), (3, 2), 2, dict(stride=2, padding=1, output_padding=1)),
    (2, (4, 3), (2, 3), 1, dict(stride=(1, 2), padding=(0, 1), dilation=(2, 1), output_padding=(1, 0))),
    (2, (2, 3), (3, 3), 4, dict(stride=2, padding=(2, 0))),
]


@pytest.mark.parametrize("nd,size,kernel,groups,kw", TRANSPOSE_CASES)
def test_conv_transpose_matches_scatter_reference(nd, size, kernel, groups, kw, device):
    x = rand64(2, 4, *size, device=device, requires_grad=False)
    w = rand64(4, 2, *kernel, device=device, seed=1, requires_grad=False)
    b = rand64(w.shape[1] * groups, device=device, seed=2, requires_grad=False)
    fn = F.conv_transpose1d if nd == 1 else F.conv_transpose2d
    out = fn(x, w, b, groups=groups, **kw)
    np.testing.assert_allclose(_np(out), ref_conv_transpose(_np(x), _np(w), _np(b), groups=groups, **kw),
                               atol=1e-12)
    np.testing.assert_allclose(_np(fn(x[1], w, groups=groups, **kw)),
                               ref_conv_transpose(_np(x[1:]), _np(w), groups=groups, **kw)[0], atol=1e-12)


def test_float32_stays_float32_and_integers_convolve(device):
    x = ember.tensor(np.arange(2 * 3 * 5 * 5, dtype=np.float32).reshape(2, 3, 5, 5) / 10, device=device)
    w = ember.tensor(np.linspace(-1, 1, 2 * 3 * 9, dtype=np.float32).reshape(2, 3, 3, 3), device=device)
    out = F.conv2d(x, w, padding=1)
    assert out.dtype == ember.float32
    np.testing.assert_allclose(_np(out), ref_conv(_np(x).astype(np.float64), _np(w).astype(np.float64),
                                                  padding=1), rtol=1e-5, atol=1e-5)
    assert F.conv_transpose2d(x, w.transpose(0, 1), stride=2).dtype == ember.float32
    xi = ember.tensor([[[1, 2, 3, 4]]], device=device)
    wi = ember.tensor([[[1, 0, -1]]], device=device)
    assert F.conv1d(xi, wi).tolist() == [[[-2, -2]]]


def test_non_contiguous_inputs_and_empty_batch(device):
    x = rand64(2, 5, 6, 3, device=device, requires_grad=False).permute(0, 3, 1, 2)  # (2, 3, 5, 6), strided
    w = rand64(4, 3, 2, 2, device=device, seed=1, requires_grad=False)
    np.testing.assert_allclose(_np(F.conv2d(x, w, stride=(1, 2))), ref_conv(_np(x), _np(w), stride=(1, 2)),
                               atol=1e-12)
    empty = F.conv2d(ember.zeros(0, 3, 5, 5, dtype=ember.float64, device=device), w)
    assert tuple(empty.shape) == (0, 4, 4, 4)
    assert tuple(F.conv_transpose2d(ember.zeros(0, 4, 2, 2, dtype=ember.float64, device=device), w).shape) == \
        (0, 3, 3, 3)


@pytest.mark.parametrize("transposed,padding", [(False, (1, 0)), (False, 0), (True, 1), (True, 0)])
def test_cpu_kernel_block_loop(transposed, padding, monkeypatch):
    """Blocks of one sample each (the kernel's batch loop) give what one block gives."""
    x = rand64(3, 4, 5, 6, requires_grad=True)
    w = rand64(4, 2, 3, 2, seed=1, requires_grad=True)
    b = rand64(4, seed=2)
    fn = (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=padding, groups=2)) if transposed else \
        (lambda x, w, b: F.conv2d(x, w, b, padding=padding, groups=2))
    whole = fn(x, w, b)
    grads = ember.autograd.grad(whole.sum(), (x, w, b))
    monkeypatch.setattr(cpu_conv, "BLOCK_BYTES", 1)
    blocked = fn(x, w, b)
    np.testing.assert_allclose(_np(blocked), _np(whole), atol=1e-12)
    for g_blocked, g_whole in zip(ember.autograd.grad(blocked.sum(), (x, w, b)), grads):
        np.testing.assert_allclose(_np(g_blocked), _np(g_whole), atol=1e-12)


# -- gradients ----------------------------------------------------------------------------------------------
GRAD_CASES = [
    ("conv1d", (2, 4, 7), (4, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    ("conv1d", (1, 2, 6), (3, 2, 2), dict(padding="same")),
    ("conv2d", (2, 2, 5, 4), (3, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0))),
    ("conv2d", (1, 4, 5, 5), (4, 2, 2, 3), dict(dilation=(2, 1), padding="same", groups=2)),
    ("conv_transpose1d", (2, 2, 4), (2, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d", (1, 4, 3, 3), (4, 1, 2, 3), dict(stride=(2, 1), padding=(0, 1), dilation=(1, 2),
                                                          groups=2, output_padding=(1, 0))),
]


#: convolution is linear in each argument, so central differences are exact up to rounding: check tightly
TIGHT = dict(atol=1e-8, rtol=1e-6)


def _bias_size(name, w_shape, kw):
    return w_shape[1] * kw.get("groups", 1) if "transpose" in name else w_shape[0]


@pytest.mark.parametrize("name,x_shape,w_shape,kw", GRAD_CASES)
def test_gradcheck_input_weight_bias(name, x_shape, w_shape, kw, device):
    fn = getattr(F, name)
    x = rand64(*x_shape, device=device)
    w = rand64(*w_shape, device=device, seed=1)
    b = rand64(_bias_size(name, w_shape, kw), device=device, seed=2)
    check_grads(lambda x, w, b: fn(x, w, b, **kw), x, w, b, **TIGHT)


@pytest.mark.parametrize("name,x_shape,w_shape,kw", [
    ("conv2d", (2, 4, 5, 4), (2, 2, 3, 2), dict(stride=(1, 2), padding=1, groups=2)),
    ("conv2d", (1, 2, 4, 4), (2, 2, 2, 2), dict(padding="same", dilation=2)),
    ("conv_transpose2d", (1, 2, 3, 2), (2, 2, 2, 2), dict(stride=2, padding=1, output_padding=1)),
])
def test_gradgradcheck(name, x_shape, w_shape, kw, device):
    fn = getattr(F, name)
    x = rand64(*x_shape, device=device)
    w = rand64(*w_shape, device=device, seed=1)
    b = rand64(_bias_size(name, w_shape, kw), device=device, seed=2)
    check_grads(lambda x, w, b: fn(x, w, b, **kw), x, w, b, gradgrad=True, **TIGHT)


def test_grad_fn_names_and_unneeded_gradients(device):
    x = rand64(1, 2, 4, 4, device=device)
    w = rand64(3, 2, 2, 2, device=device, seed=1)
    out = F.conv2d(x, w)
    assert out.grad_fn.name() == "ConvolutionBackward0"
    assert F.conv_transpose2d(x, w.transpose(0, 1)).grad_fn.name() == "ConvolutionBackward0"
    gx, = ember.autograd.grad(out.sum(), x, create_graph=True)
    gw, = ember.autograd.grad(F.conv2d(x, w).sum(), w, create_graph=True)
    assert gx.grad_fn.name() == gw.grad_fn.name() == "ConvolutionBackwardBackward0"
    frozen = rand64(3, 2, 2, 2, device=device, seed=1, requires_grad=False)
    F.conv2d(x, frozen).sum().backward()  # only the input's gradient is computed
    assert frozen.grad is None and x.grad is not None
    # the gradient of sum(conv) with respect to the weight is the sum of the input's windows
    w_grad, = ember.autograd.grad(F.conv2d(x, w).sum(), w)
    expected = [[_np(x)[0, c, i:i + 3, j:j + 3].sum() for i in range(2) for j in range(2)] for c in range(2)]
    np.testing.assert_allclose(_np(w_grad)[0].reshape(2, 4), expected, atol=1e-12)


# -- shapes -------------------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(nd=st.sampled_from([1, 2]), data=st.data())
def test_output_shapes_follow_the_formula(nd, data):
    groups = data.draw(st.sampled_from([1, 2]))
    c_in, c_out = 2 * groups, data.draw(st.sampled_from([1, 2])) * groups
    kernel = data.draw(st.tuples(*[st.integers(1, 3)] * nd))
    stride = data.draw(st.tuples(*[st.integers(1, 3)] * nd))
    dilation = data.draw(st.tuples(*[st.integers(1, 2)] * nd))
    padding = data.draw(st.tuples(*[st.integers(0, 2)] * nd))
    extent = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    size = tuple(data.draw(st.integers(max(1, e - 2 * p), e + 4)) for e, p in zip(extent, padding))
    x = ember.ones(2, c_in, *size, dtype=ember.float64)
    w = ember.ones(c_out, c_in // groups, *kernel, dtype=ember.float64)
    conv = F.conv1d if nd == 1 else F.conv2d
    out = conv(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    expected = [(n + 2 * p - e) // s + 1 for n, p, e, s in zip(size, padding, extent, stride)]
    assert tuple(out.shape) == (2, c_out, *expected)
    np.testing.assert_allclose(_np(out), ref_conv(_np(x), _np(w), None, stride, padding, dilation, groups))

    output_padding = tuple(data.draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
    big = [(n - 1) * s - 2 * p + e + op for n, s, p, e, op in zip(size, stride, padding, extent, output_padding)]
    transpose = F.conv_transpose1d if nd == 1 else F.conv_transpose2d
    wt = ember.ones(c_in, c_out // groups, *kernel, dtype=ember.float64)
    if min(big) <= 0:
        with pytest.raises(RuntimeError, match="Output size is too small"):
            transpose(x, wt, stride=stride, padding=padding, output_padding=output_padding, groups=groups,
                      dilation=dilation)
        return
    out = transpose(x, wt, stride=stride, padding=padding, output_padding=output_padding, groups=groups,
                    dilation=dilation)
    assert tuple(out.shape) == (2, c_out, *big)


# -- errors (PyTorch's messages, checked by hand against torch 2.13) ------------------------------------------
def test_channel_group_and_rank_errors():
    w = ember.zeros(32, 1, 3, 3)
    with pytest.raises(RuntimeError, match=r"^Given groups=1, weight of size \[32, 1, 3, 3\], expected "
                                           r"input\[64, 3, 28, 28\] to have 1 channels, but got 3 channels instead$"):
        F.conv2d(ember.zeros(64, 3, 28, 28), w)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 3, 28, 28\] to have 1 channels"):
        F.conv2d(ember.zeros(3, 28, 28), w)  # unbatched input is reported with its batch dimension
    with pytest.raises(RuntimeError, match=r"^Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got "
                                           r"input of size: \[28, 28\]$"):
        F.conv2d(ember.zeros(28, 28), w)
    with pytest.raises(RuntimeError, match=r"^Expected 2D \(unbatched\) or 3D \(batched\) input to conv1d, but got "
                                           r"input of size: \[2, 3, 5, 5\]$"):
        F.conv1d(ember.zeros(2, 3, 5, 5), ember.zeros(3, 4, 3))
    with pytest.raises(RuntimeError, match=r"^Given groups=2, expected weight to be divisible by 2 at dimension 0, "
                                           r"but got weight of size \[\[3, 3, 3, 3\]\] instead$"):
        F.conv2d(ember.zeros(1, 6, 8, 8), ember.zeros(3, 3, 3, 3), groups=2)
    with pytest.raises(RuntimeError, match=r"^Given transposed=1, weight of size \[3, 4, 3, 3\], expected "
                                           r"input\[1, 2, 5, 5\] to have 3 channels, but got 2 channels instead$"):
        F.conv_transpose2d(ember.zeros(1, 2, 5, 5), ember.zeros(3, 4, 3, 3))
    with pytest.raises(RuntimeError, match=r"conv2d: expected a 4D weight \[out_channels, in_channels/groups, "
                                           r"2 kernel sizes\], but got weight of size \[32, 1, 3\]"):
        F.conv2d(ember.zeros(1, 1, 8, 8), ember.zeros(32, 1, 3))


def test_bias_dtype_and_size_errors():
    x, w = ember.zeros(1, 1, 8, 8), ember.zeros(32, 1, 3, 3)
    with pytest.raises(RuntimeError, match=r"^Given weight of size \[32, 1, 3, 3\], expected bias to be "
                                           r"1-dimensional with 32 elements, but got bias of size \[3\] instead$"):
        F.conv2d(x, w, bias=ember.zeros(3))
    with pytest.raises(RuntimeError, match=r"^Given transposed=1, weight of size \[4, 4, 3, 3\], expected bias to "
                                           r"be 1-dimensional with 8 elements, but got bias of size \[4\] instead$"):
        F.conv_transpose2d(ember.zeros(1, 4, 5, 5), ember.zeros(4, 4, 3, 3), groups=2, bias=ember.zeros(4))
    with pytest.raises(RuntimeError, match="^expected scalar type Double but found Float$"):
        F.conv2d(x.double(), w)
    with pytest.raises(RuntimeError, match=r"^Input type \(float\) and bias type \(double\) should be the same$"):
        F.conv2d(x, w, bias=ember.zeros(32, dtype=ember.float64))
    with pytest.raises(TypeError, match=r"conv2d\(\): argument 'input' \(position 1\) must be Tensor, not list|"
                                        r"argument 'input' must be Tensor, not list"):
        F.conv2d([1.0], w)


def test_argument_value_errors():
    x, w = ember.zeros(1, 1, 8, 8), ember.zeros(32, 1, 3, 3)
    cases = [
        (dict(stride=(0, 1)), "^non-positive stride is not supported$"),
        (dict(padding=(1, -1)), "^negative padding is not supported$"),
        (dict(dilation=(1, 0)), r"^dilation should be greater than zero, but got \[1, 0\]$"),
        (dict(groups=0), "^non-positive groups is not supported$"),
        (dict(stride=(1, 1, 1)), r"^expected stride to be a single integer value or a list of 2 values to match "
                                 r"the convolution dimensions, but got stride=\[1, 1, 1\]$"),
        (dict(stride=2, padding="same"), "^padding='same' is not supported for strided convolutions$"),
        (dict(padding="foo"), "^Invalid padding string: 'foo'$"),
    ]
    for kw, message in cases:
        with pytest.raises(RuntimeError, match=message):
            F.conv2d(x, w, **kw)
    with pytest.raises(RuntimeError, match=r"^Calculated padded input size per channel: \(2 x 2\). Kernel size: "
                                           r"\(3 x 3\). Kernel size can't be greater than actual input size$"):
        F.conv2d(ember.zeros(1, 1, 2, 2), w)
    with pytest.raises(RuntimeError, match=r"^Calculated padded input size per channel: \(2\). Kernel size: \(3\)."):
        F.conv1d(ember.zeros(1, 1, 2), ember.zeros(3, 1, 3))
    with pytest.raises(TypeError, match="argument 'padding' must be int or tuple of ints, not float"):
        F.conv2d(x, w, padding=1.5)
    with pytest.raises(TypeError, match="argument 'groups' must be int, not float"):
        F.conv2d(x, w, groups=1.5)


def test_transposed_argument_errors():
    x, w = ember.zeros(1, 3, 5, 5), ember.zeros(3, 4, 3, 3)
    with pytest.raises(RuntimeError, match=r"^output padding must be smaller than either stride or dilation, but got "
                                           r"output_padding_height: 2 output_padding_width: 2 stride_height: 1 "
                                           r"stride_width: 1 dilation_height: 1 dilation_width: 1$"):
        F.conv_transpose2d(x, w, output_padding=2)
    with pytest.raises(RuntimeError, match=r"^Given input size per channel: \(5 x 5\). Calculated output size per "
                                           r"channel: \(-3 x -3\). Output size is too small$"):
        F.conv_transpose2d(x, w, padding=5)
    with pytest.raises(TypeError, match=r"^conv_transpose2d\(\): argument 'padding' must be tuple of ints, not str$"):
        F.conv_transpose2d(x, w, padding="same")
    with pytest.raises(RuntimeError, match="^negative output_padding is not supported$"):
        F.conv_transpose2d(x, w, output_padding=-1)
    # output_padding below the dilation (but not the stride) is allowed, as in PyTorch
    assert tuple(F.conv_transpose2d(ember.zeros(1, 3, 5, 5), w, output_padding=(1, 0), stride=(1, 2),
                                    dilation=(2, 1)).shape) == (1, 4, 10, 11)


def test_mixed_devices_are_an_error(two_cpus):
    with pytest.raises(ember.errors.DeviceMismatchError, match="cpu:0 and cpu:1|cpu:1 and cpu:0"):
        F.conv2d(ember.zeros(1, 1, 4, 4, device="cpu:0"), ember.zeros(1, 1, 2, 2, device="cpu:1"))
