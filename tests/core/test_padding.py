"""F.pad: every mode against numpy.pad, cropping, gradients (first and second order), PyTorch's rules and errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from tests.core.helpers import check_grads, rand64

NP_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def ref_pad(a, pad, mode, value=0.0):
    """numpy.pad with PyTorch's argument order (last dimension first); negative amounts crop first."""
    widths = [(0, 0)] * a.ndim
    crop = [slice(None)] * a.ndim
    for i in range(len(pad) // 2):
        dim = a.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        crop[dim] = slice(max(-left, 0), a.shape[dim] - max(-right, 0))
        widths[dim] = (max(left, 0), max(right, 0))
    a = a[tuple(crop)]
    if mode == "constant":
        return np.pad(a, widths, mode="constant", constant_values=value)
    return np.pad(a, widths, mode=NP_MODES[mode])


def _np(t):
    return t.detach().numpy(force=True)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", [(1, 2), (2, 0, 1, 3), (0, 1, 2, 1, 1, 0)])
def test_modes_match_numpy_pad(mode, pad, device):
    x = rand64(*{2: (2, 3, 5), 4: (2, 3, 4, 5), 6: (1, 2, 3, 4, 5)}[len(pad)], device=device)
    y = F.pad(x, pad, mode=mode)
    np.testing.assert_array_equal(_np(y), ref_pad(_np(x), pad, mode))
    names = {"constant": "ConstantPadNdBackward0", "reflect": f"ReflectionPad{len(pad) // 2}DBackward0",
             "replicate": f"ReplicationPad{len(pad) // 2}DBackward0",
             "circular": f"CircularPad{len(pad) // 2}DBackward0"}
    assert y.grad_fn.name() == names[mode]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_gradients_first_and_second_order(mode, device):
    x = rand64(1, 2, 3, 4, device=device)
    check_grads(lambda t: F.pad(t, (2, 1, 1, 2), mode=mode), x, gradgrad=True)
    check_grads(lambda t: F.pad(t, (3, -1), mode=mode), x[0], gradgrad=True)


def test_gradient_of_reflect_counts_each_read(device):
    # [1, 2, 3] reflect-padded by (2, 2) reads [3, 2, 1, 2, 3, 2, 1]: input 0 once, 1 three times, 2 three times
    x = ember.tensor([[1.0, 2.0, 3.0]], requires_grad=True, device=device)
    F.pad(x, (2, 2), mode="reflect").sum().backward()
    assert x.grad.tolist() == [[2.0, 3.0, 2.0]]
    x.grad = None
    F.pad(x, (3, 1), mode="replicate").sum().backward()
    assert x.grad.tolist() == [[4.0, 1.0, 2.0]]


def test_constant_value_dtype_and_cropping(device):
    ints = ember.tensor([[1, 2, 3]], device=device)
    out = F.pad(ints, (1, 1), value=2.7)  # PyTorch truncates the value to the integer dtype
    assert out.dtype == ember.int64 and out.tolist() == [[2, 1, 2, 3, 2]]
    assert F.pad(ember.tensor([[True]], device=device), (1, 0)).tolist() == [[False, True]]
    x = ember.arange(12.0, device=device).reshape(3, 4)
    np.testing.assert_array_equal(_np(F.pad(x, (-1, 2, 1, -2), value=-1.0)),
                                  ref_pad(_np(x), (-1, 2, 1, -2), "constant", -1.0))
    assert F.pad(x, (-2, -2)).shape == (3, 0)
    y = F.pad(x, (1, 1))
    y[0, 0] = 5.0  # the output owns its memory
    assert x[0, 0].item() == 0.0
    assert F.pad(rand64(2, 2, device=device), ()).shape == (2, 2)


def test_pytorch_negative_amount_rules(device):
    # taken from PyTorch by hand: reflect and replicate index the whole input, circular crops first, then wraps
    x = ember.arange(5.0, device=device).reshape(1, 1, 5)
    assert F.pad(x, (-3, 4), mode="reflect").tolist() == [[[3.0, 4.0, 3.0, 2.0, 1.0, 0.0]]]
    assert F.pad(x, (-6, 4), mode="replicate").tolist() == [[[4.0, 4.0, 4.0]]]
    assert F.pad(x, (-3, 1), mode="circular").tolist() == [[[3.0, 4.0, 3.0]]]
    assert F.pad(x, (5, 5), mode="circular").shape == (1, 1, 15)


def test_unbatched_and_three_dimensional_inputs(device):
    x = rand64(2, 3, 4, device=device)
    for mode in ("reflect", "replicate", "circular"):
        np.testing.assert_array_equal(_np(F.pad(x, (1, 2, 2, 1), mode=mode)), ref_pad(_np(x), (1, 2, 2, 1), mode))
        np.testing.assert_array_equal(_np(F.pad(x, (1, 2), mode=mode)), ref_pad(_np(x), (1, 2), mode))
    v = rand64(1, 2, 2, 3, 3, device=device)
    np.testing.assert_array_equal(_np(F.pad(v, (1, 1, 1, 0, 0, 1), mode="reflect")),
                                  ref_pad(_np(v), (1, 1, 1, 0, 0, 1), "reflect"))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), mode=st.sampled_from(["constant", "reflect", "replicate", "circular"]))
def test_property_against_numpy_pad(data, mode):
    nd = data.draw(st.integers(1, 3))
    lead = data.draw(st.integers(0 if mode == "constant" else 1, 2))
    shape = data.draw(st.lists(st.integers(1, 4), min_size=nd + lead, max_size=nd + lead))
    pad = []
    for i in range(nd):
        size = shape[-1 - i]
        if mode == "reflect":
            amounts = st.integers(0, size - 1)
        elif mode == "circular":
            amounts = st.integers(0, size)
        else:
            amounts = st.integers(-1 if size > 2 else 0, 3)
        pad += [data.draw(amounts), data.draw(amounts)]
    a = np.random.default_rng(len(pad)).standard_normal(shape)
    np.testing.assert_array_equal(F.pad(ember.tensor(a), tuple(pad), mode=mode).numpy(), ref_pad(a, pad, mode))


def test_errors():
    x = ember.zeros(2, 3, 4, 5)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times the input "
                                           "dimension but got padding length 10 and input of dimension 4"):
        F.pad(x, (1,) * 10)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D input tensor"):
        F.pad(x, (1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(x, (1, 1), mode="foo")
    with pytest.raises(RuntimeError, match='Padding mode "replicate" doesn\'t take in value argument'):
        F.pad(x, (1, 1, 1, 1), mode="replicate", value=2.0)
    assert F.pad(x, (1, 1, 1, 1), mode="replicate", value=0).shape == (2, 3, 6, 7)
    with pytest.raises(RuntimeError, match=r"Argument #4: Padding size should be less than the corresponding input "
                                           r"dimension, but got: padding \(5, 1\) at dimension 2 of input \[3, 4, 5\]"):
        F.pad(x[0], (5, 1), mode="reflect")
    with pytest.raises(RuntimeError, match=r"Argument #6: .* padding \(4, 1\) at dimension 1"):
        F.pad(x[0], (1, 1, 4, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        F.pad(x[0], (6, 1), mode="circular")
    with pytest.raises(RuntimeError, match=r"Expected 2D or 3D \(batch mode\) tensor with possibly 0 batch size and "
                                           r"other non-zero dimensions for input, but got: \[2, 0, 5\]"):
        F.pad(ember.zeros(2, 0, 5), (1, 1), mode="replicate")
    assert F.pad(ember.zeros(0, 3, 5), (1, 1), mode="reflect").shape == (0, 3, 7)
    with pytest.raises(RuntimeError, match="negative size"):
        F.pad(x, (-3, -3))
    with pytest.raises(TypeError, match="must be tuple of ints, but found element of type float at pos 0"):
        F.pad(x, (1.5, 1))
