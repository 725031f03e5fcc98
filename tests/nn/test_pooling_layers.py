"""Pooling, upsampling and padding layers: attributes, reprs, outputs, state and input-rank errors.

The repr strings were checked against PyTorch 2.13 by hand (torch.nn -> ember.nn).
"""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn

REPRS = [
    (nn.MaxPool1d(3), "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)"),
    (nn.MaxPool1d(3, 2, 1, 2, True, True), "MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)"),
    (nn.MaxPool2d(2), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
    (nn.MaxPool2d((2, 3), (1, 2), (1, 1), 1, False, True),
     "MaxPool2d(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=1, ceil_mode=True)"),
    (nn.AvgPool1d(3), "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"),
    (nn.AvgPool1d(3, 2, 1, True, False), "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))"),
    (nn.AvgPool2d(2), "AvgPool2d(kernel_size=2, stride=2, padding=0)"),
    (nn.AvgPool2d((2, 3), 1, 1, True, False, 2), "AvgPool2d(kernel_size=(2, 3), stride=1, padding=1)"),
    (nn.AdaptiveAvgPool1d(3), "AdaptiveAvgPool1d(output_size=3)"),
    (nn.AdaptiveAvgPool2d((None, 3)), "AdaptiveAvgPool2d(output_size=(None, 3))"),
    (nn.AdaptiveAvgPool2d(7), "AdaptiveAvgPool2d(output_size=7)"),
    (nn.AdaptiveMaxPool1d(3), "AdaptiveMaxPool1d(output_size=3)"),
    (nn.AdaptiveMaxPool2d((2, None), True), "AdaptiveMaxPool2d(output_size=(2, None))"),
    (nn.Upsample(scale_factor=2), "Upsample(scale_factor=2.0, mode='nearest')"),
    (nn.Upsample(size=(3, 4), mode="bilinear", align_corners=True), "Upsample(size=(3, 4), mode='bilinear')"),
    (nn.Upsample(size=[2, 3]), "Upsample(size=[2, 3], mode='nearest')"),
    (nn.Upsample(scale_factor=(2, 3)), "Upsample(scale_factor=(2.0, 3.0), mode='nearest')"),
    (nn.UpsamplingNearest2d(scale_factor=2), "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"),
    (nn.UpsamplingBilinear2d(size=4), "UpsamplingBilinear2d(size=4, mode='bilinear')"),
    (nn.ZeroPad1d((1, 2)), "ZeroPad1d((1, 2))"),
    (nn.ZeroPad2d(2), "ZeroPad2d((2, 2, 2, 2))"),
    (nn.ZeroPad2d((1, 2, 3, 4)), "ZeroPad2d((1, 2, 3, 4))"),
    (nn.ConstantPad1d(2, 3.5), "ConstantPad1d(padding=(2, 2), value=3.5)"),
    (nn.ConstantPad2d((1, 2), 0), "ConstantPad2d(padding=(1, 2), value=0)"),
    (nn.ConstantPad2d(1, 1), "ConstantPad2d(padding=(1, 1, 1, 1), value=1)"),
    (nn.ConstantPad3d(1, 2), "ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=2)"),
    (nn.ReflectionPad1d(2), "ReflectionPad1d((2, 2))"),
    (nn.ReflectionPad2d((1, 2, 3, 4)), "ReflectionPad2d((1, 2, 3, 4))"),
    (nn.ReflectionPad3d(1), "ReflectionPad3d((1, 1, 1, 1, 1, 1))"),
    (nn.ReplicationPad1d((1, 2)), "ReplicationPad1d((1, 2))"),
    (nn.ReplicationPad2d(3), "ReplicationPad2d((3, 3, 3, 3))"),
    (nn.CircularPad2d(1), "CircularPad2d((1, 1, 1, 1))"),
]


@pytest.mark.parametrize("layer,text", REPRS, ids=[t for _, t in REPRS])
def test_reprs_match_pytorch(layer, text):
    assert repr(layer) == text
    assert list(layer.parameters()) == [] and layer.state_dict() == {}


def test_attributes_as_pytorch_keeps_them():
    m = nn.MaxPool2d(2)
    assert (m.kernel_size, m.stride, m.padding, m.dilation, m.return_indices, m.ceil_mode) == (2, 2, 0, 1, False,
                                                                                             False)
    a = nn.AvgPool2d(3, padding=1)
    assert (a.kernel_size, a.stride, a.ceil_mode, a.count_include_pad, a.divisor_override) == (3, 3, False, True, None)
    assert nn.AvgPool1d(2, 1).stride == (1,)
    assert nn.ZeroPad2d(1).value == 0.0 and nn.ReflectionPad1d(1).padding == (1, 1)
    up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
    assert (up.name, up.size, up.scale_factor, up.mode, up.align_corners) == ("Upsample", None, 2.0, "bilinear", True)


def test_pooling_layers_compute_the_functions():
    ember.manual_seed(0)
    x = ember.randn(2, 3, 7, 6, dtype=ember.float64)
    cases = [
        (nn.MaxPool2d(3, 2, 1, ceil_mode=True), lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True)),
        (nn.AvgPool2d((2, 3), 1, (1, 0), count_include_pad=False),
         lambda t: F.avg_pool2d(t, (2, 3), 1, (1, 0), count_include_pad=False)),
        (nn.AdaptiveAvgPool2d((None, 2)), lambda t: F.adaptive_avg_pool2d(t, (7, 2))),
        (nn.AdaptiveMaxPool2d(3), lambda t: F.adaptive_max_pool2d(t, 3)),
        (nn.MaxPool1d(2, padding=1), lambda t: F.max_pool1d(t[0], 2, padding=1)),
        (nn.AvgPool1d(3, 2), lambda t: F.avg_pool1d(t[0], 3, 2)),
        (nn.AdaptiveAvgPool1d(4), lambda t: F.adaptive_avg_pool1d(t[0], 4)),
        (nn.AdaptiveMaxPool1d(2), lambda t: F.adaptive_max_pool1d(t[0], 2)),
    ]
    for layer, fn in cases:
        inp = x[0] if "1d" in type(layer).__name__ else x
        np.testing.assert_array_equal(layer(inp).numpy(), fn(x).numpy())


def test_max_pool_layer_values_indices_and_gradient():
    x = ember.tensor([[[[1.0, 2.0, 5.0, 0.0], [3.0, 4.0, 5.0, 1.0]]]], requires_grad=True)
    y, idx = nn.MaxPool2d(2, return_indices=True)(x)
    assert y.tolist() == [[[[4.0, 5.0]]]] and idx.tolist() == [[[[5, 2]]]]  # the first of the tied 5s
    y.sum().backward()
    assert x.grad.tolist() == [[[[0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0]]]]
    avg = nn.AvgPool2d(2, divisor_override=3)(x)
    np.testing.assert_allclose(avg.detach().numpy(), [[[[10 / 3, 11 / 3]]]], rtol=1e-6)


def test_upsample_and_padding_layers_compute_the_functions():
    x = ember.arange(6.0).reshape(1, 1, 2, 3)
    assert nn.Upsample(scale_factor=2)(x).tolist() == F.interpolate(x, scale_factor=2).tolist()
    np.testing.assert_allclose(nn.UpsamplingBilinear2d(size=(3, 5))(x).numpy(),
                               F.interpolate(x, size=(3, 5), mode="bilinear", align_corners=True).numpy())
    a = x.numpy()
    np.testing.assert_array_equal(nn.ReflectionPad2d((2, 1, 1, 0))(x).numpy(),
                                  np.pad(a, ((0, 0), (0, 0), (1, 0), (2, 1)), mode="reflect"))
    np.testing.assert_array_equal(nn.ReplicationPad2d(1)(x).numpy(), np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)),
                                                                            mode="edge"))
    np.testing.assert_array_equal(nn.CircularPad1d((1, 2))(x[0]).numpy(), np.pad(a[0], ((0, 0), (0, 0), (1, 2)),
                                                                                   mode="wrap"))
    np.testing.assert_array_equal(nn.ConstantPad2d((1, 0, 0, 2), -1.0)(x).numpy(),
                                  np.pad(a, ((0, 0), (0, 0), (0, 2), (1, 0)), constant_values=-1.0))
    assert nn.ZeroPad2d(1)(x).sum().item() == 15.0
    assert nn.ConstantPad1d(2, 1.0)(ember.zeros(5)).shape == (9,)  # like PyTorch, any rank for constant padding


def test_layers_name_themselves_on_a_wrong_rank():
    with pytest.raises(RuntimeError, match=r"MaxPool2d: expected a 3D \(C, H, W\) or 4D \(N, C, H, W\) input, but "
                                           r"got input of shape \[5, 5\]"):
        nn.MaxPool2d(2)(ember.zeros(5, 5))
    with pytest.raises(RuntimeError, match=r"AvgPool1d: expected a 2D \(C, L\) or 3D \(N, C, L\) input, but got "
                                           r"input of shape \[1, 1, 4, 4\]"):
        nn.AvgPool1d(2)(ember.zeros(1, 1, 4, 4))
    with pytest.raises(RuntimeError, match=r"AdaptiveAvgPool2d: expected .* but got input of shape \[4\]"):
        nn.AdaptiveAvgPool2d(1)(ember.zeros(4))
    with pytest.raises(RuntimeError, match=r"ReflectionPad2d: expected a 3D \(C, H, W\) or 4D \(N, C, H, W\) input"):
        nn.ReflectionPad2d(1)(ember.zeros(5, 5))
    with pytest.raises(RuntimeError, match=r"ReplicationPad3d: expected a 4D \(C, D, H, W\) or 5D"):
        nn.ReplicationPad3d(1)(ember.zeros(2, 2, 2))
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        nn.Upsample()(ember.zeros(1, 1, 3))


def test_layers_in_a_model_print_and_train():
    model = nn.Sequential(nn.ReflectionPad2d(1), nn.MaxPool2d(2), nn.Upsample(scale_factor=2, mode="bilinear"),
                          nn.AdaptiveAvgPool2d(1))
    assert repr(model) == ("Sequential(\n"
                           "  (0): ReflectionPad2d((1, 1, 1, 1))\n"
                           "  (1): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
                           "  (2): Upsample(scale_factor=2.0, mode='bilinear')\n"
                           "  (3): AdaptiveAvgPool2d(output_size=1)\n"
                           ")")
    x = ember.randn(2, 3, 6, 6, requires_grad=True)
    out = model(x)
    assert out.shape == (2, 3, 1, 1)
    out.sum().backward()
    assert x.grad.shape == (2, 3, 6, 6)
