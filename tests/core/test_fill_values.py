"""Scalar values written by fill_, masked_fill and setitem: truncated for integer tensors, PyTorch's error when
they do not fit."""
import pytest

import ember


def test_fills_truncate_floats_for_integer_tensors():
    mask = ember.tensor([True, False])
    assert ember.ones(2, dtype=ember.int64).fill_(1.5).tolist() == [1, 1]
    assert ember.ones(2, dtype=ember.int8).masked_fill(mask, -1.7).tolist() == [-1, 1]
    assert ember.ones(2, dtype=ember.int64).masked_fill(mask, True).tolist() == [1, 1]
    x = ember.zeros(2, dtype=ember.int32)
    x[0] = 2.9
    assert x.tolist() == [2, 0]


@pytest.mark.parametrize("dtype, value, ctype", [
    (ember.uint8, 300, "uint8_t"), (ember.int8, -129, "int8_t"), (ember.int16, 1e10, "int16_t"),
    (ember.int32, 1e10, "int"), (ember.int64, 1e30, "int64_t"), (ember.int32, float("nan"), "int"),
])
def test_fills_out_of_range_raise_pytorchs_error(dtype, value, ctype):
    msg = f"value cannot be converted to type {ctype} without overflow"
    with pytest.raises(RuntimeError, match=msg):
        ember.ones(2, dtype=dtype).fill_(value)
    with pytest.raises(RuntimeError, match=msg):
        ember.ones(2, dtype=dtype).masked_fill(ember.tensor([True, False]), value)
