"""Each domain type of ember.tune: bounds, q rounding, log spacing, integer uniformity, errors."""
import math

import numpy as np
import pytest

from ember import tune
from ember.tune.domains import find_index


def chi_square(counts, expected):
    counts, expected = np.asarray(counts, float), np.asarray(expected, float)
    return float(((counts - expected) ** 2 / expected).sum())


# chi-square critical values at p = 0.001 (df -> value), so a correct sampler fails once in a thousand seeds;
# the seeds are fixed, so the tests are deterministic
CHI2_999 = {2: 13.82, 3: 16.27, 4: 18.47, 9: 27.88, 10: 29.59}


def test_uniform_bounds_and_mean():
    d = tune.uniform(-2.0, 3.0)
    rng = np.random.default_rng(1)
    xs = np.array([d.sample(rng) for _ in range(5000)])
    assert d.kind == "float" and not d.log
    assert xs.min() >= -2.0 and xs.max() <= 3.0
    assert abs(xs.mean() - 0.5) < 0.1  # sd of the mean: 5 / sqrt(12 * 5000) = 0.02
    counts = np.histogram(xs, bins=10, range=(-2, 3))[0]
    assert chi_square(counts, [len(xs) / 10] * 10) < CHI2_999[9]


def test_loguniform_is_uniform_in_the_exponent():
    d = tune.loguniform(1e-4, 1.0)
    rng = np.random.default_rng(2)
    xs = np.array([d.sample(rng) for _ in range(4000)])
    assert d.log and xs.min() >= 1e-4 and xs.max() <= 1.0
    counts = np.histogram(np.log10(xs), bins=4, range=(-4, 0))[0]  # one bin per decade
    assert chi_square(counts, [1000] * 4) < CHI2_999[3]
    assert d.to_unit(1e-2) == pytest.approx(0.5) and d.from_unit(0.25) == pytest.approx(1e-3)
    assert tune.loguniform(1, 8, base=2).to_unit(2) == pytest.approx(1 / 3)


def test_quniform_rounds_to_multiples_of_q_inside_bounds():
    d = tune.quniform(0.0, 1.0, 0.1)
    rng = np.random.default_rng(3)
    xs = {d.sample(rng) for _ in range(2000)}
    assert xs == {round(0.1 * k, 1) for k in range(11)}  # clean values: 0.3, not 0.30000000000000004
    assert d.size == 11 and d.from_unit(0.34) == 0.3 and d.from_unit(1.0) == 1.0
    # bounds that are not multiples of q: values stay inside [low, high]
    d = tune.quniform(0.15, 0.95, 0.25)
    values = {d.from_unit(u) for u in np.linspace(0, 1, 101)}
    assert values == {0.25, 0.5, 0.75}


def test_qloguniform_rounds_after_the_log_transform():
    d = tune.qloguniform(1, 1000, 1)
    rng = np.random.default_rng(4)
    xs = np.array([d.sample(rng) for _ in range(3000)])
    assert np.all(xs == np.round(xs)) and xs.min() >= 1 and xs.max() <= 1000
    assert d.log and d.from_unit(2 / 3) == 100.0
    # about a third of the mass below 10 (log spacing), far more than the 1% a uniform draw would give
    assert 0.28 < np.mean(xs < 10) < 0.38


def test_randint_excludes_high_and_is_uniform():
    d = tune.randint(0, 10)
    rng = np.random.default_rng(5)
    xs = [d.sample(rng) for _ in range(10000)]
    assert all(type(x) is int for x in xs[:20])
    assert set(xs) == set(range(10))
    assert chi_square(np.bincount(xs, minlength=10), [1000] * 10) < CHI2_999[9]
    assert d.contains(9) and not d.contains(10) and not d.contains(-1) and not d.contains(2.5)


def test_int_from_unit_gives_uniform_ints_from_uniform_u():
    d = tune.randint(3, 8)
    us = (np.arange(1000) + 0.5) / 1000  # an evenly spread u
    counts = np.bincount([d.from_unit(u) - 3 for u in us])
    assert counts.tolist() == [200] * 5
    assert [d.from_unit(d.to_unit(v)) for v in range(3, 8)] == list(range(3, 8))


def test_qrandint_includes_high_and_steps_by_q():
    d = tune.qrandint(0, 20, 5)
    rng = np.random.default_rng(6)
    xs = [d.sample(rng) for _ in range(5000)]
    assert sorted(set(xs)) == [0, 5, 10, 15, 20]
    assert chi_square([xs.count(v) for v in (0, 5, 10, 15, 20)], [1000] * 5) < CHI2_999[4]
    assert tune.qrandint(1, 3).values() == [1, 2, 3]  # q=1, high included
    assert tune.qrandint(1, 10, 4).values() == [4, 8]  # multiples of q inside the bounds


def test_lograndint_is_log_uniform_over_integers():
    d = tune.lograndint(1, 1000)
    rng = np.random.default_rng(7)
    xs = np.array([d.sample(rng) for _ in range(6000)])
    assert d.kind == "int" and d.log and xs.min() >= 1 and xs.max() <= 999
    # P(value in [10^a, 10^(a+1))) = 1/3 for each decade
    counts = [np.sum((xs >= 10 ** a) & (xs < 10 ** (a + 1))) for a in range(3)]
    assert chi_square(counts, [2000] * 3) < CHI2_999[2]
    assert [d.from_unit(d.to_unit(v)) for v in (1, 2, 3, 17, 500, 999)] == [1, 2, 3, 17, 500, 999]


def test_choice_index_and_uniformity():
    d = tune.choice(["a", "b", "c"])
    rng = np.random.default_rng(8)
    xs = [d.sample(rng) for _ in range(3000)]
    assert d.kind == "categorical" and d.n_choices == 3 and d.categories == ["a", "b", "c"]
    assert chi_square([xs.count(c) for c in "abc"], [1000] * 3) < CHI2_999[2]
    assert d.to_unit("c") == 2.0 and d.from_unit(1.4) == "b" and d.from_unit(7) == "c"
    assert not d.contains("z")


def test_choice_tells_true_from_one():
    assert find_index([1, True, 1.0], True) == 1 and find_index([1, True, 1.0], 1.0) == 2
    assert find_index([np.array([1, 2]), "x"], "x") == 1  # an array category does not break the lookup


def test_grid_search_and_sample_from_kinds():
    g = tune.grid_search([1, 2, 3])
    assert g.kind == "grid" and g.size == 3 and g.to_unit(3) == 2.0
    f = tune.sample_from(lambda config: config["x"] + 1)
    assert f.kind == "function" and f.sample(config={"x": 1}) == 2


def test_seeded_sampling_repeats():
    d = tune.loguniform(1e-5, 1e-1)
    rng_a, rng_b = np.random.default_rng(11), np.random.default_rng(11)
    a, b = [d.sample(rng_a) for _ in range(5)], [d.sample(rng_b) for _ in range(5)]
    assert a == b and len(set(a)) == 5 and d.sample(3) == d.sample(3)


@pytest.mark.parametrize("make, message", [
    (lambda: tune.uniform(1, 1), "low must be below high"),
    (lambda: tune.uniform(2, 1), "low must be below high"),
    (lambda: tune.uniform("a", 1), "low must be a finite number"),
    (lambda: tune.uniform(0, math.inf), "high must be a finite number"),
    (lambda: tune.loguniform(0, 1), "bounds must be positive"),
    (lambda: tune.loguniform(-1, 1), "bounds must be positive"),
    (lambda: tune.loguniform(1, 10, base=1), "base must be positive and not 1"),
    (lambda: tune.quniform(0, 1, 0), "q must be positive"),
    (lambda: tune.quniform(0.1, 0.2, 1), "no multiple of q"),
    (lambda: tune.qloguniform(0, 1, 0.1), "bounds must be positive"),
    (lambda: tune.randint(3, 3), "high is excluded"),
    (lambda: tune.randint(0, 2.5), "high must be an integer"),
    (lambda: tune.lograndint(0, 10), "bounds must be positive"),
    (lambda: tune.qrandint(5, 1), "low must be below high"),
    (lambda: tune.qrandint(1, 3, 5), "no multiple of q"),
    (lambda: tune.qrandint(0, 3, -1), "q must be positive"),
    (lambda: tune.choice([]), "at least one value"),
    (lambda: tune.grid_search([]), "at least one value"),
])
def test_bad_bounds_are_clear_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("make, message", [
    (lambda: tune.choice("abc"), "expected a list of values"),
    (lambda: tune.choice(3), "expected a list of values"),
    (lambda: tune.choice({"a", "b"}), "a set has no fixed order"),
    (lambda: tune.sample_from(3), "expected a function"),
])
def test_bad_types_are_clear_errors(make, message):
    with pytest.raises(TypeError, match=message):
        make()


def test_to_unit_rejects_values_outside_the_domain():
    with pytest.raises(ValueError, match="not one of its values"):
        tune.randint(0, 3).to_unit(5)
    with pytest.raises(ValueError, match="must be positive"):
        tune.loguniform(1, 10).to_unit(-1)
    with pytest.raises(ValueError, match="not one of the categories"):
        tune.choice([1, 2]).to_unit(3)
