"""Integer division and modulus by zero raise PyTorch's "ZeroDivisionError"; float ones give inf or nan."""
import math

import pytest

import ember


def _i(*v, dtype=ember.int64):
    return ember.tensor(list(v), dtype=dtype)


@pytest.mark.parametrize("compute", [
    lambda: _i(5) // 0,
    lambda: _i(5, 6) // _i(1, 0),
    lambda: _i(5) % 0,
    lambda: _i(5) % _i(0),
    lambda: ember.fmod(_i(5), 0),
    lambda: ember.fmod(_i(5), _i(0)),
    lambda: ember.div(_i(5), 0, rounding_mode="trunc"),
    lambda: ember.div(_i(5), 0, rounding_mode="floor"),
    lambda: ember.div(_i(5), _i(0), rounding_mode="trunc"),
    lambda: _i(5, dtype=ember.uint8) // 0,
    lambda: _i(5, dtype=ember.int32) % _i(0, dtype=ember.int32),
    lambda: ember.remainder(5, _i(0)),
    lambda: ember.floor_divide(5, _i(0)),
])
def test_integer_division_by_zero_raises(compute):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        compute()


def test_float_division_by_zero_gives_pytorchs_values():
    assert (_i(5) / 0).tolist() == [math.inf]  # true division of integers is float division
    assert (ember.tensor([5.0]) // 0).tolist() == [math.inf]
    assert math.isnan((ember.tensor([5.0]) % 0).item())
    assert math.isnan(ember.fmod(ember.tensor([5.0]), 0).item())


def test_trunc_division_of_integers_is_exact():
    a, b = _i(2 ** 62 + 1, -7, 7, -7, 7, 0), _i(1, 2, -2, -2, 2, 3)
    q = ember.div(a, b, rounding_mode="trunc")
    assert q.dtype == ember.int64
    assert q.tolist() == [2 ** 62 + 1, -3, -3, 3, 3, 0]  # via float64 the first was off by one
