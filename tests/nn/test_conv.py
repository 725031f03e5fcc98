"""Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d: parameters, initialisation, repr, state dict, forward against
loop references, 'same' padding, output_size, padding modes and errors."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from tests.core.helpers import check_grads
from tests.core.test_convolution import ref_conv, ref_conv_transpose


def _np(t):
    return t.detach().numpy(force=True)


@pytest.mark.parametrize("cls,args,kwargs,weight_shape", [
    (nn.Conv1d, (4, 6, 3), {}, (6, 4, 3)),
    (nn.Conv1d, (4, 6, 5), dict(groups=2), (6, 2, 5)),
    (nn.Conv2d, (1, 32, 3, 1), {}, (32, 1, 3, 3)),
    (nn.Conv2d, (4, 8, (3, 5)), dict(groups=4), (8, 1, 3, 5)),
    (nn.ConvTranspose1d, (4, 6, 3), dict(groups=2), (4, 3, 3)),
    (nn.ConvTranspose2d, (4, 8, (2, 3)), {}, (4, 8, 2, 3)),
])
def test_parameter_names_shapes_and_state_dict(cls, args, kwargs, weight_shape):
    layer = cls(*args, **kwargs)
    assert [(n, tuple(p.shape)) for n, p in layer.named_parameters()] == [("weight", weight_shape),
                                                                          ("bias", (args[1],))]
    assert list(layer.state_dict()) == ["weight", "bias"]
    no_bias = cls(*args, bias=False, **kwargs)
    assert no_bias.bias is None and list(no_bias.state_dict()) == ["weight"]
    assert list(nn.Sequential(layer, nn.Identity()).state_dict()) == ["0.weight", "0.bias"]


@pytest.mark.parametrize("layer,fan_in", [
    (lambda: nn.Conv2d(3, 6, (2, 3), groups=3), 1 * 2 * 3),
    (lambda: nn.Conv1d(8, 16, 5), 8 * 5),
    (lambda: nn.ConvTranspose2d(3, 6, (2, 3), groups=3), 2 * 2 * 3),  # weight [in, out/groups, k]: fan_in = 2*6
    (lambda: nn.ConvTranspose1d(4, 10, 3), 10 * 3),
])
def test_default_init_is_uniform_within_one_over_sqrt_fan_in(layer, fan_in):
    ember.manual_seed(0)
    layer = layer()
    bound = 1 / math.sqrt(fan_in)
    for p in (layer.weight, layer.bias):
        values = _np(p)
        assert np.abs(values).max() <= bound
    w = _np(layer.weight).ravel()
    # uniform on (-bound, bound): the extremes come close to the bound and the mean is near 0
    assert np.abs(w).max() > 0.8 * bound and abs(w.mean()) < 0.25 * bound
    ember.manual_seed(0)
    again = type(layer)(layer.in_channels, layer.out_channels, layer.kernel_size, groups=layer.groups)
    np.testing.assert_array_equal(_np(again.weight), _np(layer.weight))  # follows ember.manual_seed


def test_repr_matches_pytorch():
    # strings printed by torch 2.13 for the same constructor calls
    assert repr(nn.Conv2d(1, 32, 3, 1)) == "Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1))"
    assert repr(nn.Conv2d(4, 8, 3, padding="same")) == \
        "Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=same)"
    assert repr(nn.Conv2d(4, 8, 3, padding="valid")) == \
        "Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=valid)"
    assert repr(nn.ConvTranspose2d(4, 8, 3, stride=2, output_padding=1, groups=2)) == \
        "ConvTranspose2d(4, 8, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1), groups=2)"
    assert repr(nn.ConvTranspose1d(4, 8, 3, stride=2, padding=1, dilation=3, bias=False)) == \
        "ConvTranspose1d(4, 8, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(3,), bias=False)"
    assert repr(nn.Conv1d(4, 8, 3, dilation=2, groups=4)) == \
        "Conv1d(4, 8, kernel_size=(3,), stride=(1,), dilation=(2,), groups=4)"
    model = nn.Sequential(nn.Conv2d(1, 32, 3, 1), nn.Identity())
    assert repr(model) == ("Sequential(\n  (0): Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1))\n"
                           "  (1): Identity()\n)")


def test_attributes_like_pytorch():
    conv = nn.Conv2d(4, 8, (2, 4), padding="same", dilation=(1, 3))
    assert (conv.kernel_size, conv.stride, conv.dilation, conv.output_padding) == ((2, 4), (1, 1), (1, 3), (0, 0))
    assert conv.padding == "same" and conv.transposed is False and conv.padding_mode == "zeros"
    assert nn.ConvTranspose2d(4, 8, 3).transposed is True


@pytest.mark.parametrize("kwargs, pads", [
    (dict(kernel_size=(2, 4), padding="same", dilation=(1, 3), padding_mode="circular"), [4, 5, 0, 1]),
    (dict(kernel_size=3, padding=(1, 2), padding_mode="reflect"), [2, 2, 1, 1]),
])
def test_a_padding_mode_pads_each_side_like_pytorch(kwargs, pads):
    # torch 2.13 pads by the same lists (last dimension's left and right first): "same" puts the odd one on the right
    conv = nn.Conv2d(1, 1, bias=False, **kwargs)
    x = ember.randn(1, 1, 5, 12)
    padded = F.pad(x, pads, mode=kwargs["padding_mode"])
    expected = F.conv2d(padded, conv.weight, dilation=kwargs.get("dilation", 1))
    np.testing.assert_allclose(conv(x).detach().numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1), dict(dilation=2, groups=2),
                                    dict(padding="same", dilation=(2, 1)), dict(padding="valid", stride=(1, 2))])
def test_conv2d_forward_matches_reference(kwargs):
    ember.manual_seed(1)
    conv = nn.Conv2d(4, 6, (3, 2), dtype=ember.float64, **kwargs)
    x = ember.randn(2, 4, 7, 6, dtype=ember.float64)
    ref = ref_conv(_np(x), _np(conv.weight), _np(conv.bias), kwargs.get("stride", 1), kwargs.get("padding", 0),
                   kwargs.get("dilation", 1), kwargs.get("groups", 1))
    np.testing.assert_allclose(_np(conv(x)), ref, atol=1e-12)
    np.testing.assert_allclose(_np(conv(x[0])), ref[0], atol=1e-12)  # unbatched


def test_same_padding_keeps_the_size_for_any_kernel():
    for kernel, dilation in [(3, 1), (4, 1), (2, 3), (5, 2)]:
        conv1 = nn.Conv1d(2, 3, kernel, padding="same", dilation=dilation)
        assert tuple(conv1(ember.ones(1, 2, 9)).shape) == (1, 3, 9)
        conv2 = nn.Conv2d(2, 3, (kernel, 1), padding="same", dilation=dilation)
        assert tuple(conv2(ember.ones(2, 6, 5)).shape) == (3, 6, 5)


def test_conv_transpose_forward_and_output_size():
    ember.manual_seed(2)
    up = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2, dtype=ember.float64)
    x = ember.randn(1, 4, 3, 4, dtype=ember.float64)
    ref = ref_conv_transpose(_np(x), _np(up.weight), _np(up.bias), stride=2, padding=1, groups=2)
    np.testing.assert_allclose(_np(up(x)), ref, atol=1e-12)
    assert tuple(up(x).shape) == (1, 6, 5, 7)
    # output_size picks the output padding: spatial sizes only, or with batch and channels
    bigger = up(x, output_size=[6, 8])
    np.testing.assert_allclose(_np(bigger), ref_conv_transpose(_np(x), _np(up.weight), _np(up.bias), stride=2,
                                                               padding=1, output_padding=1, groups=2), atol=1e-12)
    assert tuple(up(x, output_size=[1, 6, 5, 8]).shape) == (1, 6, 5, 8)
    assert tuple(up(x[0], output_size=[6, 8]).shape) == (6, 6, 8)
    with pytest.raises(ValueError, match=r"^requested an output size of \[7, 8\], but valid sizes range from "
                                         r"\[5, 7\] to \[6, 8\] \(for an input of ember.Size\(\[3, 4\]\)\)$"):
        up(x, output_size=[7, 8])
    with pytest.raises(ValueError, match=r"ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements "
                                         r"\(got 3\)"):
        up(x, output_size=[1, 6, 8])
    down = nn.ConvTranspose1d(3, 2, 4, stride=3)
    assert tuple(down(ember.ones(2, 3, 5), output_size=[17]).shape) == (2, 2, 17)


def test_double_backward_through_conv2d():
    ember.manual_seed(3)
    conv = nn.Conv2d(2, 3, 2, padding=1, dtype=ember.float64)
    x = ember.randn(1, 2, 3, 3, dtype=ember.float64, requires_grad=True)
    check_grads(conv, x, gradgrad=True)
    # gradient penalty: d/dweight of |d out / d x|^2 reaches the weight
    gx, = ember.autograd.grad(conv(x).sum(), x, create_graph=True)
    (gx ** 2).sum().backward()
    assert conv.weight.grad is not None and float(conv.weight.grad.abs().sum()) > 0


def test_dtype_and_device_arguments(two_cpus):
    conv = nn.Conv2d(2, 3, 3, dtype=ember.float64, device="cpu:1")
    assert conv.weight.dtype == conv.bias.dtype == ember.float64
    assert str(conv.weight.device) == str(conv.bias.device) == "cpu:1"
    assert conv(ember.ones(1, 2, 4, 4, dtype=ember.float64, device="cpu:1")).device == conv.weight.device


def test_constructor_errors():
    cases = [
        (lambda: nn.Conv2d(4, 8, 3, groups=3), "^in_channels must be divisible by groups$"),
        (lambda: nn.Conv2d(4, 6, 3, groups=4), "^out_channels must be divisible by groups$"),
        (lambda: nn.Conv2d(4, 8, 3, groups=0), "^groups must be a positive integer$"),
        (lambda: nn.Conv2d(4, 8, 3, padding="foo"), r"^Invalid padding string 'foo', should be one of "
                                                    r"\{'valid', 'same'\}$"),
        (lambda: nn.Conv2d(4, 8, 3, padding="same", stride=2),
         "^padding='same' is not supported for strided convolutions$"),
        (lambda: nn.Conv2d(4, 8, 3, padding_mode="foo"), "^padding_mode must be one of .*, but got "
                                                         "padding_mode='foo'$"),
        (lambda: nn.ConvTranspose2d(4, 8, 3, padding_mode="reflect"),
         '^Only "zeros" padding mode is supported for ConvTranspose2d$'),
        (lambda: nn.ConvTranspose2d(4, 8, 3, padding="same"), "padding='same' is not supported by ConvTranspose2d"),
        (lambda: nn.Conv2d(4, 8, (3, 3, 3)), r"kernel_size must be an int or a tuple of 2 ints"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()


def test_wrong_input_rank_or_channels_names_the_layer_and_both_shapes():
    conv = nn.Conv2d(4, 8, 3)
    with pytest.raises(RuntimeError, match=r"^Conv2d\(4, 8, kernel_size=\(3, 3\), stride=\(1, 1\)\) expects input of "
                                           r"shape \[N, 4, H, W\] or \[4, H, W\], but got input of size "
                                           r"\[2, 3, 8, 8\]$"):
        conv(ember.ones(2, 3, 8, 8))
    with pytest.raises(RuntimeError, match=r"expects input of shape \[N, 4, H, W\] or \[4, H, W\], but got input of "
                                           r"size \[8, 8\]$"):
        conv(ember.ones(8, 8))
    with pytest.raises(RuntimeError, match=r"^ConvTranspose1d\(3, 2, kernel_size=\(3,\), stride=\(1,\)\) expects "
                                           r"input of shape \[N, 3, L\] or \[3, L\], but got input of size "
                                           r"\[1, 3, 4, 4\]$"):
        nn.ConvTranspose1d(3, 2, 3)(ember.ones(1, 3, 4, 4))


def test_padding_modes_other_than_zeros():
    ember.manual_seed(4)
    x = ember.randn(1, 2, 5, 6, dtype=ember.float64)
    for mode, np_mode in [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]:
        conv = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode, dtype=ember.float64)
        padded = np.pad(_np(x), [(0, 0), (0, 0), (1, 1), (2, 2)], mode=np_mode)
        np.testing.assert_allclose(_np(conv(x)), ref_conv(padded, _np(conv.weight), _np(conv.bias)), atol=1e-12)


def test_padding_modes_call_pad_with_pytorchs_padding_order(monkeypatch):
    """The module pads through F.pad: last dimension first, before/after pairs ('same' split as PyTorch)."""
    calls = []

    def fake_pad(input, pad, mode="constant", value=None):
        calls.append((tuple(pad), mode))
        np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
        widths = [(0, 0)] * (input.ndim - len(pad) // 2) + [(pad[i], pad[i + 1])
                                                            for i in reversed(range(0, len(pad), 2))]
        return ember.tensor(np.pad(_np(input), widths, mode=np_mode))

    monkeypatch.setattr(F, "pad", fake_pad)
    ember.manual_seed(5)
    x = ember.randn(1, 2, 5, 6, dtype=ember.float64)
    conv = nn.Conv2d(2, 3, (2, 4), padding="same", padding_mode="circular", dtype=ember.float64)
    out = conv(x)
    assert calls == [((1, 2, 0, 1), "circular")]
    padded = np.pad(_np(x), [(0, 0), (0, 0), (0, 1), (1, 2)], mode="wrap")
    np.testing.assert_allclose(_np(out), ref_conv(padded, _np(conv.weight), _np(conv.bias)), atol=1e-12)
    assert tuple(out.shape) == (1, 3, 5, 6)
