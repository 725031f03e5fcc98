"""What lets a searcher, scheduler, executor or stopper be written into an experiment's specification as JSON
(:mod:`ember.tune.spec`): the arguments it was built with, and whether a value reads back from JSON as itself.

>>> plain_json({"lr": [0.1, 1e-3], "name": "sgd"}), plain_json((1, 2)), plain_json(float("nan"))
(True, False, False)
"""
from __future__ import annotations

import math


class Buildable:
    """Remembers the arguments an instance was built with, so it can be written as ``name`` + arguments."""

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        self._build_args = (args, kwargs)
        return self


def plain_json(value) -> bool:
    """Whether ``value`` reads back from JSON as itself (no tuples, functions, objects, non-string keys)."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(plain_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain_json(v) for k, v in value.items())
    return False
