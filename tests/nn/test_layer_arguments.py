"""Impossible layer arguments raise what PyTorch 2.13 raises (type and key words, recorded by hand from torch),
never a layer that runs and returns zeros. Where PyTorch raises only at the first call, ember raises at
construction already (same type and words)."""
import pytest

import ember
import ember.nn.functional as F
from ember import nn

X4 = ember.ones(1, 1, 5, 5)
X3 = ember.ones(1, 1, 5)

# (id, call, exception type torch raises, words its message holds)
CASES = [
    ("Conv2d kernel 0", lambda: nn.Conv2d(1, 1, 0)(X4), RuntimeError, "kernel size should be greater than zero"),
    ("Conv2d kernel (0, 3)", lambda: nn.Conv2d(1, 1, (0, 3))(X4), RuntimeError,
     "kernel size should be greater than zero"),
    ("Conv1d kernel 0", lambda: nn.Conv1d(1, 1, 0)(X3), RuntimeError, "kernel size should be greater than zero"),
    ("ConvTranspose2d kernel 0", lambda: nn.ConvTranspose2d(1, 1, 0)(X4), RuntimeError,
     "kernel size should be greater than zero"),
    ("Conv2d stride 0", lambda: nn.Conv2d(1, 1, 3, stride=0)(X4), RuntimeError, "non-positive stride"),
    ("ConvTranspose2d stride 0", lambda: nn.ConvTranspose2d(1, 1, 3, stride=0)(X4), RuntimeError,
     "non-positive stride"),
    ("Conv2d padding -1", lambda: nn.Conv2d(1, 1, 3, padding=-1)(X4), RuntimeError, "negative padding"),
    ("Conv2d dilation 0", lambda: nn.Conv2d(1, 1, 3, dilation=0)(X4), RuntimeError,
     "dilation should be greater than zero"),
    ("Conv2d kernel -1", lambda: nn.Conv2d(1, 1, -1), RuntimeError, ""),
    ("Conv2d groups 0", lambda: nn.Conv2d(2, 2, 3, groups=0), ValueError, "groups must be a positive integer"),
    ("Conv2d in % groups", lambda: nn.Conv2d(3, 2, 3, groups=2), ValueError, "in_channels must be divisible"),
    ("Conv2d out % groups", lambda: nn.Conv2d(2, 3, 3, groups=2), ValueError, "out_channels must be divisible"),
    ("Conv2d padding 'same' strided", lambda: nn.Conv2d(1, 1, 3, padding="same", stride=2), ValueError,
     "not supported for strided convolutions"),
    ("F.conv2d kernel 0", lambda: F.conv2d(X4, ember.ones(1, 1, 0, 0)), RuntimeError,
     "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0"),
    ("F.conv1d kernel 0", lambda: F.conv1d(X3, ember.ones(1, 1, 0)), RuntimeError,
     "kernel size should be greater than zero, but got kernel_height: 1 kernel_width: 0"),
    ("F.conv_transpose2d kernel 0", lambda: F.conv_transpose2d(X4, ember.ones(1, 1, 0, 0)), RuntimeError,
     "kernel size should be greater than zero"),
    ("F.conv2d stride 0", lambda: F.conv2d(X4, ember.ones(1, 1, 3, 3), stride=0), RuntimeError,
     "non-positive stride is not supported"),
    ("F.conv2d padding -1", lambda: F.conv2d(X4, ember.ones(1, 1, 3, 3), padding=-1), RuntimeError,
     "negative padding is not supported"),
    ("F.conv2d groups 0", lambda: F.conv2d(X4, ember.ones(1, 1, 3, 3), groups=0), RuntimeError,
     "non-positive groups is not supported"),
    ("MaxPool2d kernel 0", lambda: nn.MaxPool2d(0)(X4), RuntimeError, ""),
    ("MaxPool2d padding too big", lambda: nn.MaxPool2d(2, padding=2)(X4), RuntimeError,
     "pad should be at most half of effective kernel size"),
    ("F.max_pool2d kernel -1", lambda: F.max_pool2d(X4, -1), RuntimeError, "kernel"),
    ("F.avg_pool2d stride 0", lambda: F.avg_pool2d(X4, 2, stride=0), RuntimeError, "stride should not be zero"),
    ("AdaptiveAvgPool2d -1", lambda: nn.AdaptiveAvgPool2d(-1)(X4), RuntimeError,
     "elements of output_size must be greater than or equal to 0"),
    ("RNN hidden 0", lambda: nn.RNN(3, 0), ValueError, "hidden_size must be greater than zero"),
    ("RNN hidden -1", lambda: nn.RNN(3, -1), ValueError, "hidden_size must be greater than zero"),
    ("GRU layers 0", lambda: nn.GRU(3, 4, num_layers=0), ValueError, "num_layers must be greater than zero"),
    ("LSTM dropout 2", lambda: nn.LSTM(3, 4, dropout=2.0), ValueError, "dropout should be a number in range [0, 1]"),
    ("LSTM proj_size >= hidden", lambda: nn.LSTM(3, 4, proj_size=4), ValueError,
     "proj_size has to be smaller than hidden_size"),
    ("Linear in -1", lambda: nn.Linear(-1, 2), RuntimeError, "negative dimension -1"),
    ("Bilinear in2 -1", lambda: nn.Bilinear(2, -1, 2), RuntimeError, "negative dimension -1"),
    ("Embedding -1", lambda: nn.Embedding(-1, 2), RuntimeError, "negative dimension -1"),
    ("Embedding padding_idx 3 of 3", lambda: nn.Embedding(3, 2, padding_idx=3), AssertionError,
     "Padding_idx must be within num_embeddings"),
    ("BatchNorm1d -1", lambda: nn.BatchNorm1d(-1), RuntimeError, "negative dimension -1"),
    ("GroupNorm 3 of 4", lambda: nn.GroupNorm(3, 4), ValueError,
     "num_channels (4) must be divisible by num_groups (3)"),
    ("GroupNorm 0", lambda: nn.GroupNorm(0, 4), ZeroDivisionError, ""),
    ("Dropout -0.1", lambda: nn.Dropout(-0.1), ValueError, "dropout probability has to be between 0 and 1"),
    ("Dropout2d 1.5", lambda: nn.Dropout2d(1.5), ValueError, "dropout probability has to be between 0 and 1"),
    ("F.dropout 1.5", lambda: F.dropout(X4, 1.5), ValueError, "dropout probability has to be between 0 and 1"),
    ("Upsample neither", lambda: nn.Upsample()(X4), ValueError, "either size or scale_factor should be defined"),
    ("Upsample both", lambda: nn.Upsample(size=4, scale_factor=2)(X4), ValueError,
     "only one of size or scale_factor should be defined"),
    ("MultiheadAttention 5 % 2", lambda: nn.MultiheadAttention(5, 2), AssertionError,
     "embed_dim must be divisible by num_heads"),
    ("MultiheadAttention heads 0", lambda: nn.MultiheadAttention(4, 0), ValueError,
     "embed_dim and num_heads must be greater than 0"),
    ("ReflectionPad2d too big", lambda: nn.ReflectionPad2d(5)(X4), RuntimeError,
     "Padding size should be less than the corresponding input dimension"),
]


@pytest.mark.parametrize("call, error, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_impossible_arguments_raise_as_pytorch(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


def test_conv_layer_refuses_a_zero_kernel_at_construction():
    with pytest.raises(RuntimeError, match=r"^Conv2d: kernel size should be greater than zero, but got "
                                           r"kernel_size=\(0, 0\)$"):
        nn.Conv2d(1, 1, 0)
    assert nn.Conv2d(0, 1, 3)(ember.ones(1, 0, 5, 5)).shape == (1, 1, 3, 3)  # no channels is allowed, as in PyTorch
