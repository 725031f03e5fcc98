"""Kernel density estimates over a search space's unit encoding, shared by TPE and BOHB.

A :class:`~ember.tune.SearchSpace` encodes a configuration as a vector: a numeric
parameter as ``to_unit(value)`` in [0, 1], a categorical one as its category index,
an inactive conditional parameter as nan. The densities here live on that encoding:

- numeric dimensions: Gaussian kernels truncated to [0, 1] (so every kernel integrates to one
  over the domain, also next to its bounds);
- categorical dimensions: the Aitchison-Aitken kernel, mass ``1 - lam`` on the kernel's own
  category and ``lam / (c - 1)`` on each other one;
- conditional parameters: a dimension inactive in the point evaluated contributes nothing; a
  dimension active there but not in a kernel's centre contributes the uniform density (the
  kernel knows nothing about it). The result is a proper density over the tree-structured space.

:class:`UnivariateParzen` is TPE's one-dimensional estimator (Bergstra et al. 2011),
:class:`ProductKDE` BOHB's multivariate one (Falkner et al. 2018), and :class:`Layout` what
both searchers need to know about the space's parameters.

>>> import numpy as np
>>> kde = ProductKDE(np.array([[0.5, 1.0]]), np.array([0.1, 0.2]), n_choices=[0, 2])
>>> float(np.exp(kde.log_pdf(np.array([[0.5, 1.0]])))[0]) > float(np.exp(kde.log_pdf(np.array([[0.9, 0.0]])))[0])
True
"""
from __future__ import annotations

import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _norm_cdf(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.asarray(_erf(np.asarray(z, dtype=np.float64) / math.sqrt(2.0)), dtype=np.float64))


def truncnorm_log_mass(mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """log of the mass that N(mu, sigma) puts on [0, 1] (the truncated kernel's normaliser).

    >>> round(float(np.exp(truncnorm_log_mass(np.array(0.0), np.array(1e-3)))), 6)
    0.5
    """
    mass = _norm_cdf((1.0 - mu) / sigma) - _norm_cdf(-mu / sigma)
    return np.log(np.maximum(mass, 1e-300))


def truncnorm_logpdf(x: np.ndarray, mu: np.ndarray, sigma: np.ndarray, log_mass: np.ndarray) -> np.ndarray:
    """log density at ``x`` of N(mu, sigma) truncated to [0, 1] (arguments broadcast together)."""
    z = (x - mu) / sigma
    return -0.5 * z * z - np.log(sigma) - _LOG_SQRT_2PI - log_mass


def sample_truncnorm(rng: np.random.Generator, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """One draw from each N(mu_i, sigma_i) truncated to [0, 1], by rejection.

    A kernel centred inside [0, 1] keeps at least about ``0.4 / sigma`` of its mass there, so a
    few rounds accept every draw; the bounded loop ends on uniform draws in the (astronomically
    unlikely) case some remain.

    >>> x = sample_truncnorm(np.random.default_rng(0), np.zeros(1000), np.full(1000, 0.3))
    >>> bool(((x >= 0) & (x <= 1)).all()), bool(x.mean() < 0.5)
    (True, True)
    """
    mu, sigma = np.broadcast_arrays(np.asarray(mu, np.float64), np.asarray(sigma, np.float64))
    out = np.empty(mu.shape)
    todo = np.arange(mu.size)
    mu_f, sigma_f, out_f = mu.ravel(), sigma.ravel(), out.reshape(-1)
    for _ in range(200):
        if todo.size == 0:
            return out
        draw = rng.normal(mu_f[todo], sigma_f[todo])
        ok = (draw >= 0.0) & (draw <= 1.0)
        out_f[todo[ok]] = draw[ok]
        todo = todo[~ok]
    out_f[todo] = rng.random(todo.size)
    return out


def logsumexp(a: np.ndarray, axis: int, weights: np.ndarray | None = None) -> np.ndarray:
    """``log(sum(weights * exp(a), axis))``, stable when every term underflows."""
    peak = np.max(a, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    terms = np.exp(a - peak)
    if weights is not None:
        terms = terms * weights
    with np.errstate(divide="ignore"):
        return np.log(np.sum(terms, axis=axis)) + np.squeeze(peak, axis=axis)


def aitchison_aitken_logpmf(x: np.ndarray, centre: np.ndarray, lam: np.ndarray, n_choices: int) -> np.ndarray:
    """log of the Aitchison-Aitken kernel: ``1 - lam`` on ``centre``, ``lam / (c - 1)`` elsewhere.

    >>> round(float(np.exp(aitchison_aitken_logpmf(np.array(0.0), np.array(1.0), np.array(0.3), 4))), 12)
    0.1
    """
    if n_choices <= 1:
        return np.zeros(np.broadcast(x, centre, lam).shape)
    with np.errstate(divide="ignore"):
        return np.where(x == centre, np.log1p(-lam), np.log(lam / (n_choices - 1)))


class Layout:
    """What a density needs to know about a space's parameters, in ``space.params`` order.

    ``n_choices[d]`` is the number of categories of a categorical parameter and 0 for a numeric
    one; ``parents[d]``/``branches[d]`` say under which category of which earlier parameter
    parameter ``d`` is active (-1: always). Model searchers cannot model ``grid_search`` or
    ``sample_from`` parameters; ``searcher`` names the searcher in that error.
    """

    def __init__(self, space, searcher: str):
        self.space = space
        self.searcher = searcher
        self.domains = [p.domain for p in space.params]
        refused = [p.name for p in space.params if p.domain.kind in ("grid", "function")]
        if refused:
            raise ValueError(
                f"{searcher} models its parameters and cannot use grid_search or sample_from, found in "
                f"{refused}; use a distribution (uniform, loguniform, choice, ...) or the random/grid searcher")
        self.n_choices = np.array([d.n_choices if d.kind == "categorical" else 0 for d in self.domains], dtype=np.int64)
        self.parents = np.array([-1 if p.parent is None else p.parent for p in space.params], dtype=np.int64)
        self.branches = np.array([-1 if p.branch is None else p.branch for p in space.params], dtype=np.int64)
        self.dims = len(self.domains)

    def is_active(self, vectors: np.ndarray, d: int) -> np.ndarray:
        """Whether parameter ``d`` is active in each of ``vectors`` (rows; earlier columns filled in)."""
        parent = self.parents[d]
        if parent < 0:
            return np.ones(len(vectors), dtype=bool)
        return vectors[:, parent] == self.branches[d]  # nan (parent inactive) compares unequal

    def snap(self, values: np.ndarray, d: int) -> np.ndarray:
        """Unit values of numeric parameter ``d`` moved onto the values it can take (ints, quantised floats)."""
        domain = self.domains[d]
        return np.array([domain.to_unit(domain.from_unit(float(u))) for u in values], dtype=np.float64)

    def random_vector(self, rng: np.random.Generator) -> np.ndarray:
        """The encoding of a configuration drawn from the space's own distributions."""
        return self.space.to_vector(self.space.sample(rng=rng))


def check_setup(searcher: str, num_samples) -> None:
    """The common argument check of the model searchers' ``setup``."""
    if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                    or num_samples < 1):
        raise ValueError(f"{searcher}: num_samples must be a positive int or None (no limit), got {num_samples!r}")


def check_state(state, name: str, keys) -> None:
    """A clear error unless ``state`` is what searcher ``name``'s ``state_dict()`` returns."""
    if not isinstance(state, dict) or state.get("searcher") != name or not set(keys) <= set(state):
        raise ValueError(f"not a {name} searcher's state: expected a dict from its state_dict() with keys "
                         f"{sorted({'searcher', *keys})}, got {state!r:.200}")


def encode_vector(vector) -> list:
    """Floats as JSON-ready data: nan -> None, infinities -> "inf" / "-inf" (JSON has neither)."""
    return [None if math.isnan(v) else repr(float(v)) if math.isinf(v) else float(v) for v in vector]


def decode_vector(data: list) -> np.ndarray:
    """The inverse of :func:`encode_vector`."""
    return np.array([math.nan if v is None else float(v) for v in data], dtype=np.float64)


class UnivariateParzen:
    """TPE's Parzen estimator of one parameter: kernels on the observations plus a prior kernel.

    Numeric (``n_choices == 0``): truncated Gaussians on [0, 1] at the observations and one
    at 0.5 with width 1 (the prior, weight ``prior_weight``); each observation's width is the
    larger distance to its sorted neighbours (the bounds count as neighbours), clipped to
    ``[1 / min(100, 1 + n), 1]`` (Bergstra et al.'s "magic clip"). Categorical: a weighted
    histogram of the observations with ``prior_weight`` spread evenly over the categories.

    >>> p = UnivariateParzen(np.array([0.2, 0.25, 0.3]), np.ones(3), n_choices=0)
    >>> bool(p.log_pdf(np.array([0.25]))[0] > p.log_pdf(np.array([0.9]))[0])
    True
    >>> q = UnivariateParzen(np.array([1.0, 1.0]), np.ones(2), n_choices=3)
    >>> [round(float(v), 3) for v in np.exp(q.log_pdf(np.array([0.0, 1.0, 2.0])))]
    [0.111, 0.778, 0.111]
    """

    def __init__(self, values: np.ndarray, weights: np.ndarray, n_choices: int, prior_weight: float = 1.0):
        self.n_choices = int(n_choices)
        values = np.asarray(values, dtype=np.float64)
        weights = np.asarray(weights, dtype=np.float64)
        if self.n_choices:
            mass = np.full(self.n_choices, prior_weight / self.n_choices)
            np.add.at(mass, values.astype(np.int64), weights)
            self.log_probs = np.log(mass / mass.sum())
            return
        mus = np.append(values, 0.5)
        order = np.argsort(mus, kind="stable")
        ordered = mus[order]
        left = np.diff(ordered, prepend=0.0)
        right = np.diff(ordered, append=1.0)
        widths = np.empty_like(mus)
        widths[order] = np.maximum(left, right)
        widths = np.clip(widths, 1.0 / min(100.0, 1.0 + len(mus)), 1.0)
        widths[-1] = 1.0  # the prior
        mix = np.append(weights, prior_weight)
        self.mus, self.sigmas, self.log_weights = mus, widths, np.log(mix / mix.sum())
        self.log_mass = truncnorm_log_mass(mus, widths)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` draws (category indices as floats for a categorical parameter)."""
        if self.n_choices:
            return rng.choice(self.n_choices, size=size, p=np.exp(self.log_probs)).astype(np.float64)
        pick = rng.choice(len(self.mus), size=size, p=np.exp(self.log_weights))
        return sample_truncnorm(rng, self.mus[pick], self.sigmas[pick])

    def log_pdf(self, x: np.ndarray) -> np.ndarray:
        """log density (numeric) or log probability (categorical) at each of ``x``."""
        if self.n_choices:
            return self.log_probs[np.asarray(x).astype(np.int64)]
        comp = truncnorm_logpdf(x[:, None], self.mus[None, :], self.sigmas[None, :], self.log_mass[None, :])
        return logsumexp(comp + self.log_weights[None, :], axis=1)


def normal_reference_bandwidths(data: np.ndarray, n_choices: np.ndarray, min_bandwidth: float,
                                min_numeric_bandwidth: float = 0.0) -> np.ndarray:
    """Per-dimension bandwidths of a product kernel by the normal reference rule.

    Numeric dimension: ``1.06 * std * n ** (-1 / (4 + dims))`` over the points where it is
    active (Scott's rule as statsmodels' ``normal_reference`` writes it), at least
    ``max(min_bandwidth, min_numeric_bandwidth)``. Categorical dimension: the same rule with the category spread
    ``sqrt(1 - sum_k p_k**2)`` in place of the standard deviation (it does not depend on how the
    categories are numbered), clipped to ``[min_bandwidth, (c - 1) / c]`` (at the top the kernel
    is uniform). A dimension active in fewer than two points gets the widest bandwidth, 1 or
    ``(c - 1) / c``.

    >>> bw = normal_reference_bandwidths(np.array([[0.1, 0.0], [0.3, 0.0], [0.5, 0.0]]), np.array([0, 2]), 1e-3)
    >>> bool(0.1 < bw[0] < 0.2), float(bw[1])
    (True, 0.001)
    """
    n_dims = data.shape[1]
    out = np.empty(n_dims)
    for d in range(n_dims):
        column = data[:, d]
        column = column[~np.isnan(column)]
        c = int(n_choices[d])
        widest = (c - 1) / c if c else 1.0
        if len(column) < 2:
            out[d] = widest
            continue
        if c:
            p = np.bincount(column.astype(np.int64), minlength=c) / len(column)
            spread = math.sqrt(max(0.0, 1.0 - float(np.sum(p * p))) / 2)
        else:
            spread = float(np.std(column))
        bw = 1.06 * spread * len(column) ** (-1.0 / (4 + n_dims))
        out[d] = min(max(bw, min_bandwidth), widest) if c else max(bw, min_bandwidth, min_numeric_bandwidth)
    return out


class ProductKDE:
    """An equally weighted mixture of product kernels, one centred on each row of ``data``.

    ``data`` is (n, dims) in the space's encoding (nan: inactive), ``bandwidths`` one per
    dimension (Gaussian width for numeric, ``lam`` for categorical), ``n_choices`` 0 for numeric.
    """

    def __init__(self, data: np.ndarray, bandwidths: np.ndarray, n_choices):
        self.data = np.asarray(data, dtype=np.float64)
        self.bandwidths = np.asarray(bandwidths, dtype=np.float64)
        self.n_choices = np.asarray(n_choices, dtype=np.int64)
        self.log_mass = np.where(
            np.isnan(self.data), 0.0,
            truncnorm_log_mass(np.nan_to_num(self.data), self.bandwidths[None, :]))

    def log_pdf(self, points: np.ndarray) -> np.ndarray:
        """log density at each row of ``points`` (same encoding as ``data``)."""
        points = np.asarray(points, dtype=np.float64)
        total = np.zeros((len(points), len(self.data)))
        for d in range(self.data.shape[1]):
            x, centre = points[:, d][:, None], self.data[:, d][None, :]
            c = int(self.n_choices[d])
            if c:
                uniform = -math.log(c)
                term = aitchison_aitken_logpmf(x, centre, self.bandwidths[d], c)
            else:
                uniform = 0.0
                term = truncnorm_logpdf(x, centre, self.bandwidths[d], self.log_mass[:, d][None, :])
            term = np.where(np.isnan(centre), uniform, term)
            total += np.where(np.isnan(x), 0.0, term)
        return logsumexp(total, axis=1) - math.log(len(self.data))

    def sample(self, rng: np.random.Generator, size: int, layout: Layout, bandwidth_factor: float) -> np.ndarray:
        """``size`` points, each from the kernel of a random row with bandwidths times ``bandwidth_factor``.

        Dimensions are drawn in ``layout`` order, so a conditional one is drawn only where its
        parent took its branch; where the kernel's centre lacks it, it is drawn uniformly. A
        categorical dimension keeps the centre's category or, with probability
        ``lam * factor * c / (c - 1)``, takes a uniformly drawn one.
        """
        rows = rng.integers(len(self.data), size=size)
        out = np.full((size, layout.dims), np.nan)
        for d in range(layout.dims):
            active = layout.is_active(out, d)
            centre = self.data[rows, d]
            c = int(self.n_choices[d])
            known = ~np.isnan(centre)
            if c:  # exactly the Aitchison-Aitken kernel: the factor widens numeric kernels only
                switch = min(1.0, self.bandwidths[d] * c / max(c - 1, 1))
                fresh = rng.integers(c, size=size).astype(np.float64)
                drawn = np.where(known & (rng.random(size) >= switch), centre, fresh)
            else:
                sigma = self.bandwidths[d] * bandwidth_factor
                drawn = np.where(known, sample_truncnorm(rng, np.nan_to_num(centre), sigma), rng.random(size))
            out[:, d] = np.where(active, drawn, np.nan)
        return out
