"""The cuda backend's kernels (``ember.backends.cuda.kernels``) give what the ops' own forwards give.

The kernels on plain ``xp`` calls run here on NumPy: they are installed as the CPU backend's kernels and
compared, forward and gradient, with the ops' array-API forwards (no kernels). On integer-valued inputs every
sum is exact whatever the order of the GEMM, so results must be equal to the bit; on random inputs they agree to
rounding. The CuPy-only kernels run on a GPU (marker ``cuda``, skipped with the reason otherwise), compared with
the ops' forwards run on the same CuPy arrays; here only their fall-back to the ops' forwards is checked.
"""
from types import SimpleNamespace

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _plugins
from ember.autograd.function import clear_kernel_cache
from ember.backends.cuda.kernels import (
    _arrays,
    _compiled,
    compiled_activations,
    compiled_pooling,
    compiled_softmax,
    kernels,
)
from ember.ops.activation import Gelu, Sigmoid, Silu
from ember.ops.pooling import AvgPool2d, AvgPoolBackward, MaxPool2d, MaxPoolBackward
from ember.ops.softmax import LogSoftmax, Softmax


@pytest.fixture
def cpu_kernels(monkeypatch):
    """``use(table)``: run the CPU backend's ops with the kernels ``table`` (``{}``: the ops' own forwards)."""
    def use(table):
        monkeypatch.setattr(_plugins, "op_kernels", lambda backend_name: dict(table))
        clear_kernel_cache()
    yield use
    monkeypatch.undo()
    clear_kernel_cache()


def _ints(rng, *shape):
    return ember.tensor(rng.integers(-3, 4, size=shape).astype(np.float64), requires_grad=True)


def _floats(rng, *shape):
    return ember.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)


def _run(fn, inputs):
    """``fn``'s output and the gradients of every input for a fixed random output gradient."""
    leaves = [t.detach().requires_grad_() for t in inputs]
    out = fn(*leaves)
    g = np.random.default_rng(7).integers(-2, 3, size=tuple(out.shape)).astype(out.detach().numpy().dtype)
    out.backward(ember.tensor(g))
    return [out.detach().numpy()] + [t.grad.numpy() for t in leaves]


def _compare(cpu_kernels, fn, inputs, exact):
    cpu_kernels({})
    expected = _run(fn, inputs)
    cpu_kernels(kernels())
    got = _run(fn, inputs)
    for e, r in zip(expected, got):
        assert r.shape == e.shape and r.dtype == e.dtype
        if exact:
            np.testing.assert_array_equal(r, e)
        else:
            np.testing.assert_allclose(r, e, rtol=1e-5, atol=1e-5)


# -- convolution: forward, input and weight gradients, every geometry ------------------------------------------
CONV2D = [  # (input shape, weight shape, keyword arguments)
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), dict(stride=2)),  # trailing input no window reaches (cropped)
    ((2, 4, 8, 9), (6, 2, 3, 3), dict(stride=(2, 1), padding=1, groups=2)),
    ((1, 3, 9, 9), (3, 1, 3, 3), dict(padding=2, dilation=2, groups=3)),  # depthwise, dilated
    ((2, 2, 6, 7), (5, 2, 2, 3), dict(padding="same", dilation=(1, 2))),  # asymmetric padding
    ((3, 3, 5, 5), (2, 3, 1, 1), dict(stride=3)),
]
CONV_T2D = [
    ((2, 4, 3, 4), (4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ((1, 4, 4, 3), (4, 2, 2, 3), dict(stride=(1, 2), groups=2, dilation=(2, 1))),
    ((2, 2, 5, 5), (2, 3, 3, 3), dict(padding=2)),
]


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("x_shape, w_shape, kw", CONV2D)
def test_conv2d_matches_the_op(cpu_kernels, exact, x_shape, w_shape, kw):
    rng = np.random.default_rng(0)
    make = _ints if exact else _floats
    x, w, b = make(rng, *x_shape), make(rng, *w_shape), make(rng, w_shape[0])
    _compare(cpu_kernels, lambda x, w, b: F.conv2d(x, w, b, **kw), [x, w, b], exact)


@pytest.mark.parametrize("x_shape, w_shape, kw", CONV_T2D)
def test_conv_transpose2d_matches_the_op(cpu_kernels, x_shape, w_shape, kw):
    rng = np.random.default_rng(1)
    x, w, b = _ints(rng, *x_shape), _ints(rng, *w_shape), _ints(rng, w_shape[1] * kw.get("groups", 1))
    _compare(cpu_kernels, lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), [x, w, b], True)


@pytest.mark.parametrize("kw", [{}, dict(stride=2, padding=2, dilation=2), dict(groups=2, padding="same")])
def test_conv1d_and_transpose_match_the_op(cpu_kernels, kw):
    rng = np.random.default_rng(2)
    x, w = _ints(rng, 2, 4, 11), _ints(rng, 6, 4 // kw.get("groups", 1), 3)
    _compare(cpu_kernels, lambda x, w: F.conv1d(x, w, **kw), [x, w], True)
    tkw = {k: v for k, v in kw.items() if k != "padding" or v != "same"}
    _compare(cpu_kernels, lambda x, w: F.conv_transpose1d(x, w, **tkw), [_ints(rng, 2, 6, 5), w], True)


def test_conv2d_second_order_gradient_matches_the_op(cpu_kernels):
    """Double backward runs the kernels again (the weight gradient's own backward is made of convolutions)."""
    rng = np.random.default_rng(3)

    def grad_norm(x, w):
        gx, gw = ember.autograd.grad(F.conv2d(x, w, stride=2, padding=1).square().sum(), (x, w), create_graph=True)
        return gx.square().sum() + gw.square().sum()

    _compare(cpu_kernels, grad_norm, [_ints(rng, 2, 2, 6, 5), _ints(rng, 3, 2, 3, 3)], True)


# -- index_add / scatter_add ----------------------------------------------------------------------------------
def test_index_add_matches_the_op(cpu_kernels):
    rng = np.random.default_rng(4)
    index = ember.tensor([2, 0, 2, 3, 0])
    _compare(cpu_kernels, lambda a, s: a.index_add(1, index, s, alpha=2), [_ints(rng, 3, 4, 2),
                                                                             _ints(rng, 3, 5, 2)], True)
    cpu_kernels(kernels())
    ints = ember.zeros(4, dtype=ember.int64).index_add(0, index[:3], ember.tensor([5, 6, 7]))
    assert ints.tolist() == [6, 0, 12, 0]


def test_scatter_add_matches_the_op(cpu_kernels):
    rng = np.random.default_rng(5)
    index = ember.tensor([[0, 1, 1], [2, 2, 0]])
    _compare(cpu_kernels, lambda a, s: a.scatter_add(1, index, s), [_ints(rng, 2, 3), _ints(rng, 2, 4)], True)
    cpu_kernels(kernels())
    flags = ember.zeros(3, dtype=ember.bool).scatter_add(0, ember.tensor([1]), ember.tensor([True]))
    assert flags.tolist() == [False, True, False]


# -- CuPy-only kernels: the ops' own forwards for other arrays ----------------------------------------------
def test_compiled_kernels_run_the_ops_forwards_on_numpy_arrays(cpu_kernels):
    rng = np.random.default_rng(6)
    _compare(cpu_kernels, lambda x: F.max_pool2d(x, 3, 2, 1), [_floats(rng, 2, 3, 7, 6)], True)
    _compare(cpu_kernels, lambda x: F.avg_pool2d(x, 2, ceil_mode=True), [_floats(rng, 2, 3, 7, 6)], True)
    _compare(cpu_kernels, lambda x: F.gelu(x) + F.silu(x) + x.sigmoid(), [_floats(rng, 50)], True)
    _compare(cpu_kernels, lambda x: F.softmax(x, 1) + F.log_softmax(x, 0), [_floats(rng, 4, 5)], True)


# -- on a GPU -----------------------------------------------------------------------------------------------
def _cupy():
    """The real CuPy with a GPU, or a skip saying why not."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no GPU")
    except Exception as exc:  # ImportError, CUDARuntimeError (no driver), ...
        pytest.skip(f"needs CuPy and an NVIDIA GPU ({type(exc).__name__}: {exc})")
    if _arrays.real_cupy(cupy.empty(0)) is None:
        pytest.skip("needs the real CuPy, not the stand-in")
    return cupy


def _ctx(op):
    return object.__new__(op)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype, tol", [("float16", 1e-2), ("float32", 2e-6), ("float64", 1e-13)])
@pytest.mark.parametrize("name", ["sigmoid", "silu", "gelu", "gelu_tanh"])
def test_fused_activations_on_gpu(name, dtype, tol):
    cupy = _cupy()
    x = cupy.asarray(np.random.default_rng(0).standard_normal(10_001) * 8, dtype=dtype)
    x[:4] = cupy.asarray([0.0, -0.0, np.inf, -np.inf], dtype=dtype)
    op, kernel, kw = {"sigmoid": (Sigmoid, compiled_activations.sigmoid, {}),
                      "silu": (Silu, compiled_activations.silu, {}),
                      "gelu": (Gelu, compiled_activations.gelu, {}),
                      "gelu_tanh": (Gelu, compiled_activations.gelu, {"approximate": "tanh"})}[name]
    got = kernel(_ctx(op), cupy, x, **kw)
    expected = op.forward(_ctx(op), cupy, x, **kw)
    assert got.dtype == expected.dtype
    assert not _compiled.FAILED, "a kernel did not compile (its op ran its own forward)"
    np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float64), cupy.asnumpy(expected).astype(np.float64),
                               rtol=tol, atol=tol)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_and_log_softmax_on_gpu(dtype, dim):
    cupy = _cupy()
    host = np.random.default_rng(6).standard_normal((5, 7)) * 10
    host[1] = -np.inf  # an all -inf slice along dim 1, and a -inf in every slice along dim 0
    host[2, 3] = np.inf
    a = cupy.asarray(host, dtype=dtype)
    for op, kernel in ((Softmax, compiled_softmax.softmax), (LogSoftmax, compiled_softmax.log_softmax)):
        got, expected = kernel(_ctx(op), cupy, a, dim=dim), op.forward(_ctx(op), cupy, a, dim=dim)
        np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(expected))
    assert not _compiled.FAILED, "a kernel did not compile (its op ran its own forward)"


POOLS = [dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), ceil_mode=False),
         dict(kernel_size=(2, 3), stride=(2, 1), padding=(0, 1), dilation=(2, 1), ceil_mode=True),
         dict(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1), ceil_mode=False)]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
@pytest.mark.parametrize("kw", POOLS)
def test_max_pool_and_backward_on_gpu(kw, dtype):
    cupy = _cupy()
    host = np.random.default_rng(1).integers(-4, 5, size=(2, 3, 9, 8)).astype(dtype)  # many ties
    if dtype.startswith("float"):
        host[0, 0, 0, :3] = np.nan
        host[1, 1] = -np.inf  # a window of only the lowest value
    a = cupy.asarray(host)
    mine, ref = _ctx(MaxPool2d), _ctx(MaxPool2d)
    got = compiled_pooling.max_pool(mine, cupy, a, **kw)
    expected = MaxPool2d.forward(ref, cupy, a, **kw)
    np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(expected))
    for s, e in zip(mine.sels, ref.sels):
        np.testing.assert_array_equal(cupy.asnumpy(s), cupy.asnumpy(e))
    if dtype.startswith("float"):
        g = cupy.asarray(np.random.default_rng(2).standard_normal(got.shape), dtype=dtype)
        back = compiled_pooling.max_pool_backward(_ctx(MaxPoolBackward), cupy, g, windows=ref.windows, sels=ref.sels)
        back_ref = MaxPoolBackward.forward(_ctx(MaxPoolBackward), cupy, g, windows=ref.windows, sels=ref.sels)
        np.testing.assert_array_equal(cupy.asnumpy(back), cupy.asnumpy(back_ref))
    assert not _compiled.FAILED, "a kernel did not compile (its op ran its own forward)"


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("include_pad", [True, False])
def test_avg_pool_and_backward_on_gpu(dtype, include_pad):
    cupy = _cupy()
    a = cupy.asarray(np.random.default_rng(3).standard_normal((2, 3, 9, 8)), dtype=dtype)
    kw = dict(kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), ceil_mode=True, count_include_pad=include_pad,
              divisor_override=None)
    mine, ref = _ctx(AvgPool2d), _ctx(AvgPool2d)
    got = compiled_pooling.avg_pool(mine, cupy, a, **kw)
    expected = AvgPool2d.forward(ref, cupy, a, **kw)
    np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(expected))
    g = cupy.asarray(np.random.default_rng(4).standard_normal(got.shape), dtype=dtype)
    args = dict(pool=AvgPool2d, windows=ref.windows, div=ref.div, attrs=ref.attrs)
    back = compiled_pooling.avg_pool_backward(_ctx(AvgPoolBackward), cupy, g, **args)
    back_ref = AvgPoolBackward.forward(_ctx(AvgPoolBackward), cupy, g, **args)
    np.testing.assert_array_equal(cupy.asnumpy(back), cupy.asnumpy(back_ref))
    assert not _compiled.FAILED, "a kernel did not compile (its op ran its own forward)"


@pytest.mark.cuda
def test_plain_kernels_on_gpu():
    """Convolution and scatter kernels on CuPy arrays against the ops' forwards on the same arrays."""
    cupy = _cupy()
    from ember.backends.cuda.kernels import convolution, scatter
    from ember.ops.convolution import ConvGeometry, Convolution, ConvolutionWeightGrad
    from ember.ops.gather import IndexAdd
    rng = np.random.default_rng(5)
    x = cupy.asarray(rng.integers(-3, 4, size=(4, 6, 11, 10)).astype(np.float32))
    w = cupy.asarray(rng.integers(-3, 4, size=(8, 3, 3, 3)).astype(np.float32))
    geo = ConvGeometry((2, 1), ((1, 0), (1, 1)), (1, 2), 2)
    out = convolution.convolution(SimpleNamespace(), cupy, x, w, geometry=geo, transposed=False)
    ref = Convolution.forward(SimpleNamespace(), cupy, x, w, geometry=geo, transposed=False)
    np.testing.assert_array_equal(cupy.asnumpy(out), cupy.asnumpy(ref))
    back = convolution.convolution(SimpleNamespace(), cupy, out, w, geometry=geo, transposed=True)
    back_ref = Convolution.forward(SimpleNamespace(), cupy, out, w, geometry=geo, transposed=True)
    np.testing.assert_array_equal(cupy.asnumpy(back), cupy.asnumpy(back_ref))
    gw = convolution.convolution_weight_grad(SimpleNamespace(), cupy, x, out, geometry=geo, kernel_size=(3, 3))
    gw_ref = ConvolutionWeightGrad.forward(SimpleNamespace(), cupy, x, out, geometry=geo, kernel_size=(3, 3))
    np.testing.assert_array_equal(cupy.asnumpy(gw), cupy.asnumpy(gw_ref))
    index = cupy.asarray([1, 0, 1, 3])
    base, src = cupy.zeros((5, 3), dtype=cupy.float32), cupy.ones((4, 3), dtype=cupy.float32)
    added = scatter.index_add(SimpleNamespace(), cupy, base, src, index=index, dim=0)
    added_ref = IndexAdd.forward(SimpleNamespace(), cupy, base, src, index=index, dim=0)
    np.testing.assert_array_equal(cupy.asnumpy(added), cupy.asnumpy(added_ref))

