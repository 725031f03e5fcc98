"""ember-numba's max pooling stages give exactly the generic NumPy stage's maxima, winners and gradients (ties, NaN,
padding, dilation, ceil_mode), and ember's max pool uses them for large float arrays."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from ember import _plugins
from ember.backends.cpu_kernels import pooling as cpu_pooling
from ember.ops import _pool_windows as pw
from ember_numba.pool_kernels import max_stage, scatter


def _kernel_stage(a, axis, win):
    return cpu_pooling._compiled_max_stage(max_stage, a, axis, win)


def _kernel_scatter(g, axis, win, sel):
    return cpu_pooling._compiled_scatter_stage(scatter, g, axis, win, sel)


GUARD = 64


def _guarded(shape, dtype, fill):
    """A C-contiguous array of ``shape`` inside a buffer that holds ``fill`` for GUARD elements on each side."""
    buffer = np.full(int(np.prod(shape)) + 2 * GUARD, fill, dtype)
    return buffer, buffer[GUARD:buffer.size - GUARD].reshape(shape)


def _untouched(buffer, fill):
    """Nothing was written to the guard elements around the array (a kernel's out-of-bounds write)."""
    guards = np.concatenate([buffer[:GUARD], buffer[buffer.size - GUARD:]])
    return np.array_equal(guards.view(np.uint8), np.full(guards.shape, fill, buffer.dtype).view(np.uint8))


def _writes_inside_its_outputs(a, axis, win, g):
    """Run both kernels on (outer, L, inner) views with guarded outputs; True when no guard was written."""
    a3 = cpu_pooling._as_3d(np.ascontiguousarray(a), axis)
    shape = (a3.shape[0], win.out, a3.shape[2])
    out_buf, out = _guarded(shape, a.dtype, 7.0)
    sel_buf, sel = _guarded(shape, np.int8, 7)
    max_stage(a3, win.k, win.s, win.d, win.left, a.dtype.type(-np.inf), out, sel)
    z_buf, z = _guarded(a3.shape, a.dtype, 7.0)
    scatter(cpu_pooling._as_3d(np.ascontiguousarray(g), axis), sel, win.k, win.s, win.d, win.left, z)
    return all(_untouched(buf, fill) for buf, fill in ((out_buf, 7.0), (sel_buf, 7), (z_buf, 7.0)))


@st.composite
def stage_cases(draw):
    size = draw(st.integers(1, 12))
    k = draw(st.integers(1, min(size, 5)))
    d = draw(st.integers(1, 3))
    while d > 1 and d * (k - 1) + 1 > size:
        d -= 1
    s = draw(st.integers(1, 4))
    p = draw(st.integers(0, k // 2))
    ceil_mode = draw(st.booleans())
    shape = draw(st.sampled_from([(size,), (2, size), (3, size, 2), (2, 2, size, 3)]))
    axis = shape.index(size) - len(shape)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    # few distinct values: many ties; some NaN and -inf
    values = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, -1.0, -np.inf, np.nan]), min_size=int(np.prod(shape)),
                           max_size=int(np.prod(shape))))
    a = np.array(values, dtype=dtype).reshape(shape)
    return a, axis, pw.Windows(size, k, s, p, d, ceil_mode)


@settings(max_examples=300, deadline=None)
@given(stage_cases(), st.integers(0, 2**31 - 1))
# windows that tile the input but for ceil_mode's last one, which reaches past its end (the generator rarely
# draws these; the scatter once wrote past the gradient's end there)
@example((np.zeros(3, np.float32), -1, pw.Windows(3, 2, 2, 0, 1, True)), 0)
@example((np.arange(10.0).reshape(2, 5), -1, pw.Windows(5, 3, 3, 0, 1, True)), 1)
def test_a_stage_and_its_scatter_are_the_generic_ones_bit_for_bit(case, seed):
    a, axis, win = case
    out, sel = _kernel_stage(a, axis, win)
    ref_out, ref_sel = pw.max_stage(np, a, axis, win)
    np.testing.assert_array_equal(out, ref_out)
    assert out.dtype == ref_out.dtype and out.shape == ref_out.shape
    np.testing.assert_array_equal(sel, ref_sel)
    rng = np.random.default_rng(seed)
    g = rng.choice(np.array([0.5, -1.25, 3.0, 1e-3, np.inf, np.nan], a.dtype), out.shape)
    z = _kernel_scatter(g, axis, win, sel)
    ref = pw.scatter_stage(np, g, axis, win, sel)
    assert z.shape == ref.shape == a.shape
    np.testing.assert_array_equal(z, ref)
    assert _writes_inside_its_outputs(a, axis, win, g)


def _spy(monkeypatch):
    """Count the calls of the plugin's pool kernels through ember's kernel table."""
    calls = []
    kernels = dict(_plugins.cpu_kernels())
    for name in ("max_pool_stage", "max_pool_scatter"):
        kernels[name] = (lambda name, kernel: lambda *args: calls.append(name) or kernel(*args))(name, kernels[name])
    monkeypatch.setattr(_plugins, "cpu_kernels", lambda: kernels)
    return calls


@pytest.mark.parametrize("threads", [1, 2])
def test_max_pool2d_uses_the_kernels_and_matches_the_generic_ops(monkeypatch, threads):
    # a CNN's pool: 64x8x24x24 float32, with ties; forward, indices and backward against the generic passes
    rng = np.random.default_rng(1)
    x_np = rng.integers(-3, 4, (64, 8, 24, 24)).astype(np.float32)
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        calls = _spy(monkeypatch)
        x = ember.tensor(x_np, requires_grad=True)
        out, idx = F.max_pool2d(x, 2, return_indices=True)
        g = ember.tensor(rng.standard_normal(out.shape).astype(np.float32))
        out.backward(g)
    finally:
        ember.set_num_threads(before)
    assert calls.count("max_pool_stage") >= 2 and calls.count("max_pool_scatter") >= 2
    windows = pw.pool_windows(x_np.shape, (2, 2), (2, 2), (0, 0), (1, 1), False)
    ref_out, ref_sels = pw.max_stages(np, x_np, windows)
    np.testing.assert_array_equal(out.detach().numpy(), ref_out)
    np.testing.assert_array_equal(idx.numpy(), pw.flat_indices(np, windows, ref_sels, x_np.shape))
    ref_grad = g.numpy()
    for i in range(2):
        ref_grad = pw.scatter_stage(np, ref_grad, i - 2, windows[i], ref_sels[i])
    np.testing.assert_array_equal(x.grad.numpy(), ref_grad)


def test_inference_max_pool_with_padding_uses_the_kernel(monkeypatch):
    # resnet's stem pool: 3x3, stride 2, padding 1, without grad, on the CPU backend's kernel (ember-onednn, when
    # installed, claims this op at inference: the resolved kernel is swapped back)
    from ember.backends.cpu_kernels import pooling
    from ember.ops.pooling import MaxPool2d
    monkeypatch.setitem(MaxPool2d._kernels, "cpu", pooling.max_pool)
    x_np = np.random.default_rng(2).standard_normal((8, 16, 32, 32)).astype(np.float32)
    calls = _spy(monkeypatch)
    with ember.no_grad():
        out = F.max_pool2d(ember.tensor(x_np), 3, stride=2, padding=1)
    assert calls.count("max_pool_stage") == 2
    windows = pw.pool_windows(x_np.shape, (3, 3), (2, 2), (1, 1), (1, 1), False)
    np.testing.assert_array_equal(out.numpy(), pw.max_stages(np, x_np, windows)[0])
