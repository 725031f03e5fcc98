"""The kernel densities shared by TPE and BOHB: normalisation, known values, sampling."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.tune.searchers._parzen import (
    ProductKDE,
    UnivariateParzen,
    aitchison_aitken_logpmf,
    logsumexp,
    normal_reference_bandwidths,
    sample_truncnorm,
    truncnorm_log_mass,
    truncnorm_logpdf,
)

GRID = np.linspace(0.0, 1.0, 20001)


def integrate(values):
    return float(np.trapz(values, GRID)) if hasattr(np, "trapz") else float(np.trapezoid(values, GRID))


@pytest.mark.parametrize("mu", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("sigma", [0.05, 0.5, 3.0])
def test_truncated_gaussian_integrates_to_one(mu, sigma):
    log_mass = truncnorm_log_mass(np.array(mu), np.array(sigma))
    assert integrate(np.exp(truncnorm_logpdf(GRID, mu, sigma, log_mass))) == pytest.approx(1.0, abs=1e-6)


def test_truncation_mass_known_values():
    # Phi(1) - Phi(-1): one standard deviation either side
    assert math.exp(truncnorm_log_mass(np.array(0.5), np.array(0.5))) == pytest.approx(0.682689492, abs=1e-8)
    # a kernel on a bound keeps half its mass
    assert math.exp(truncnorm_log_mass(np.array(1.0), np.array(0.01))) == pytest.approx(0.5, abs=1e-12)


def test_logsumexp_survives_underflow_and_matches_direct_sum():
    a = np.array([[-1000.0, -1001.0], [0.1, 0.2]])
    direct = np.log(np.exp(a[1]).sum())
    out = logsumexp(a, axis=1)
    assert out[1] == pytest.approx(direct)
    assert out[0] == pytest.approx(-1000.0 + math.log(1 + math.exp(-1.0)))
    assert logsumexp(np.array([[0.0, 0.0]]), axis=1, weights=np.array([0.25, 0.25]))[0] == pytest.approx(math.log(0.5))


def test_aitchison_aitken_is_a_distribution():
    for lam in (0.0, 0.2, 2 / 3):
        probs = np.exp(aitchison_aitken_logpmf(np.arange(3.0), np.array(1.0), np.array(lam), 3))
        assert probs.sum() == pytest.approx(1.0)
        assert probs[1] == pytest.approx(1 - lam)


def test_univariate_parzen_numeric_integrates_to_one_and_peaks_at_data():
    p = UnivariateParzen(np.array([0.1, 0.12, 0.8]), np.array([1.0, 1.0, 0.5]), n_choices=0, prior_weight=1.0)
    density = np.exp(p.log_pdf(GRID))
    assert integrate(density) == pytest.approx(1.0, abs=1e-5)
    assert density[int(0.11 * 20000)] > density[int(0.5 * 20000)]


def test_univariate_parzen_numeric_known_value_with_only_the_prior():
    p = UnivariateParzen(np.array([]), np.array([]), n_choices=0)
    # the prior alone: N(0.5, 1) truncated to [0, 1]
    expected = math.exp(-0.5 * 0.25) / math.sqrt(2 * math.pi) / (0.5 * (1 + math.erf(0.5 / math.sqrt(2))) * 2 - 1)
    assert math.exp(p.log_pdf(np.array([0.0]))[0]) == pytest.approx(expected)


def test_univariate_parzen_categorical_known_probabilities():
    p = UnivariateParzen(np.array([0.0, 0.0, 2.0]), np.array([1.0, 1.0, 1.0]), n_choices=4, prior_weight=1.0)
    probs = np.exp(p.log_pdf(np.arange(4.0)))
    # counts 2, 0, 1, 0 plus 1/4 each, over 4
    assert probs.tolist() == pytest.approx([2.25 / 4, 0.25 / 4, 1.25 / 4, 0.25 / 4])


def test_univariate_parzen_samples_follow_its_density():
    rng = np.random.default_rng(0)
    p = UnivariateParzen(np.array([0.2, 0.25, 0.7]), np.ones(3), n_choices=0)
    draws = p.sample(rng, 40000)
    assert draws.min() >= 0 and draws.max() <= 1
    edges = np.linspace(0, 1, 11)
    observed = np.histogram(draws, edges)[0] / len(draws)
    fine = np.linspace(0, 1, 10001)
    dens = np.exp(p.log_pdf(fine))
    expected = [dens[(fine >= a) & (fine <= b)].mean() * (b - a) for a, b in zip(edges[:-1], edges[1:])]
    assert observed == pytest.approx(expected, abs=0.01)


def test_normal_reference_bandwidths_known_values():
    data = np.array([[0.1, 0.0, np.nan], [0.3, 1.0, np.nan], [0.5, 1.0, 0.4], [0.7, 1.0, np.nan]])
    bw = normal_reference_bandwidths(data, np.array([0, 2, 0]), min_bandwidth=1e-3)
    scale = 4 ** (-1 / 7)
    assert bw[0] == pytest.approx(1.06 * np.std([0.1, 0.3, 0.5, 0.7]) * scale)
    # p = (1/4, 3/4): spread sqrt((1 - 1/16 - 9/16) / 2) = sqrt(3/16)
    assert bw[1] == pytest.approx(1.06 * math.sqrt(3 / 16) * scale)
    assert bw[2] == 1.0  # active in a single point: the widest kernel
    same = normal_reference_bandwidths(np.array([[0.5, 1.0], [0.5, 1.0]]), np.array([0, 3]), min_bandwidth=0.01)
    assert same.tolist() == [0.01, 0.01]
    numeric_floor = normal_reference_bandwidths(np.array([[0.5, 1.0], [0.5, 1.0]]), np.array([0, 3]), 0.01, 0.05)
    assert numeric_floor.tolist() == [0.05, 0.01]  # the numeric floor leaves categorical kernels alone


def test_product_kde_integrates_to_one_over_mixed_space():
    data = np.array([[0.2, 0.0], [0.9, 2.0], [0.5, 2.0]])
    kde = ProductKDE(data, np.array([0.1, 0.3]), n_choices=[0, 3])
    total = 0.0
    for c in range(3):
        points = np.column_stack([GRID, np.full_like(GRID, c)])
        total += integrate(np.exp(kde.log_pdf(points)))
    assert total == pytest.approx(1.0, abs=1e-5)


def test_product_kde_integrates_to_one_over_a_conditional_space():
    # dim 1 exists only when dim 0 (two categories) is 1; a centre without it contributes the uniform density
    data = np.array([[0.0, np.nan], [1.0, 0.3], [1.0, 0.35]])
    kde = ProductKDE(data, np.array([0.2, 0.05]), n_choices=[2, 0])
    inactive = math.exp(kde.log_pdf(np.array([[0.0, np.nan]]))[0])
    active = integrate(np.exp(kde.log_pdf(np.column_stack([np.ones_like(GRID), GRID]))))
    assert inactive + active == pytest.approx(1.0, abs=1e-5)
    # category 0 carries (1 - 0.2) of the first centre's mass and 0.2 of the others'
    assert inactive == pytest.approx((0.8 + 0.2 + 0.2) / 3)


def test_product_kde_known_value_for_one_centre():
    kde = ProductKDE(np.array([[0.5]]), np.array([0.1]), n_choices=[0])
    mass = math.erf(5 / math.sqrt(2))
    assert math.exp(kde.log_pdf(np.array([[0.5]]))[0]) == pytest.approx(1 / (0.1 * math.sqrt(2 * math.pi)) / mass)


class _Layout:
    """The part of Layout that sampling reads: dimension 2 is active when dimension 1 is category 1."""
    dims = 3
    parents = np.array([-1, -1, 1])
    branches = np.array([-1, -1, 1])

    def is_active(self, vectors, d):
        if self.parents[d] < 0:
            return np.ones(len(vectors), dtype=bool)
        return vectors[:, self.parents[d]] == self.branches[d]


def test_product_kde_sampling_respects_kernels_and_conditions():
    data = np.array([[0.3, 1.0, 0.6]])
    kde = ProductKDE(data, np.array([0.05, 0.1, 0.05]), n_choices=[0, 2, 0])
    draws = kde.sample(np.random.default_rng(1), 20000, _Layout(), bandwidth_factor=2.0)
    assert np.std(draws[:, 0]) == pytest.approx(0.1, rel=0.05)  # widened by the factor
    assert np.mean(draws[:, 1] == 0.0) == pytest.approx(0.1, abs=0.01)  # the Aitchison-Aitken kernel itself
    on = draws[:, 1] == 1.0
    assert np.isnan(draws[~on, 2]).all() and not np.isnan(draws[on, 2]).any()
    assert np.mean(draws[on, 2]) == pytest.approx(0.6, abs=0.01)


def test_product_kde_draws_uniformly_where_the_centre_lacks_a_dimension():
    kde = ProductKDE(np.array([[1.0, np.nan]]), np.array([1e-3, 0.01]), n_choices=[2, 0])
    layout = _Layout()
    layout.dims, layout.parents, layout.branches = 2, np.array([-1, 0]), np.array([-1, 1])
    draws = kde.sample(np.random.default_rng(2), 5000, layout, bandwidth_factor=3.0)
    active = draws[:, 0] == 1.0
    assert active.mean() > 0.99
    assert np.histogram(draws[active, 1], np.linspace(0, 1, 5))[0] / active.sum() == pytest.approx([0.25] * 4, abs=0.03)


@settings(max_examples=50, deadline=None)
@given(mu=st.floats(0.0, 1.0), sigma=st.floats(1e-3, 20.0), seed=st.integers(0, 2 ** 32 - 1))
def test_truncated_gaussian_draws_stay_in_the_unit_interval(mu, sigma, seed):
    x = sample_truncnorm(np.random.default_rng(seed), np.full(64, mu), np.full(64, sigma))
    assert ((x >= 0.0) & (x <= 1.0)).all()
