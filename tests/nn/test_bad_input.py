"""A layer given an input of the wrong rank or channel count says which layer, and both shapes."""
import pytest

import ember
from ember import nn

CASES = [
    # (layer, bad input shape, what the message must also show: the size or rank the layer expected)
    (lambda: nn.Linear(4, 3), (2, 5), "last dimension 4"),
    (lambda: nn.Bilinear(2, 3, 4), None, "last dimension 3"),
    (lambda: nn.Conv1d(3, 8, 3), (2, 4, 10), "[N, 3, L]"),
    (lambda: nn.Conv2d(1, 32, 3), (64, 3, 28, 28), "[N, 1, H, W]"),
    (lambda: nn.Conv2d(1, 32, 3), (28, 28), "[1, H, W]"),
    (lambda: nn.ConvTranspose2d(4, 2, 3), (1, 3, 5, 5), "[N, 4, H, W]"),
    (lambda: nn.BatchNorm1d(3), (2, 3, 4, 5), "2D or 3D"),
    (lambda: nn.BatchNorm2d(3), (2, 4, 5, 5), "3 channels"),
    (lambda: nn.LayerNorm(4), (2, 5), "[*, 4]"),
    (lambda: nn.GroupNorm(2, 4), (2, 6, 3), "4 channels"),
    (lambda: nn.MaxPool2d(2), (2, 2), "3D"),
    (lambda: nn.AvgPool2d(2), (2,), "3D"),
    (lambda: nn.LSTM(10, 20), (5, 3, 11), "Expected 10"),
    (lambda: nn.GRU(10, 20), (3, 5, 3, 10), "2D or 3D"),
]


@pytest.mark.parametrize("make,shape,expected", CASES, ids=[f"{i}" for i in range(len(CASES))])
def test_wrong_input_names_the_layer_and_the_shapes(make, shape, expected):
    layer = make()
    name = type(layer).__name__
    if shape is None:  # Bilinear: the second input has the wrong feature size
        args, shape = (ember.ones(1, 2), ember.ones(1, 4)), (1, 4)
    else:
        args = (ember.ones(*shape),)
    with pytest.raises((RuntimeError, ValueError)) as info:
        layer(*args)
    message = str(info.value)
    assert name.lower() in message.lower(), message
    shown = [", ".join(map(str, shape)), "x".join(map(str, shape)), f"{len(shape)}D", f"{len(shape)}-D"]
    assert any(s in message for s in shown), f"{message!r} does not show the input shape {shape}"
    assert expected in message, f"{message!r} does not show what was expected ({expected})"


def test_load_state_dict_reports_wrong_keys_and_shapes():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    state = model.state_dict()
    state["2.weight"] = ember.zeros(2, 3)
    state["extra"] = ember.zeros(1)
    del state["0.bias"]
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(state)
    message = str(info.value)
    assert "Error(s) in loading state_dict for Sequential" in message
    assert 'Missing key(s) in state_dict: "0.bias"' in message
    assert 'Unexpected key(s) in state_dict: "extra"' in message
    assert ("size mismatch for 2.weight: copying a param with shape ember.Size([2, 3]) from checkpoint, the shape "
            "in current model is ember.Size([1, 3])") in message
    state["2.weight"] = ember.zeros(1, 3)
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == ["0.bias"] and result.unexpected_keys == ["extra"]
