"""RandomSearcher, the default searcher: independent random configurations, with grid_search expanded.

Like Ray Tune's default, every grid point (combination of ``grid_search`` values) is run ``num_samples``
times, the other parameters drawn afresh each time: a run has ``grid_size * num_samples`` trials, then
:data:`FINISHED`. The grid is walked whole, ``num_samples`` times over, so the first ``grid_size`` trials
already cover it. Without ``num_samples`` (None) it never finishes.

>>> from ember import tune
>>> searcher = RandomSearcher()
>>> searcher.setup(tune.SearchSpace({"bs": tune.grid_search([32, 64]), "lr": tune.loguniform(1e-4, 1e-1)}),
...                metric="loss", mode="min", seed=0, num_samples=2)
>>> [searcher.suggest(str(i))["bs"] for i in range(4)], searcher.suggest("4")
([32, 64, 32, 64], 'FINISHED')
"""
from __future__ import annotations

from ember import hookimpl

from ..space import SearchSpace
from .base import FINISHED, Searcher


def _check_state(state, name, keys):
    if not isinstance(state, dict) or state.get("searcher") != name or not set(keys) <= set(state):
        raise ValueError(f"not a {name} searcher's state: expected a dict from its state_dict() with keys "
                         f"{sorted({'searcher', *keys})}, got {state!r:.200}")


class RandomSearcher(Searcher):
    """Random search: each configuration drawn independently (conditional parameters and ``sample_from``
    included); grid_search parameters take every grid point in turn (see the module docstring)."""
    multi_objective = True  # it reads no metric

    def setup(self, space, metric, mode, seed=None, num_samples=None):
        super().setup(space if isinstance(space, SearchSpace) else SearchSpace(space), metric, mode, seed,
                      num_samples)
        if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                        or num_samples < 1):
            raise ValueError(f"num_samples must be a positive int or None (no limit), got {num_samples!r}")
        self.grid_size = self.space.grid_size()
        #: how many configurations the searcher gives before FINISHED (None: no end)
        self.total = None if num_samples is None else self.grid_size * num_samples
        self.count = 0

    def suggest(self, trial_id):
        if self.total is not None and self.count >= self.total:
            return FINISHED
        point = self.space.grid_point(self.count % self.grid_size)  # {} without grid_search
        self.count += 1
        return self.space.sample(self.rng, fixed=point)

    def state_dict(self):
        return {"searcher": "random", "count": self.count, **super().state_dict()}

    def load_state_dict(self, state):
        _check_state(state, "random", ("count", "rng"))
        super().load_state_dict(state)
        self.count = int(state["count"])


@hookimpl
def ember_tune_searchers():
    return {"random": RandomSearcher}
