"""Each layer op of ember-nn exported alone: the model passes onnx.checker (full_check), uses the ONNX operator a
reader expects, and onnxruntime gives ember's output (float32, within 1e-5), over the layer's options."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.nn.functional as F
from ember import nn
from ember.onnx._trace import flatten_outputs

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


class Fn(nn.Module):
    """A module around a function of the input, for exporting functional forms."""

    def __init__(self, fn, **params):
        super().__init__()
        self.fn = fn
        for name, value in params.items():
            setattr(self, name, nn.Parameter(value))

    def forward(self, *args):
        return self.fn(self, *args)


def export_and_run(tmp_path, model, args, opset=17, dynamic_batch=False, feeds=None):
    """Export ``model`` on ``args``, check it, and return (the ONNX model, ember's outputs, onnxruntime's outputs)
    for ``feeds`` (default: ``args``), as lists of arrays."""
    model.eval()
    names = [f"input{i}" for i in range(len(args))]
    path = tmp_path / "model.onnx"
    dynamic = {n: {0: "batch"} for n in names} if dynamic_batch else None
    ember.onnx.export(model, tuple(args), str(path), input_names=names, dynamic_axes=dynamic, opset_version=opset)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = args if feeds is None else feeds
    with ember.no_grad():
        expected = model(*feeds)
    expected = [t.numpy() for t in flatten_outputs(expected)]
    got = session.run(None, {n: a.numpy() for n, a in zip(names, feeds)})
    return proto, expected, got


def assert_exports(tmp_path, model, *args, uses=None, opset=17, atol=1e-5):
    """The export of ``model`` checks and matches ember within ``atol``; ``uses`` an ONNX operator it must hold."""
    proto, expected, got = export_and_run(tmp_path, model, args, opset=opset)
    assert len(got) == len(expected)
    for e, r in zip(expected, got):
        assert r.shape == e.shape and r.dtype == e.dtype
        np.testing.assert_allclose(r, e, rtol=1e-5, atol=atol)
    if uses is not None:
        assert uses in {node.op_type for node in proto.graph.node}, [n.op_type for n in proto.graph.node]
    return proto


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)


def randn(*shape):
    return ember.randn(*shape)


# -- linear and convolution -----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, uses", [((4, 6), "Gemm"), ((2, 3, 6), "MatMul"), ((6,), "MatMul")])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(tmp_path, shape, uses, bias):
    assert_exports(tmp_path, nn.Linear(6, 5, bias=bias), randn(*shape), uses=uses)


@pytest.mark.parametrize("kwargs", [
    dict(), dict(stride=2, padding=1), dict(padding="same", dilation=2), dict(stride=(2, 3), padding=(0, 2)),
    dict(groups=2, bias=False), dict(padding=1, padding_mode="reflect"), dict(padding=2, padding_mode="circular"),
    dict(padding=1, padding_mode="replicate")])
def test_conv2d(tmp_path, kwargs):
    assert_exports(tmp_path, nn.Conv2d(4, 6, 3, **kwargs), randn(2, 4, 9, 8), uses="Conv")


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=3, padding=2), dict(padding="same", dilation=3)])
def test_conv1d(tmp_path, kwargs):
    assert_exports(tmp_path, nn.Conv1d(3, 4, 4, **kwargs), randn(2, 3, 13), uses="Conv")


@pytest.mark.parametrize("kwargs", [
    dict(), dict(stride=2, padding=1, output_padding=1), dict(stride=3, output_padding=2, groups=2),
    dict(stride=2, padding=2, dilation=2, output_padding=1), dict(padding=(1, 0), stride=(1, 2)),
    dict(dilation=2, output_padding=1), dict(dilation=3, output_padding=(2, 0), bias=False)])
def test_conv_transpose2d(tmp_path, kwargs):
    assert_exports(tmp_path, nn.ConvTranspose2d(4, 6, 3, **kwargs), randn(2, 4, 5, 6), uses="ConvTranspose")


def test_conv_transpose1d_and_unbatched_conv(tmp_path):
    assert_exports(tmp_path, nn.ConvTranspose1d(2, 3, 4, stride=2, padding=3, output_padding=1), randn(2, 2, 7),
                   uses="ConvTranspose")
    assert_exports(tmp_path, nn.Conv2d(2, 3, 3), randn(2, 6, 5), uses="Conv")


# -- pooling --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 0), dilation=(2, 1))])
def test_max_pool2d(tmp_path, kwargs, ceil_mode):
    assert_exports(tmp_path, nn.MaxPool2d(ceil_mode=ceil_mode, **kwargs), randn(2, 3, 9, 8), uses="MaxPool")


def test_max_pool_with_indices_gives_plane_positions(tmp_path):
    assert_exports(tmp_path, nn.MaxPool2d(3, 2, 1, return_indices=True, ceil_mode=True), randn(2, 3, 7, 6))
    assert_exports(tmp_path, nn.MaxPool1d(2, return_indices=True), randn(2, 3, 7))


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1)])
def test_avg_pool(tmp_path, kwargs, ceil_mode, count_include_pad):
    opts = dict(ceil_mode=ceil_mode, count_include_pad=count_include_pad, **kwargs)
    assert_exports(tmp_path, nn.AvgPool2d(**opts), randn(2, 3, 7, 8), uses="AveragePool")
    assert_exports(tmp_path, nn.AvgPool1d(**opts), randn(3, 5), uses="AveragePool")  # unbatched


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                    dict(kernel_size=(2, 3), stride=1, padding=(1, 0), count_include_pad=False)])
def test_avg_pool_divisor_override(tmp_path, kwargs):
    assert_exports(tmp_path, nn.AvgPool2d(divisor_override=3, **kwargs), randn(2, 3, 7, 8), uses="AveragePool")


@st.composite
def pool_configs(draw):
    """A valid 1-D pooling configuration: (length, kernel, stride, padding, dilation, ceil_mode)."""
    k = draw(st.integers(1, 4))
    d = draw(st.integers(1, 3))
    p = draw(st.integers(0, k // 2))
    s = draw(st.integers(1, 4))
    n = draw(st.integers(max(d * (k - 1) + 1 - 2 * p, 1), 12))
    return n, k, s, p, d, draw(st.booleans())


@settings(max_examples=25, deadline=None)
@given(pool_configs(), st.booleans())
def test_pool_windows_match_onnxruntime(tmp_path_factory, config, count_include_pad):
    n, k, s, p, d, ceil = config
    x = randn(2, 3, n)
    assert_exports(tmp_path_factory.mktemp("max"), nn.MaxPool1d(k, s, p, d, ceil_mode=ceil), x)
    if d == 1:
        avg = nn.AvgPool1d(k, s, p, ceil_mode=ceil, count_include_pad=count_include_pad)
        assert_exports(tmp_path_factory.mktemp("avg"), avg, x)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.sampled_from(["nearest", "nearest-exact", "linear"]),
       st.sampled_from([None, True, False]), st.booleans())
def test_resampling_sizes_match_onnxruntime(tmp_path_factory, n, out, mode, align, by_scale):
    align = align if mode == "linear" else None
    how = dict(scale_factor=out / n) if by_scale else dict(size=out)
    assert_exports(tmp_path_factory.mktemp("resize"), nn.Upsample(mode=mode, align_corners=align, **how),
                   randn(1, 2, n))


def test_ceil_mode_window_starting_in_the_padding_is_dropped(tmp_path):
    # PyTorch drops the last window of a ceil-mode pool when it would start in the right padding: length 5,
    # kernel 2, stride 2, padding 1 gives 3 outputs (ONNX's formula alone would give 4)
    proto = assert_exports(tmp_path, nn.MaxPool1d(2, 2, 1, ceil_mode=True), randn(1, 2, 5))
    assert export_and_run(tmp_path, nn.MaxPool1d(2, 2, 1, ceil_mode=True), [randn(1, 2, 5)])[2][0].shape[-1] == 3
    assert "Slice" in {n.op_type for n in proto.graph.node}


@pytest.mark.parametrize("size, uses", [(1, "GlobalAveragePool"), ((2, 4), "AveragePool"), ((3, 5), "MatMul"),
                                        ((None, 3), "MatMul")])
def test_adaptive_avg_pool2d(tmp_path, size, uses):
    assert_exports(tmp_path, nn.AdaptiveAvgPool2d(size), randn(2, 3, 6, 8), uses=uses)


def test_adaptive_pool1d_and_max(tmp_path):
    assert_exports(tmp_path, nn.AdaptiveAvgPool1d(3), randn(2, 3, 7), uses="MatMul")
    assert_exports(tmp_path, nn.AdaptiveAvgPool1d(1), randn(3, 7))  # unbatched
    assert_exports(tmp_path, nn.AdaptiveMaxPool2d((2, 4), return_indices=True), randn(2, 3, 6, 8), uses="MaxPool")
    assert_exports(tmp_path, nn.AdaptiveMaxPool1d(1), randn(2, 3, 7), uses="MaxPool")
    assert_exports(tmp_path, nn.AdaptiveMaxPool2d((3, 5)), randn(2, 3, 7, 8), uses="Max")  # uneven windows
    assert_exports(tmp_path, nn.AdaptiveMaxPool1d(4), randn(3, 9), uses="Max")


def test_inexpressible_pools_raise_naming_the_op(tmp_path):
    with pytest.raises(ember.onnx.UnsupportedExportError, match="adaptive_max_pool2d_with_indices.*multiple"):
        export_and_run(tmp_path, nn.AdaptiveMaxPool2d((3, 3), return_indices=True), [randn(1, 2, 7, 7)])


# -- normalisation --------------------------------------------------------------------------------------------
def _with_stats(bn):
    """A batch norm with non-trivial running statistics and affine parameters."""
    with ember.no_grad():
        c = bn.num_features
        bn.running_mean.copy_(ember.randn(c))
        bn.running_var.copy_(ember.rand(c) + 0.5)
        if bn.weight is not None:
            bn.weight.copy_(ember.randn(c))
            bn.bias.copy_(ember.randn(c))
    return bn


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_eval(tmp_path, affine):
    assert_exports(tmp_path, _with_stats(nn.BatchNorm2d(3, affine=affine, eps=1e-3)), randn(2, 3, 4, 5),
                   uses="BatchNormalization")
    assert_exports(tmp_path, _with_stats(nn.BatchNorm1d(3, affine=affine)), randn(4, 3), uses="BatchNormalization")


def test_batch_norm_with_float64_statistics_on_a_float32_input(tmp_path):
    model = Fn(lambda m, x: F.batch_norm(x, m.mean, m.var, m.w, None, eps=1e-3),
               mean=ember.randn(3, dtype=ember.float64), var=ember.rand(3, dtype=ember.float64) + 0.5, w=randn(3))
    assert_exports(tmp_path, model, randn(2, 3, 4), uses="Cast")


def test_batch_norm_without_running_stats_and_instance_norm_use_the_batch(tmp_path):
    assert_exports(tmp_path, nn.BatchNorm2d(3, track_running_stats=False), randn(4, 3, 2, 5) * 3 + 1)
    model = Fn(lambda m, x: F.instance_norm(x, weight=m.w, bias=m.b), w=randn(3), b=randn(3))
    assert_exports(tmp_path, model, randn(2, 3, 4, 5))


@pytest.mark.parametrize("opset, uses", [(17, "LayerNormalization"), (15, "ReduceMean")])
@pytest.mark.parametrize("shape", [(5,), (4, 5)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(tmp_path, opset, uses, shape, affine):
    assert_exports(tmp_path, nn.LayerNorm(shape, elementwise_affine=affine), randn(2, 3, 4, 5), opset=opset, uses=uses)


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("groups, shape", [(2, (2, 4, 3, 5)), (3, (2, 6)), (1, (3, 4, 7))])
def test_group_norm(tmp_path, opset, groups, shape):
    gn = nn.GroupNorm(groups, shape[1])
    with ember.no_grad():
        gn.weight.copy_(ember.randn(shape[1]))
        gn.bias.copy_(ember.randn(shape[1]))
    assert_exports(tmp_path, gn, randn(*shape) * 2 + 1, opset=opset)


# -- dropout, embedding, one_hot ------------------------------------------------------------------------------
@pytest.mark.parametrize("layer", [nn.Dropout(0.5), nn.Dropout2d(0.3), nn.AlphaDropout(0.2)])
def test_dropout_is_the_identity_in_eval(tmp_path, layer):
    model = nn.Sequential(nn.Linear(4, 4), layer)
    assert_exports(tmp_path, model, randn(2, 3, 5, 4))


def test_dropout_in_training_mode_raises(tmp_path):
    model = Fn(lambda m, x: F.dropout(x, 0.5, training=True))
    with pytest.raises(ember.onnx.UnsupportedExportError, match="dropout.*eval"):
        export_and_run(tmp_path, model, [randn(2, 3)])


def test_embedding_and_one_hot(tmp_path):
    indices = ember.tensor([[1, 0, 4], [2, 2, 3]])
    assert_exports(tmp_path, nn.Embedding(5, 3), indices, uses="Gather")
    assert_exports(tmp_path, nn.Embedding(5, 3, padding_idx=0), indices, uses="Gather")
    assert_exports(tmp_path, Fn(lambda m, i: F.one_hot(i, 6)), indices, uses="OneHot")


# -- padding and resampling -----------------------------------------------------------------------------------
@pytest.mark.parametrize("layer, uses", [
    (nn.ZeroPad2d((1, 2, 0, 3)), "Pad"), (nn.ConstantPad1d((2, -1), 1.5), "Pad"),
    (nn.ReflectionPad2d((1, 2, 2, 1)), "Pad"), (nn.ReplicationPad1d((3, 1)), "Pad"),
    (nn.CircularPad2d((1, 2, 2, 1)), "Gather"), (nn.ReflectionPad1d((2, -1)), "Gather")])
def test_padding(tmp_path, layer, uses):
    x = randn(2, 3, 4, 5) if "2d" in type(layer).__name__ else randn(2, 3, 5)
    assert_exports(tmp_path, layer, x, uses=uses)


def test_circular_padding_is_pad_wrap_from_opset_19(tmp_path):
    assert_exports(tmp_path, nn.CircularPad2d((1, 2, 2, 1)), randn(2, 3, 4, 5), opset=19, uses="Pad")


@pytest.mark.parametrize("mode, align", [("nearest", None), ("nearest-exact", None), ("bilinear", True),
                                         ("bilinear", False)])
@pytest.mark.parametrize("how", [dict(size=(8, 10)), dict(size=(3, 7)), dict(size=1), dict(scale_factor=2),
                                 dict(scale_factor=1.5), dict(scale_factor=(0.5, 2.3))])
def test_interpolate_2d(tmp_path, mode, align, how):
    assert_exports(tmp_path, nn.Upsample(mode=mode, align_corners=align, **how), randn(2, 3, 4, 5), uses="Resize")


@pytest.mark.parametrize("mode, shape", [("linear", (2, 3, 5)), ("nearest", (2, 3, 5)),
                                         ("trilinear", (1, 2, 3, 4, 5)), ("nearest", (1, 2, 3, 4, 5))])
@pytest.mark.parametrize("scale", [2, 1.7, 0.6])
def test_interpolate_1d_3d(tmp_path, mode, shape, scale):
    assert_exports(tmp_path, nn.Upsample(scale_factor=scale, mode=mode), randn(*shape))


def test_area_interpolation_is_adaptive_average_pooling(tmp_path):
    assert_exports(tmp_path, Fn(lambda m, x: F.interpolate(x, size=(3, 2), mode="area")), randn(2, 3, 7, 5))


# -- recurrent layers -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, uses", [(nn.LSTM, "LSTM"), (nn.GRU, "GRU"), (nn.RNN, "RNN")])
@pytest.mark.parametrize("kwargs", [dict(), dict(num_layers=2, bidirectional=True, batch_first=True),
                                    dict(bias=False)])
def test_recurrent_layers(tmp_path, cls, uses, kwargs):
    assert_exports(tmp_path, cls(4, 5, **kwargs), randn(3, 6, 4), uses=uses)


def test_recurrent_layers_with_initial_states_and_relu(tmp_path):
    h0, c0 = randn(2, 3, 5), randn(2, 3, 5)
    assert_exports(tmp_path, _StatefulLSTM(), randn(6, 3, 4), h0, c0, uses="LSTM")
    assert_exports(tmp_path, nn.RNN(4, 5, nonlinearity="relu", num_layers=2), randn(6, 3, 4), uses="RNN")
    assert_exports(tmp_path, nn.GRU(4, 5), randn(6, 4), uses="GRU")  # unbatched


class _StatefulLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 5, num_layers=2)

    def forward(self, x, h0, c0):
        out, (h, c) = self.lstm(x, (h0, c0))
        return out, h, c


@pytest.mark.parametrize("kwargs", [dict(), dict(num_layers=2, bidirectional=True, batch_first=True)])
def test_lstm_with_projection_is_a_scan_over_the_cell(tmp_path, kwargs):
    lstm = nn.LSTM(4, 5, proj_size=3, **kwargs)
    assert_exports(tmp_path, lstm, randn(6, 2, 4), uses="Scan")
    batch_axis = 0 if kwargs else 1
    other = (7, 2, 4) if kwargs else (6, 7, 4)
    diffs = ember.onnx.verify(lstm.eval(), (randn(6, 2, 4),), input_names=["x"],
                              dynamic_axes={"x": {batch_axis: "batch"}}, other_args=[(randn(*other),)])
    assert max(diffs) <= 1e-5


def test_lstm_with_projection_and_given_states(tmp_path):
    model = Fn(lambda m, x, h, c: m.lstm(x, (h, c)))
    model.lstm = nn.LSTM(4, 5, proj_size=3)
    assert_exports(tmp_path, model, randn(6, 2, 4), randn(1, 2, 3), randn(1, 2, 5), uses="Scan")


# -- a dynamic batch axis -------------------------------------------------------------------------------------
@pytest.mark.parametrize("layer, shape", [
    (nn.Upsample(size=(5, 7), mode="bilinear"), (2, 3, 4, 5)), (nn.Upsample(scale_factor=2), (2, 3, 4, 5)),
    (nn.GroupNorm(2, 4), (2, 4, 3, 5)), (nn.AdaptiveAvgPool2d((3, 5)), (2, 3, 7, 8)),
    (nn.MaxPool2d(3, 2, 1, ceil_mode=True), (2, 3, 7, 6)), (nn.CircularPad2d(1), (2, 3, 4, 5)),
    (nn.BatchNorm2d(3, track_running_stats=False), (2, 3, 4, 5)), (nn.Linear(5, 4), (2, 3, 5)),
    (nn.LSTM(5, 4, batch_first=True, bidirectional=True), (2, 3, 5)), (nn.GRU(5, 4, num_layers=2), (3, 2, 5))])
def test_dynamic_batch(layer, shape):
    batch_axis = 1 if isinstance(layer, nn.GRU) else 0
    other = list(shape)
    other[batch_axis] += 3
    diffs = ember.onnx.verify(layer.eval(), (randn(*shape),), input_names=["x"],
                              dynamic_axes={"x": {batch_axis: "batch"}}, other_args=[(randn(*other),)])
    assert max(diffs) <= 1e-5


def test_max_pool_window_of_padding_only_is_minus_infinity(tmp_path):
    # length 1, kernel 2, dilation 2, padding 1: the first window's taps are at -1 and 1, both padding
    proto = assert_exports(tmp_path, nn.MaxPool1d(2, 1, 1, dilation=2), randn(2, 3, 1))
    assert "Where" in {n.op_type for n in proto.graph.node}
