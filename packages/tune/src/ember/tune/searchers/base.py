"""The searcher interface: propose configurations, learn from results.

A searcher is four methods (plus :meth:`setup`, called once by the experiment):
:meth:`suggest`, :meth:`on_result`, :meth:`on_complete`, and
:meth:`state_dict` / :meth:`load_state_dict` so a resumed experiment continues
where it stopped. Like schedulers, searchers compare losses (lower is better; ``mode="max"``
flips the metric's sign, see :mod:`ember.tune._objective`).

>>> from ember.tune import SearchSpace, uniform
>>> from ember.tune.searchers.base import Searcher
>>> class Always(Searcher):
...     def suggest(self, trial_id):
...         return {"x": 0.5}
>>> s = Always()
>>> s.setup(SearchSpace({"x": uniform(0, 1)}), metric="loss", mode="min", seed=0)
>>> s.suggest("t0")
{'x': 0.5}
"""
from __future__ import annotations

import numpy as np

from .._buildable import Buildable
from .._objective import loss, objectives

#: what :meth:`Searcher.suggest` returns when it will never propose another configuration
FINISHED = "FINISHED"


class Searcher(Buildable):
    """Base class of searchers. Subclasses implement :meth:`suggest`; the rest have sensible defaults.

    ``result`` dicts carry the metric, ``training_iteration`` (1, 2, ... per report of a trial:
    the budget a multi-fidelity searcher such as BOHB models) and whatever else the trial reported.
    """

    #: True for a searcher that handles several objectives (``metric`` a list); the others refuse them
    multi_objective = False

    def setup(self, space, metric: str, mode: str, seed: int | None = None, num_samples: int | None = None) -> None:
        """Called once by the experiment before the first :meth:`suggest`.

        ``space`` is an :class:`ember.tune.SearchSpace`; ``mode`` is "min" or "max" (with several objectives,
        ``metric`` and ``mode`` are lists; :attr:`metrics` and :attr:`modes` are lists in both cases);
        ``num_samples`` is the experiment's ``num_samples`` (for the random searcher: per grid point;
        None: no limit). A searcher says :data:`FINISHED` when it has nothing more to propose. A searcher
        that knows how many configurations it gives sets ``self.total`` (an int) here; the experiment then
        leaves the stopping to it (others are capped at ``num_samples`` times the grid size).
        """
        #: the objectives as lists (one entry each for a single objective)
        self.metrics, self.modes = objectives(metric, mode, type(self).__name__)
        if len(self.metrics) > 1 and not self.multi_objective:
            raise ValueError(f"{type(self).__name__} optimises one metric, but the experiment has several "
                             f"objectives {self.metrics}: use a multi-objective searcher (\"nsga2\", \"tpe\") or "
                             "random or grid search")
        self.space, self.metric, self.mode, self.seed, self.num_samples = space, metric, mode, seed, num_samples
        self.rng = np.random.default_rng(seed)

    def suggest(self, trial_id: str):
        """A configuration (nested dict) for a new trial ``trial_id``, None if none can be given right now
        (ask again after more results), or :data:`FINISHED` if none will ever come."""
        raise NotImplementedError

    def on_result(self, trial_id: str, result: dict) -> None:
        """An intermediate result of a running trial."""

    def on_complete(self, trial_id: str, result: dict | None, error: bool = False) -> None:
        """The trial ended (finished, was stopped early, or errored); ``result`` is its last result, if any."""

    def loss(self, result: dict) -> float:
        """The metric of ``result`` as a value to minimise (the sign convention of searchers and schedulers)."""
        return loss(result, self.metric, self.mode)

    def state_dict(self) -> dict:
        """Everything needed to continue, as JSON-serialisable data (the RNG state included)."""
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned (after :meth:`setup`)."""
        self.rng.bit_generator.state = state["rng"]
