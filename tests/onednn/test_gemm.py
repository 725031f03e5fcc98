"""ember-onednn's float32 GEMM (CPU kernel ``gemm_float32``): the products of ember's CPU backend go to it from
``CPU_KERNEL_MIN`` multiply-adds on, with NumPy's results (to float32 rounding) for every operand layout, and
NumPy's BLAS then keeps one thread."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _plugins
from ember.backends.numpy_namespace import xp
from ember_onednn import plugin

from .test_plugin import _ember

pytestmark = pytest.mark.skipif(plugin.gemm() is None, reason="oneDNN cannot be loaded here")


@pytest.fixture
def calls(monkeypatch):
    """The shapes ``(a, b)`` of each call of the plugin's GEMM through ember's kernel table."""
    seen = []
    kernels = dict(_plugins.cpu_kernels())
    kernel = kernels["gemm_float32"]
    kernels["gemm_float32"] = lambda a, b, out: seen.append((a.shape, b.shape)) or kernel(a, b, out)
    monkeypatch.setattr(_plugins, "cpu_kernels", lambda: kernels)
    return seen


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


RNG = np.random.default_rng(0)
A = RNG.standard_normal((70, 300), np.float32)
B = RNG.standard_normal((300, 90), np.float32)
LAYOUTS = {
    "row-major": (A, B),
    "transposed views": (A.T.copy().T, B.T.copy().T),
    "strided rows (column slices)": (RNG.standard_normal((70, 400), np.float32)[:, 50:350], B),
    "every other column (copied)": (RNG.standard_normal((70, 600), np.float32)[:, ::2], B),
    "negative strides (copied)": (A[::-1], B[:, ::-1]),
    "one row": (A[:1], RNG.standard_normal((300, 900), np.float32)),
    "one column": (RNG.standard_normal((900, 300), np.float32), B[:, :1]),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_products_of_every_layout_go_to_the_kernel_with_numpy_s_result(layout, calls):
    a, b = LAYOUTS[layout]
    got = xp.matmul(a, b)
    assert calls and got.dtype == np.float32 and got.shape == (a.shape[0], b.shape[1])
    _close(got, np.matmul(a.astype(np.float64), b.astype(np.float64)))


def test_out_is_written_and_returned_and_an_overlapping_out_goes_to_numpy(calls):
    out = np.empty((70, 90), np.float32)
    assert xp.matmul(A, B, out=out) is out and len(calls) == 1
    _close(out, A.astype(np.float64) @ B)
    square = RNG.standard_normal((64, 64), np.float32)
    want = square @ square
    assert xp.matmul(square, square, out=square) is square and len(calls) == 1  # NumPy's matmul, which copies
    np.testing.assert_array_equal(square, want)


@pytest.mark.parametrize("a, b", [(A.astype(np.float64), B.astype(np.float64)), (A[:4, :8], B[:8, :4]),
                                  (np.ones((3, 70, 300), np.float32), B), (A[:, :0], B[:0])])
def test_float64_small_batched_and_empty_products_stay_with_numpy(a, b, calls):
    np.testing.assert_array_equal(xp.matmul(a, b), np.matmul(a, b))
    assert not calls


def test_a_linear_layer_s_forward_and_backward_run_on_it(calls):
    x = ember.randn(128, 784, requires_grad=True)
    w = ember.randn(512, 784, requires_grad=True)
    y = F.linear(x, w)
    y.backward(ember.ones_like(y))
    assert sorted(calls) == sorted([((128, 784), (784, 512)), ((128, 512), (512, 784)), ((512, 128), (128, 784))])
    x64, w64 = x.detach().numpy().astype(np.float64), w.detach().numpy().astype(np.float64)
    _close(y.detach().numpy(), x64 @ w64.T)
    _close(x.grad.numpy(), np.ones((128, 512)) @ w64)
    _close(w.grad.numpy(), np.ones((512, 128)) @ x64)


def test_numpy_s_blas_keeps_one_thread_once_the_kernel_runs_and_ember_s_count_stays():
    out = _ember("""
        import threadpoolctl, numpy as np, ember
        from ember.backends.numpy_namespace import xp
        blas = lambda: {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}
        xp.matmul(np.ones((64, 64), np.float32), np.ones((64, 64), np.float32))
        print(ember.get_num_threads(), blas())
        ember.set_num_threads(2)
        print(ember.get_num_threads(), blas())
    """, OPENBLAS_NUM_THREADS="2")
    assert out.split("\n")[:2] == ["2 {1}", "2 {1}"]
