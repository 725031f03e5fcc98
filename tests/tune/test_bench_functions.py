"""The multi-fidelity test functions of benchmarks/tune (loaded by path: benchmarks/ is not a package)."""
import importlib.util
import math
import pathlib
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_PATH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "tune" / "mf_functions.py"
_spec = importlib.util.spec_from_file_location("ember_bench_mf_functions", _PATH)
mf = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)  # registered first: it has dataclasses
_spec.loader.exec_module(mf)


def test_branin_minima_at_full_fidelity():
    for x1, x2 in [(-math.pi, 12.275), (math.pi, 2.275), (3 * math.pi, 2.475)]:
        assert mf.augmented_branin(x1, x2, 1.0) == pytest.approx(0.397887, abs=1e-6)
    # a grid finds nothing lower
    x1, x2 = np.meshgrid(np.linspace(-5, 10, 601), np.linspace(0, 15, 601))
    assert mf.augmented_branin(x1, x2, 1.0).min() >= 0.397887 - 1e-6


def test_branin_fidelity_moves_the_minimiser_not_the_minimum():
    # at s < 1 the same minimum value is reached at another x2 (BoTorch's listed optimisers)
    for x2, s in [(1.3867356039019576, 0.1), (1.781519779945532, 0.5), (2.1763039559891064, 0.9)]:
        assert mf.augmented_branin(math.pi, x2, s) == pytest.approx(0.397887, abs=1e-6)
        assert mf.augmented_branin(math.pi, x2, 1.0) > 0.397887 + 1e-3  # but it is not optimal at full fidelity
    assert mf.augmented_branin(math.pi, 2.275, 0.5) != pytest.approx(mf.augmented_branin(math.pi, 2.275, 1.0))


def test_hartmann6_minimum_and_fidelity():
    x = np.array(mf.HARTMANN6_ARGMIN)
    assert mf.augmented_hartmann6(x, 1.0) == pytest.approx(-3.32237, abs=1e-5)
    assert mf.augmented_hartmann6(x, 0.0) > mf.augmented_hartmann6(x, 1.0)  # lower fidelity: shallower
    rng = np.random.default_rng(0)
    assert mf.augmented_hartmann6(rng.random((20000, 6)), 1.0).min() > -3.32237
    # vectorised over a batch agrees with one by one
    xs = rng.random((5, 6))
    np.testing.assert_allclose(mf.augmented_hartmann6(xs, 0.3), [mf.augmented_hartmann6(v, 0.3) for v in xs])
    with pytest.raises(ValueError, match="6 coordinates"):
        mf.augmented_hartmann6(np.zeros(5), 1.0)


def test_counting_ones_exact_and_sampled():
    assert mf.counting_ones([1] * 8, [1.0] * 8) == -16
    assert mf.counting_ones([0] * 8, [0.0] * 8) == 0
    rng = np.random.default_rng(0)
    assert mf.counting_ones([1] * 8, [1.0] * 8, 9, rng) == -16  # Bernoulli(1) is always 1
    probs = np.linspace(0.1, 0.9, 8)
    exact = mf.counting_ones([1, 0] * 4, probs)
    assert exact == pytest.approx(-(4 + probs.sum()))
    low = [mf.counting_ones([1, 0] * 4, probs, 9, rng) for _ in range(4000)]
    high = [mf.counting_ones([1, 0] * 4, probs, 729, rng) for _ in range(4000)]
    assert np.mean(low) == pytest.approx(exact, abs=0.05) and np.mean(high) == pytest.approx(exact, abs=0.02)
    # the budget is the number of samples: variance falls as 1/b
    assert np.var(low) / np.var(high) == pytest.approx(81, rel=0.15)
    with pytest.raises(ValueError, match="bits must be 0 or 1"):
        mf.counting_ones([2], [0.5])
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        mf.counting_ones([1], [1.5])


def test_problems_regret_at_full_fidelity():
    rng = np.random.default_rng(1)
    ones = mf.CountingOnes()
    best = {**{f"b{i}": 1 for i in range(8)}, **{f"c{i}": 1.0 for i in range(8)}}
    assert ones.regret(best) == 0 and ones.evaluate(best, 1, rng) == -1.0
    half = {**{f"b{i}": i % 2 for i in range(8)}, **{f"c{i}": 0.5 for i in range(8)}}
    assert ones.regret(half) == pytest.approx(0.5)
    branin = mf.AugmentedBranin()
    assert branin.regret({"x1": math.pi, "x2": 2.275}) == pytest.approx(0, abs=1e-6)
    assert branin.evaluate({"x1": math.pi, "x2": 1.781519779945532}, 81 // 2, rng) < branin.true_value(
        {"x1": math.pi, "x2": 1.781519779945532})
    hart = mf.AugmentedHartmann6()
    opt = {f"x{i + 1}": v for i, v in enumerate(mf.HARTMANN6_ARGMIN)}
    assert hart.regret(opt) == pytest.approx(0, abs=1e-5)
    assert hart.evaluate(opt, hart.max_t, rng) == pytest.approx(hart.true_value(opt))


@settings(max_examples=50, deadline=None)
@given(st.floats(-5, 10), st.floats(0, 15), st.floats(0, 1))
def test_branin_never_below_its_minimum(x1, x2, s):
    assert mf.augmented_branin(x1, x2, s) >= 0.397887 - 1e-6


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=6, max_size=6), st.floats(0, 1))
def test_hartmann_never_below_its_minimum(x, s):
    assert mf.augmented_hartmann6(x, s) >= -3.32237 - 1e-5


def test_param_spaces_match_the_problem_parameters():
    from ember import tune
    for cls in mf.PROBLEMS.values():
        problem = cls()
        space = problem.param_space()
        assert list(space) == [p.name for p in problem.params]
        for p in problem.params:
            domain = space[p.name]
            assert isinstance(domain, tune.Domain)


def test_random_search_hit_probability_is_exact():
    ones = mf.CountingOnes()
    assert ones.random_hit_probability(0.5) == pytest.approx(0.5)  # symmetric around half the dimension
    assert ones.random_hit_probability(1.0) == pytest.approx(1.0) and ones.random_hit_probability(0.0) == 0.0
    rng = np.random.default_rng(0)
    n = 400_000
    regret = (16 - rng.integers(0, 2, (n, 8)).sum(1) - rng.random((n, 8)).sum(1)) / 16
    for target in (0.25, 0.3):
        p = ones.random_hit_probability(target)
        assert (regret <= target).mean() == pytest.approx(p, rel=5 * math.sqrt((1 - p) / (p * n)))
    # geometric quantiles: the median n has P(success within n) >= 1/2 and n - 1 does not
    p = ones.random_hit_probability(0.2)
    q25, median, q75 = ones.random_budget_quantiles(0.2)
    assert q25 < median < q75
    assert 1 - (1 - p) ** median >= 0.5 > 1 - (1 - p) ** (median - 1)
