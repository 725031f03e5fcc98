"""GridSearcher: every combination of a finite grid, each exactly once, then FINISHED.

The grid's axes: every ``grid_search`` value, every ``choice`` category (a conditional category contributes
the grid of the parameters inside it, so a branch's parameters vary only under that branch), every value of
an integer or quantized domain with at most ``points_per_axis`` values (at most 1,000 when
``points_per_axis`` is None), and, when ``points_per_axis`` is given, that many evenly spaced points
(log-spaced for log domains, both bounds included) of other numeric domains. A continuous domain without
``points_per_axis`` is an error. The last parameter varies fastest. ``num_samples`` does not repeat the grid.

>>> from ember import tune
>>> searcher = GridSearcher(points_per_axis=3)
>>> searcher.setup(tune.SearchSpace({"act": tune.choice(["relu", "tanh"]), "lr": tune.loguniform(1e-3, 1e-1)}),
...                metric="loss", mode="min")
>>> searcher.total
6
>>> [(c["act"], round(c["lr"], 4)) for c in (searcher.suggest(str(i)) for i in range(3))]
[('relu', 0.001), ('relu', 0.01), ('relu', 0.1)]
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ember import hookimpl

from ..domains import Integer
from ..space import SearchSpace
from .base import FINISHED, Searcher
from .random import _check_state

#: the most values of an integer or quantized domain enumerated when ``points_per_axis`` is None
MAX_DISCRETE_VALUES = 1000


class GridSearcher(Searcher):
    """Exhaustive grid search (see the module docstring); ``points_per_axis`` sets the points per numeric
    domain."""
    multi_objective = True  # it reads no metric

    def __init__(self, points_per_axis: int | None = None):
        if points_per_axis is not None and (isinstance(points_per_axis, bool) or not isinstance(points_per_axis, int)
                                            or points_per_axis < 1):
            raise ValueError(f"points_per_axis must be a positive int or None, got {points_per_axis!r}")
        self.points_per_axis = points_per_axis

    def setup(self, space, metric, mode, seed=None, num_samples=None):
        super().setup(space if isinstance(space, SearchSpace) else SearchSpace(space), metric, mode, seed,
                      num_samples)
        params = self.space.params
        self._axes = {p.index: self._axis(p) for p in params if p.kind not in ("categorical", "function")}
        self._children = {}
        for p in params:
            if p.kind != "function":
                self._children.setdefault((p.parent, p.branch), []).append(p.index)
        self._count_param = functools.lru_cache(maxsize=None)(self._count_param_uncached)
        #: the number of grid points: the configurations given before FINISHED
        self.total = self._count_group((None, None))
        self.position = 0

    def _axis(self, p) -> list:
        """The vector entries (unit positions; indices for grid_search) that make up ``p``'s axis."""
        domain, k = p.domain, self.points_per_axis
        if p.kind == "grid":
            return [float(i) for i in range(len(domain.categories))]
        size = domain.size
        if size is not None and size <= (MAX_DISCRETE_VALUES if k is None else k):
            return [domain.to_unit(v) for v in domain.values()]
        if k is None:
            what = "continuous" if size is None else f"has {size} values"
            raise ValueError(f"GridSearcher: parameter {p.name!r} ({domain!r}) {what}; give points_per_axis to "
                             f"grid it with that many evenly spaced points")
        units = [0.5] if k == 1 else np.linspace(0.0, 1.0, k).tolist()
        if isinstance(domain, Integer):  # the integers nearest to evenly spaced reals, both bounds included
            lo, hi = (math.log(domain.low), math.log(domain.high)) if domain.log else (domain.low, domain.high)
            reals = [lo + u * (hi - lo) for u in units]
            values = [round((math.exp(x) if domain.log else x) / domain.q) * domain.q for x in reals]
            values = [min(max(v, domain.values_range[0]), domain.values_range[1]) for v in values]
        else:
            values = [domain.from_unit(u) for u in units]
        return [domain.to_unit(v) for v in dict.fromkeys(values)]  # close points may round to one value

    def _count_group(self, key) -> int:
        count = 1
        for i in self._children.get(key, ()):
            count *= self._count_param(i)
        return count

    def _count_param_uncached(self, i) -> int:
        p = self.space.params[i]
        if p.kind == "categorical":
            return sum(self._count_group((i, b)) for b in range(p.domain.n_choices))
        return len(self._axes[i])

    def _fill(self, key, n, vec):
        """Write grid point ``n`` of the parameters in group ``key`` into ``vec`` (the last varies fastest)."""
        for i in reversed(self._children.get(key, ())):
            n, j = divmod(n, self._count_param(i))
            p = self.space.params[i]
            if p.kind != "categorical":
                vec[i] = self._axes[i][j]
                continue
            for b in range(p.domain.n_choices):
                size = self._count_group((i, b))
                if j < size:
                    vec[i] = b
                    self._fill((i, b), j, vec)
                    break
                j -= size

    def point(self, n: int) -> dict:
        """Grid point ``n`` (0 <= n < :attr:`total`) as a configuration."""
        if not 0 <= n < self.total:
            raise IndexError(f"grid point {n} out of range: the grid has {self.total} points")
        vec = np.full(len(self.space.params), np.nan)
        self._fill((None, None), n, vec)
        return self.space.from_vector(vec)

    def suggest(self, trial_id):
        if self.position >= self.total:
            return FINISHED
        self.position += 1
        return self.point(self.position - 1)

    def state_dict(self):
        return {"searcher": "grid", "position": self.position, **super().state_dict()}

    def load_state_dict(self, state):
        _check_state(state, "grid", ("position", "rng"))
        super().load_state_dict(state)
        self.position = int(state["position"])


@hookimpl
def ember_tune_searchers():
    return {"grid": GridSearcher}
