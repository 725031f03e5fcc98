"""Property tests of the domains: samples inside the bounds, to_unit / from_unit round trips."""
import math

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ember import tune

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-8, max_value=1e6, allow_nan=False, allow_infinity=False)
unit = st.floats(min_value=0.0, max_value=1.0)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


@st.composite
def float_domains(draw):
    kind = draw(st.sampled_from(["uniform", "loguniform", "quniform", "qloguniform"]))
    low, high = sorted(draw(st.tuples(positive if "log" in kind else finite, positive if "log" in kind else finite)))
    assume(high - low > 1e-6 * max(1.0, abs(high)))
    if kind == "uniform":
        return tune.uniform(low, high)
    if kind == "loguniform":
        return tune.loguniform(low, high)
    q = (high - low) / draw(st.integers(min_value=1, max_value=1000))
    assume(q > 1e-9)
    return tune.quniform(low, high, q) if kind == "quniform" else tune.qloguniform(low, high, q)


@st.composite
def int_domains(draw):
    kind = draw(st.sampled_from(["randint", "lograndint", "qrandint"]))
    low = draw(st.integers(min_value=1 if kind == "lograndint" else -10**6, max_value=10**6))
    high = low + draw(st.integers(min_value=1, max_value=10**6))
    if kind == "randint":
        return tune.randint(low, high)
    if kind == "lograndint":
        return tune.lograndint(low, high)
    q = draw(st.integers(min_value=1, max_value=max(1, (high - low))))
    assume(high // q >= -(-low // q))  # a multiple of q in range
    return tune.qrandint(low, high, q)


@settings(max_examples=200, deadline=None)
@given(float_domains(), seeds)
def test_float_samples_inside_bounds(d, seed):
    x = d.sample(np.random.default_rng(seed))
    assert type(x) is float and d.low <= x <= d.high and d.contains(x)


@settings(max_examples=200, deadline=None)
@given(float_domains(), unit)
def test_float_from_unit_is_inside_and_round_trips(d, u):
    x = d.from_unit(u)
    assert d.low <= x <= d.high and d.contains(x)
    u2 = d.to_unit(x)
    assert 0.0 <= u2 <= 1.0
    if d.q is None:  # continuous: to_unit inverts from_unit
        assert math.isclose(u2, u, abs_tol=1e-6)
    assert math.isclose(d.from_unit(u2), x, rel_tol=1e-9, abs_tol=1e-9)  # quantized: the same value back


@settings(max_examples=200, deadline=None)
@given(int_domains(), seeds, unit)
def test_int_samples_inside_bounds_and_round_trip(d, seed, u):
    x = d.sample(np.random.default_rng(seed))
    assert type(x) is int and d.low <= x <= d.high and d.contains(x)
    y = d.from_unit(u)
    assert type(y) is int and d.contains(y)
    assert 0.0 <= d.to_unit(y) <= 1.0
    assert d.from_unit(d.to_unit(x)) == x and d.from_unit(d.to_unit(y)) == y


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none()), min_size=1, max_size=8,
                unique_by=lambda v: (type(v), v)), seeds)
def test_choice_round_trips_through_the_index(categories, seed):
    d = tune.choice(categories)
    x = d.sample(np.random.default_rng(seed))
    i = d.to_unit(x)
    assert float(i).is_integer() and 0 <= i < len(categories)
    assert d.from_unit(i) is x or d.from_unit(i) == x and type(d.from_unit(i)) is type(x)
