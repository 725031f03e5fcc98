"""F.interpolate: nearest, nearest-exact, (bi/tri)linear and area against plain-loop references; gradients; errors."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from tests.core.helpers import check_grads, rand64


def _np(t):
    return t.detach().numpy(force=True)


def ref_nearest(x, out, exact=False):
    """Nearest with ``scale = in / out`` in exact integer arithmetic: floor(o * in / out) (or of (o + 1/2))."""
    spatial = x.shape[2:]
    res = np.empty(x.shape[:2] + tuple(out))
    for pos in itertools.product(*(range(n) for n in out)):
        src = tuple(min(((2 * o + 1) * n) // (2 * m) if exact else (o * n) // m, n - 1)
                    for o, n, m in zip(pos, spatial, out))
        res[(Ellipsis,) + pos] = x[(Ellipsis,) + src]
    return res


def _source(o, n, m, align_corners, scale=None):
    """PyTorch's source coordinate of output ``o`` (``n`` inputs, ``m`` outputs) for the linear modes."""
    if align_corners:
        return o * (n - 1) / (m - 1) if m > 1 else 0.0
    ratio = 1.0 / scale if scale else n / m
    return max((o + 0.5) * ratio - 0.5, 0.0)


def ref_linear(x, out, align_corners, scales=None):
    """Multilinear interpolation, one output element at a time, over all 2**nd corner neighbours."""
    spatial = x.shape[2:]
    scales = scales or [None] * len(spatial)
    res = np.zeros(x.shape[:2] + tuple(out))
    for pos in itertools.product(*(range(m) for m in out)):
        corners = []
        for o, n, m, sc in zip(pos, spatial, out, scales):
            src = _source(o, n, m, align_corners, sc)
            i0 = min(math.floor(src), n - 1)
            frac = src - i0
            corners.append([(i0, 1.0 - frac), (min(i0 + 1, n - 1), frac)])
        for combo in itertools.product(*corners):
            weight = np.prod([w for _, w in combo])
            res[(Ellipsis,) + pos] += weight * x[(Ellipsis,) + tuple(i for i, _ in combo)]
    return res


@pytest.mark.parametrize("shape,out", [((2, 3, 5), (9,)), ((1, 2, 7), (3,)), ((2, 1, 3, 4), (7, 2)),
                                       ((1, 2, 4, 4), (4, 8)), ((1, 1, 2, 3, 4), (3, 5, 2))])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_matches_reference(shape, out, mode, device):
    x = rand64(*shape, device=device)
    y = F.interpolate(x, size=out, mode=mode)
    np.testing.assert_array_equal(_np(y), ref_nearest(_np(x), out, exact=mode == "nearest-exact"))
    kind = "Nearest" if mode == "nearest" else "NearestExact"
    assert y.grad_fn.name() == f"Upsample{kind}{len(out)}DBackward0"
    check_grads(lambda t: F.interpolate(t, size=out, mode=mode), rand64(1, 1, *shape[2:], device=device),
                gradgrad=True)


@pytest.mark.parametrize("shape,out,mode", [((2, 3, 5), (9,), "linear"), ((1, 2, 6), (4,), "linear"),
                                            ((1, 2, 3, 4), (5, 2), "bilinear"), ((2, 1, 4, 3), (4, 7), "bilinear"),
                                            ((1, 1, 2, 3, 2), (3, 2, 4), "trilinear")])
@pytest.mark.parametrize("align_corners", [False, True])
def test_linear_modes_match_reference(shape, out, mode, align_corners, device):
    x = rand64(*shape, device=device)
    y = F.interpolate(x, size=out, mode=mode, align_corners=align_corners)
    np.testing.assert_allclose(_np(y), ref_linear(_np(x), out, align_corners), rtol=1e-12, atol=1e-14)
    assert y.grad_fn.name() == f"Upsample{mode.capitalize()}{len(out)}DBackward0"
    check_grads(lambda t: F.interpolate(t, size=out, mode=mode, align_corners=align_corners),
                rand64(1, 1, *shape[2:], device=device), gradgrad=True)


def test_scale_factor_uses_its_inverse_unless_recomputed(device):
    x = ember.arange(5.0, dtype=ember.float64, device=device).reshape(1, 1, 5)
    y = F.interpolate(x, scale_factor=0.7, mode="linear")
    np.testing.assert_allclose(_np(y), ref_linear(_np(x), (3,), False, [0.7]))
    # the same values from PyTorch by hand: [0.2143, 1.6429, 3.0714] and, recomputed, [0.3333, 2.0, 3.6667]
    np.testing.assert_allclose(_np(y)[0, 0], [0.2142857, 1.6428571, 3.0714286], rtol=1e-6)
    recomputed = F.interpolate(x, scale_factor=0.7, mode="linear", recompute_scale_factor=True)
    np.testing.assert_allclose(_np(recomputed)[0, 0], [1 / 3, 2.0, 11 / 3], rtol=1e-12)
    xb = rand64(1, 2, 3, 4, device=device)
    yb = F.interpolate(xb, scale_factor=(1.5, 0.75), mode="bilinear")
    np.testing.assert_allclose(_np(yb), ref_linear(_np(xb), (4, 3), False, [1.5, 0.75]), rtol=1e-12)


def test_nearest_with_scale_factor_follows_pytorch(device):
    # from PyTorch by hand: 1-D and 3-D use floor(o / 2.3); the 2-D kernel maps a doubled size as o // 2
    assert F.interpolate(ember.arange(3.0, device=device).reshape(1, 1, 3), scale_factor=2.3).tolist() == \
        [[[0.0, 0.0, 0.0, 1.0, 1.0, 2.0]]]
    assert F.interpolate(ember.arange(3.0, device=device).reshape(1, 1, 1, 3), scale_factor=2.3)[0, 0, 0].tolist() \
        == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
    assert F.interpolate(ember.arange(5.0, device=device).reshape(1, 1, 5), scale_factor=1.5).tolist() == \
        [[[0.0, 0.0, 1.0, 2.0, 2.0, 3.0, 4.0]]]
    assert F.interpolate(ember.arange(5.0, device=device).reshape(1, 1, 5), size=7, mode="nearest-exact").tolist() \
        == [[[0.0, 1.0, 1.0, 2.0, 3.0, 3.0, 4.0]]]


def test_area_float32_and_integer_nearest(device):
    x = rand64(1, 2, 5, 7, device=device)
    y = F.interpolate(x, size=(2, 3), mode="area")
    np.testing.assert_allclose(_np(y), _np(F.adaptive_avg_pool2d(x, (2, 3))))
    assert F.interpolate(rand64(1, 1, 6, device=device), size=3, mode="area").shape == (1, 1, 3)
    f32 = ember.ones(1, 1, 2, 2, dtype=ember.float32, device=device)
    assert F.interpolate(f32, scale_factor=2, mode="bilinear").dtype == ember.float32
    ints = ember.tensor([[[1, 2, 3]]], device=device)
    assert F.interpolate(ints, size=6).tolist() == [[[1, 1, 2, 2, 3, 3]]]
    assert F.interpolate(ember.zeros(0, 1, 4, 5, device=device), size=3).shape == (0, 1, 3, 3)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 9), m=st.integers(1, 12), align_corners=st.booleans(), scale=st.floats(0.3, 3.0))
def test_property_sizes_and_values(n, m, align_corners, scale):
    x = np.random.default_rng(n * 13 + m).standard_normal((1, 2, n))
    np.testing.assert_array_equal(F.interpolate(ember.tensor(x), size=m).numpy(), ref_nearest(x, (m,)))
    np.testing.assert_allclose(F.interpolate(ember.tensor(x), size=m, mode="linear",
                                             align_corners=align_corners).numpy(),
                               ref_linear(x, (m,), align_corners), rtol=1e-12, atol=1e-14)
    if math.floor(n * scale) >= 1:
        assert F.interpolate(ember.tensor(x), scale_factor=scale).shape == (1, 2, math.floor(n * scale))


def test_errors():
    x = ember.zeros(1, 1, 4, 5)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError, match=r"spatial dimensions of \[4, 5\] and output size of \(3,\)"):
        F.interpolate(x, size=(3,))
    with pytest.raises(ValueError, match=r"scale_factor of shape \(2.0, 2.0, 2.0\)"):
        F.interpolate(x, scale_factor=(2.0, 2.0, 2.0))
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, size=3, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D input"):
        F.interpolate(x, size=3, mode="linear")
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D input Tensors supported \(got 2D\)"):
        F.interpolate(x[0, 0], size=3)
    with pytest.raises(NotImplementedError, match=r"\(got foo\)"):
        F.interpolate(x, size=3, mode="foo")
    with pytest.raises(RuntimeError, match=r"Input and output sizes should be greater than 0, but got input "
                                           r"\(H: 4, W: 5\) output \(H: 0, W: 0\)"):
        F.interpolate(x, scale_factor=0.1)
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful with an explicit size"):
        F.interpolate(x, size=3, recompute_scale_factor=True)
    with pytest.raises(TypeError, match="expected size to be one of int or Tuple"):
        F.interpolate(x, size=(3, 2.5))
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear"):
        F.interpolate(x, size=3, antialias=True)
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.interpolate(x, size=3, mode="bicubic")
    with pytest.raises(NotImplementedError, match="\"upsample_bilinear2d\" not implemented for 'Long'"):
        F.interpolate(ember.zeros(1, 1, 2, 2, dtype=ember.int64), size=3, mode="bilinear")
    with pytest.raises(RuntimeError, match=r"Non-empty 4D data tensor expected but got a tensor with sizes "
                                           r"\[1, 0, 4, 5\]"):
        F.interpolate(ember.zeros(1, 0, 4, 5), size=3)
