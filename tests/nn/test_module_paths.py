"""PyTorch's module paths under ``torch.nn.modules`` (and ``torch.nn.common_types``) that programs import classes and
helpers from directly resolve under ``ember.nn`` to the same objects ``ember.nn`` has."""
import importlib

import pytest

import ember
from ember import nn
from ember.nn.common_types import _ratio_2_t, _size_1_t, _size_2_t, _size_any_t, _tensor_list_t
from ember.nn.modules.batchnorm import _BatchNorm
from ember.nn.modules.conv import _ConvNd
from ember.nn.modules.dropout import _DropoutNd
from ember.nn.modules.linear import NonDynamicallyQuantizableLinear
from ember.nn.modules.loss import _Loss, _WeightedLoss
from ember.nn.modules.padding import ReflectionPad1d, ZeroPad2d
from ember.nn.modules.utils import (
    _list_with_default,
    _ntuple,
    _pair,
    _quadruple,
    _reverse_repeat_tuple,
    _single,
    _triple,
)

#: (module path after ``ember.nn.``, names a program imports from it); the paths are PyTorch 2.13's
PATHS = [
    ("modules.activation", ["ReLU", "GELU", "Softmax", "PReLU", "MultiheadAttention"]),
    ("modules.linear", ["Identity", "Linear", "Bilinear"]),
    ("modules.conv", ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]),
    ("modules.batchnorm", ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]),
    ("modules.normalization", ["LayerNorm", "GroupNorm"]),
    ("modules.loss", ["MSELoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss"]),
    ("modules.container", ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]),
    ("modules.module", ["Module", "register_module_forward_hook"]),
    ("modules.transformer", ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
                             "TransformerDecoderLayer"]),
    ("modules.rnn", ["RNNBase", "RNN", "LSTM", "GRU", "LSTMCell"]),
    ("modules.sparse", ["Embedding"]),
    ("modules.dropout", ["Dropout", "Dropout2d"]),
    ("modules.pooling", ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d"]),
    ("modules.padding", ["ZeroPad2d", "ReflectionPad2d", "ConstantPad1d", "CircularPad3d"]),
    ("modules.upsampling", ["Upsample", "UpsamplingNearest2d"]),
    ("modules.flatten", ["Flatten", "Unflatten"]),
    ("modules.distance", ["PairwiseDistance", "CosineSimilarity"]),
    ("parameter", ["Parameter"]),
]


@pytest.mark.parametrize("path, names", PATHS, ids=[p for p, _ in PATHS])
def test_pytorchs_module_paths_hold_ember_nns_classes(path, names):
    module = importlib.import_module(f"ember.nn.{path}")
    for name in names:
        assert getattr(module, name) is getattr(nn, name), f"ember.nn.{path}.{name}"
    assert set(names) <= set(getattr(module, "__all__", names))


def test_private_base_classes_programs_subclass_or_test_against():
    assert isinstance(nn.BatchNorm2d(3), _BatchNorm) and not isinstance(nn.LayerNorm(3), _BatchNorm)
    assert isinstance(nn.Conv2d(1, 1, 1), _ConvNd) and isinstance(nn.Dropout(), _DropoutNd)
    assert isinstance(nn.CrossEntropyLoss(), _WeightedLoss) and isinstance(nn.MSELoss(), _Loss)
    assert not hasattr(nn, "_BatchNorm")  # private names stay off ember.nn, as off torch.nn


def test_non_dynamically_quantizable_linear_is_a_linear_in_linear():
    assert issubclass(NonDynamicallyQuantizableLinear, nn.Linear)
    mha = nn.MultiheadAttention(8, 2)
    assert type(mha.out_proj) is NonDynamicallyQuantizableLinear
    layer = NonDynamicallyQuantizableLinear(4, 3, bias=False)
    assert layer(ember.ones(2, 4)).shape == (2, 3) and layer.bias is None
    assert not hasattr(nn, "NonDynamicallyQuantizableLinear")  # as in torch.nn


def test_tuple_helpers_of_modules_utils():
    assert _single(3) == (3,) and _pair(3) == (3, 3) and _triple(0) == (0, 0, 0) and _quadruple(1) == (1,) * 4
    assert _pair([1, 2]) == (1, 2) and _triple((4, 5, 6)) == (4, 5, 6)
    assert _pair((1, 2, 3)) == (1, 2, 3)  # as in PyTorch: an iterable is taken as it is, its length unchecked
    assert _pair("ab") == ("a", "b") and _pair(None) == (None, None)
    assert _pair.__name__ == "_pair" and _ntuple(5, "_five")(2) == (2,) * 5
    assert _reverse_repeat_tuple((1, 2, 3), 2) == (3, 3, 2, 2, 1, 1)
    assert _list_with_default(7, (1, 2)) == 7
    assert _list_with_default([None, 4], (2, 3, 9, 8)) == [9, 4]
    with pytest.raises(ValueError, match="Input dimension should be at least 3"):
        _list_with_default([None, 4], (9, 8))


def test_common_types_aliases():
    assert _size_2_t == int | tuple[int, int] and _size_1_t == int | tuple[int]
    assert _size_any_t == int | tuple[int, ...] and _ratio_2_t == float | tuple[float, float]
    assert _tensor_list_t == ember.Tensor | tuple[ember.Tensor, ...]


def test_padding_layers_moved_with_their_behaviour():
    assert ZeroPad2d((1, 1, 2, 0))(ember.ones(1, 2, 2)).shape == (1, 4, 4)
    assert ReflectionPad1d(1)(ember.tensor([[[1.0, 2.0, 3.0]]])).tolist() == [[[2.0, 1.0, 2.0, 3.0, 2.0]]]
    assert repr(ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"
