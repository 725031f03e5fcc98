"""Python numbers that do not fit a tensor's dtype raise PyTorch's overflow error instead of wrapping."""
import pytest

import ember

U8 = ember.uint8


def _u8():
    return ember.zeros(2, dtype=U8)


@pytest.mark.parametrize("make, ctype", [
    (lambda: ember.tensor(300, dtype=U8), "uint8"),
    (lambda: ember.tensor([300], dtype=U8), "uint8"),
    (lambda: ember.tensor([[1, 2], [3, 300]], dtype=U8), "uint8"),
    (lambda: ember.tensor([-256], dtype=U8), "uint8"),
    (lambda: ember.tensor([200], dtype=ember.int8), "int8"),
    (lambda: ember.tensor([40000], dtype=ember.int16), "int16"),
    (lambda: ember.tensor(2 ** 40, dtype=ember.int32), "int32"),
    (lambda: ember.tensor([300.5], dtype=U8), "uint8"),
    (lambda: ember.tensor([255.9], dtype=U8), "uint8"),
    (lambda: ember.tensor([float("nan")], dtype=ember.int32), "int32"),
    (lambda: ember.full((2,), 300, dtype=U8), "uint8_t"),
    (lambda: ember.full((2,), 2.0 ** 31, dtype=ember.int32), "int"),
    (lambda: ember.full((1,), 1e39, dtype=ember.float32), "float"),
    (lambda: _u8().fill_(300), "uint8_t"),
    (lambda: _u8().masked_fill(ember.tensor([True, False]), 300), "uint8_t"),
    (lambda: ember.where(ember.tensor([True, False]), _u8(), 300), "uint8_t"),
    (lambda: _u8().clamp(0, 300), "uint8_t"),
    (lambda: _u8().pow(300), "uint8_t"),
    (lambda: _u8().add(_u8(), alpha=300), "uint8_t"),
    (lambda: _u8().sub(_u8(), alpha=300), "uint8_t"),
    (lambda: ember.zeros(2, dtype=ember.float16).fill_(1e6), "c10::Half"),
    (lambda: ember.full((2,), 1e6, dtype=ember.float16), "c10::Half"),
    (lambda: ember.zeros(2).add(ember.zeros(2), alpha=1e39), "float"),
])
def test_out_of_range_number_raises_pytorchs_error(make, ctype):
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {ctype} without overflow"):
        make()


def test_what_pytorch_accepts_still_works():
    assert ember.tensor([-1], dtype=U8).tolist() == [255]  # two's complement, as PyTorch
    assert ember.tensor(-255, dtype=U8).item() == 1
    assert ember.full((1,), -1, dtype=U8).tolist() == [255]
    assert ember.tensor([255, 0], dtype=U8).tolist() == [255, 0]
    assert ember.tensor(2, dtype=ember.bool).item() is True
    assert (_u8() + 300).tolist() == [44, 44]  # a + scalar wraps in PyTorch too
    assert ember.tensor([1e6], dtype=ember.float16).tolist() == [float("inf")]
    assert ember.full((1,), 1e39, dtype=ember.bfloat16).tolist() == [float("inf")]
    assert _u8().clamp(-1).tolist() == [255, 255]
    assert _u8().add(ember.ones(2, dtype=U8), alpha=-1).tolist() == [255, 255]
    assert ember.where(ember.tensor([True, False]), _u8(), -1).tolist() == [0, 255]


def test_negative_power_of_an_unsigned_tensor_raises():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        _u8().pow(-1)
