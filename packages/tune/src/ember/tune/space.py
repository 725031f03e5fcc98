"""Search spaces: nested configurations whose leaves are domains, with conditional parameters.

A ``param_space`` is a dict (nested dicts and lists allowed) whose leaves are either plain values, kept as
they are, or domains (:func:`uniform`, :func:`choice`, ...). A :func:`choice` whose categories are dicts
holding domains makes *conditional* parameters: the domains inside a category exist only when that category
is chosen. :class:`SearchSpace` lists the parameters, samples configurations, and maps them to and from
vectors (one coordinate per parameter, ``nan`` where a parameter is inactive) for model-based searchers.

>>> space = SearchSpace({
...     "lr": loguniform(1e-4, 1e-1),
...     "optim": choice([{"name": "sgd", "momentum": uniform(0, 0.99)},
...                      {"name": "adam", "beta1": uniform(0.8, 0.999)}]),
...     "epochs": 10})
>>> [p.name for p in space.params]
['lr', 'optim', 'optim/0/momentum', 'optim/1/beta1']
>>> config = space.sample(seed=0)
>>> sorted(config), sorted(config["optim"])
(['epochs', 'lr', 'optim'], ['beta1', 'name'])
>>> vec = space.to_vector(config)
>>> vec.round(3).tolist(), space.active(vec).tolist()
([0.637, 1.0, nan, 0.041], [True, True, False, True])
>>> space.from_vector(vec) == config
True
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping

import numpy as np

from .domains import (
    CONSTRUCTORS,
    Categorical,
    Domain,
    Float,
    Function,
    Grid,
    Integer,
    _as_rng,
    _safe_eq,
    choice,
    grid_search,
    lograndint,
    loguniform,
    qloguniform,
    qrandint,
    quniform,
    randint,
    sample_from,
    uniform,
)

__all__ = ["Domain", "Float", "Integer", "Categorical", "Grid", "Function", "Param", "SearchSpace",
           "uniform", "loguniform", "quniform", "qloguniform", "randint", "lograndint", "qrandint", "choice",
           "grid_search", "sample_from"]

#: the JSON key that marks a domain (or a tuple) in :meth:`SearchSpace.to_json`
_TAG = "__domain__"


class Param:
    """One hyperparameter of a :class:`SearchSpace`.

    ``name`` joins the path with "/", adding the category index under a conditional choice
    ("optim/0/momentum"), so names are unique; ``path`` is the tuple of keys and list indices that reaches the
    value inside a configuration (``("optim", "momentum")``); ``parent`` is the index in ``space.params`` of
    the choice the parameter depends on and ``branch`` the category index of that choice under which it is
    active (both None for an unconditional parameter).
    """

    __slots__ = ("name", "path", "domain", "parent", "branch", "index")

    def __init__(self, name, path, domain, parent, branch, index):
        self.name, self.path, self.domain, self.parent, self.branch, self.index = (
            name, path, domain, parent, branch, index)

    @property
    def kind(self) -> str:
        return self.domain.kind

    def __repr__(self):
        cond = "" if self.parent is None else f", active when param {self.parent} is category {self.branch}"
        return f"Param({self.name!r}, {self.domain!r}{cond})"


def _has_domain(value) -> bool:
    if isinstance(value, Domain):
        return True
    if isinstance(value, Mapping):
        return any(_has_domain(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_domain(v) for v in value)
    return False


class SearchSpace:
    """The parameters of ``param_space`` in a fixed order (depth first, dict insertion order), with sampling
    and the vector form model-based searchers use.

    Vectors (``to_vector``) have one float64 entry per parameter in :attr:`params`: ``to_unit(value)`` for a
    numeric parameter (in [0, 1]), the category index for a choice or grid_search, ``nan`` for a parameter
    that is inactive (in a branch not chosen) and for ``sample_from`` parameters, which are computed from the
    rest of the configuration rather than chosen.

    >>> space = SearchSpace({"x": grid_search([1, 2]), "y": grid_search(["a", "b", "c"]), "z": randint(0, 5)})
    >>> space.grid_size(), space.grid_point(4)
    (6, {'x': 2, 'y': 'b'})
    >>> space.sample(seed=1, fixed=space.grid_point(4))["y"]
    'b'
    """

    def __init__(self, param_space: Mapping):
        if isinstance(param_space, SearchSpace):
            param_space = param_space.param_space
        if not isinstance(param_space, Mapping):
            raise TypeError(f"param_space must be a dict of parameter names to values or domains, "
                            f"got {type(param_space).__name__}")
        self.param_space = param_space
        self.params: list[Param] = []
        self._choices = {}  # param index -> its ("choice", ...) node
        self._tree = self._compile(param_space, (), (), None, None, False)
        self._by_name = {p.name: p for p in self.params}
        self._grid = [p for p in self.params if p.kind == "grid"]
        self._functions = [p for p in self.params if p.kind == "function"]

    # ----------------------------------------------------------------------------------------------------------
    # the tree: ("param", i) | ("choice", i, [branch nodes]) | ("dict", [(key, node)]) | ("list", [nodes], tuple?)
    # | ("const", value)
    def _compile(self, value, path, name, parent, branch, in_tuple):
        if isinstance(value, Domain):
            index = len(self.params)
            label = "/".join(map(str, name)) or "<root>"
            if value.kind == "grid" and parent is not None:
                raise ValueError(f"grid_search at {label!r} lies inside a choice category: grid_search parameters "
                                 f"must be unconditional")
            if isinstance(value, Grid) and _has_domain(value.categories):
                raise ValueError(f"grid_search at {label!r}: its values must be plain values, not domains")
            if value.kind == "function" and in_tuple:
                raise ValueError(f"sample_from at {label!r} lies inside a tuple; use a list there")
            self.params.append(Param(label, path, value, parent, branch, index))
            if value.kind == "categorical":
                node = ("choice", index, [self._compile(c, path, name + (i,), index, i, in_tuple)
                                          for i, c in enumerate(value.categories)])
                self._choices[index] = node
                return node
            return ("param", index)
        if isinstance(value, Mapping):
            return ("dict", [(k, self._compile(v, path + (k,), name + (k,), parent, branch, in_tuple))
                             for k, v in value.items()])
        if isinstance(value, (list, tuple)):  # rebuilt per configuration, so configurations share no list
            is_tuple = isinstance(value, tuple)
            return ("list", [self._compile(v, path + (i,), name + (i,), parent, branch, in_tuple or is_tuple)
                             for i, v in enumerate(value)], is_tuple)
        return ("const", value)

    def _build(self, node, pick, values):
        """The configuration under ``node``; ``pick(i)`` gives parameter i's raw value (a category index for
        choice and grid_search), recorded in ``values``."""
        tag = node[0]
        if tag == "const":
            return node[1]
        if tag == "dict":
            return {k: self._build(child, pick, values) for k, child in node[1]}
        if tag == "list":
            items = [self._build(child, pick, values) for child in node[1]]
            return tuple(items) if node[2] else items
        index = node[1]
        domain = self.params[index].domain
        if domain.kind == "function":
            return None  # filled in by _apply_functions once the rest is known
        values[index] = raw = pick(index)
        if tag == "choice":
            return self._build(node[2][raw], pick, values)
        return domain.categories[raw] if domain.kind == "grid" else raw

    def _apply_functions(self, config, values):
        for p in self._functions:
            if self._is_active(p, values):
                value = p.domain.fn(config)
                target = config
                for key in p.path[:-1]:
                    target = target[key]
                target[p.path[-1]] = value

    def _is_active(self, p, values) -> bool:
        while p.parent is not None:
            if values[p.parent] != p.branch:
                return False
            p = self.params[p.parent]
        return True

    # ----------------------------------------------------------------------------------------------------------
    def __len__(self):
        return len(self.params)

    def __repr__(self):
        return f"SearchSpace({len(self.params)} params: {', '.join(p.name for p in self.params)})"

    def param(self, name: str) -> Param:
        """The parameter called ``name`` (see :attr:`Param.name`)."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no parameter {name!r} in the search space; parameters: "
                           f"{[p.name for p in self.params]}") from None

    def sample(self, rng=None, seed=None, fixed: Mapping | None = None) -> dict:
        """A random configuration (a nested dict, the constants included).

        ``rng`` is a ``numpy.random.Generator`` (or None: a new one from ``seed``). ``fixed`` maps parameter
        names to values used instead of sampling (e.g. a :meth:`grid_point`). A grid_search parameter that is
        not fixed is drawn uniformly from its values. ``sample_from`` functions run last, in parameter order,
        each seeing the configuration drawn so far (a function's own slot reads None until it has run).
        """
        if rng is not None and seed is not None:
            raise ValueError("give either rng or seed, not both")
        rng = _as_rng(seed if rng is None else rng)
        fixed_raw = {}
        for name, value in (fixed or {}).items():
            p = self.param(name)
            if p.kind in ("categorical", "grid"):
                fixed_raw[p.index] = self._category_index(p, value)
            elif p.kind == "function" or p.domain.contains(value):
                fixed_raw[p.index] = value
            else:
                raise ValueError(f"fixed value {value!r} for {name!r} is outside its domain {p.domain!r}")

        def pick(i):
            if i in fixed_raw:
                return fixed_raw[i]
            domain = self.params[i].domain
            if domain.kind in ("categorical", "grid"):
                return int(rng.integers(len(domain.categories)))
            return domain.sample(rng)

        values = [None] * len(self.params)
        config = self._build(self._tree, pick, values)
        self._apply_functions(config, values)
        return config

    # ----------------------------------------------------------------------------------------------------------
    # vectors
    def _category_index(self, p, value) -> int:
        """The category of choice/grid parameter ``p`` that ``value`` (a configuration's value) came from."""
        categories = p.domain.categories
        try:
            return p.domain.index(value)
        except ValueError:
            pass
        if p.kind == "categorical":
            branches = self._choices[p.index][2]
            for strict in (True, False):
                for i, node in enumerate(branches):
                    if self._matches(node, value, strict):
                        return i
        raise ValueError(f"{value!r} for parameter {p.name!r} matches none of its categories {categories!r}")

    def _matches(self, node, value, strict) -> bool:
        """Whether ``value`` has the shape and constants of the category ``node``, with values in the domains."""
        tag = node[0]
        if tag == "const":
            return (type(value) is type(node[1]) or not strict) and _safe_eq(node[1], value)
        if tag == "dict":
            return (isinstance(value, Mapping) and len(value) == len(node[1])
                    and all(k in value and self._matches(child, value[k], strict) for k, child in node[1]))
        if tag == "list":
            return (isinstance(value, (list, tuple)) and len(value) == len(node[1])
                    and all(self._matches(child, v, strict) for child, v in zip(node[1], value)))
        domain = self.params[node[1]].domain
        if tag == "choice":
            return any(self._matches(child, value, strict) for child in node[2])
        return domain.contains(value)

    def _read(self, node, value, values, where):
        """Record the raw value of every active parameter under ``node`` from configuration part ``value``."""
        tag = node[0]
        if tag == "const":
            return
        if tag == "dict":
            if not isinstance(value, Mapping):
                raise ValueError(f"expected a dict at {where or 'the top level'!r}, got {value!r}")
            for k, child in node[1]:
                if child[0] == "const":
                    continue
                if k not in value:
                    raise ValueError(f"the configuration has no {'/'.join(map(str, where + (k,)))!r}, which the "
                                     f"search space defines")
                self._read(child, value[k], values, where + (k,))
            return
        if tag == "list":
            if not isinstance(value, (list, tuple)) or len(value) != len(node[1]):
                raise ValueError(f"expected a sequence of {len(node[1])} items at {'/'.join(map(str, where))!r}, "
                                 f"got {value!r}")
            for i, (child, v) in enumerate(zip(node[1], value)):
                self._read(child, v, values, where + (i,))
            return
        p = self.params[node[1]]
        if p.kind == "function":
            return
        if p.kind in ("categorical", "grid"):
            values[p.index] = raw = self._category_index(p, value)
            if tag == "choice":
                self._read(node[2][raw], value, values, where)
            return
        if not p.domain.contains(value):
            raise ValueError(f"{value!r} for parameter {p.name!r} is outside its domain {p.domain!r}")
        values[p.index] = value

    def to_vector(self, config: Mapping) -> np.ndarray:
        """``config`` as a float64 vector, one entry per parameter (see the class docstring)."""
        values = [None] * len(self.params)
        self._read(self._tree, config, values, ())
        vec = np.full(len(self.params), np.nan)
        for p, raw in zip(self.params, values):
            if raw is not None:
                vec[p.index] = float(raw) if p.kind in ("categorical", "grid") else p.domain.to_unit(raw)
        return vec

    def _check_vector(self, vec) -> np.ndarray:
        vec = np.asarray(vec, dtype=np.float64)
        if vec.shape != (len(self.params),):
            raise ValueError(f"expected a vector of {len(self.params)} entries (one per parameter), "
                             f"got shape {vec.shape}")
        return vec

    def from_vector(self, vec) -> dict:
        """The configuration a vector stands for (inactive entries are ignored; categorical entries are rounded
        and numeric ones clipped to [0, 1]). ``sample_from`` parameters are computed by their functions."""
        vec = self._check_vector(vec)

        def pick(i):
            if math.isnan(vec[i]):
                raise ValueError(f"vector entry {i} ({self.params[i].name!r}) is nan, but the parameter is active")
            return self._from_entry(self.params[i], vec[i])

        values = [None] * len(self.params)
        config = self._build(self._tree, pick, values)
        self._apply_functions(config, values)
        return config

    @staticmethod
    def _from_entry(p, u):
        """Parameter ``p``'s raw value for vector entry ``u``: a rounded, clipped index or ``from_unit(u)``."""
        if p.kind in ("categorical", "grid"):
            return min(max(int(round(u)), 0), len(p.domain.categories) - 1)
        return p.domain.from_unit(u)

    def active(self, vec) -> np.ndarray:
        """Boolean mask of the parameters active under the choices made in ``vec`` (False for sample_from)."""
        vec = self._check_vector(vec)
        values = [None if math.isnan(u) or p.kind != "categorical" else self._from_entry(p, u)
                  for p, u in zip(self.params, vec)]
        return np.array([p.kind != "function" and self._is_active(p, values) for p in self.params], dtype=bool)

    # ----------------------------------------------------------------------------------------------------------
    # grid
    @property
    def grid_params(self) -> list[Param]:
        """The grid_search parameters, in order."""
        return list(self._grid)

    def grid_size(self) -> int:
        """The number of grid points: the product of the grid_search lengths (1 without grid_search)."""
        return math.prod(len(p.domain.categories) for p in self._grid)

    def grid_point(self, i: int) -> dict:
        """``{name: value}`` of the grid_search parameters at grid point ``i`` (the last one varies fastest)."""
        n = self.grid_size()
        if not isinstance(i, (int, np.integer)) or not 0 <= i < n:
            raise IndexError(f"grid point {i!r} out of range: the grid has {n} points")
        point = {}
        for p in reversed(self._grid):
            i, j = divmod(int(i), len(p.domain.categories))
            point[p.name] = p.domain.categories[j]
        return dict(reversed(point.items()))

    def grid_points(self):
        """Every grid point in order (see :meth:`grid_point`)."""
        return (self.grid_point(i) for i in range(self.grid_size()))

    # ----------------------------------------------------------------------------------------------------------
    # JSON
    def to_json(self) -> dict:
        """The param_space as JSON-serialisable data (domains included); :meth:`from_json` rebuilds it.

        A ``sample_from`` function, a non-string dict key or a value JSON cannot hold is a TypeError.

        >>> space = SearchSpace({"lr": loguniform(1e-4, 1e-1), "act": choice(["relu", "tanh"])})
        >>> SearchSpace.from_json(json.loads(json.dumps(space.to_json()))).to_json() == space.to_json()
        True
        """
        return {"param_space": _encode(self.param_space, "")}

    @classmethod
    def from_json(cls, data) -> SearchSpace:
        """The search space :meth:`to_json` wrote (a dict, or its JSON text)."""
        if isinstance(data, (str, bytes)):
            data = json.loads(data)
        if not isinstance(data, Mapping) or "param_space" not in data:
            raise ValueError("expected the output of SearchSpace.to_json(): a dict with a 'param_space' entry")
        return cls(_decode(data["param_space"]))


def _encode(value, where):
    if isinstance(value, Domain):
        data = value.to_json()
        name = data.pop("domain")
        return {_TAG: name, **{k: _encode(v, where) for k, v in data.items()}}
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"cannot write {where + '/' + str(k)!r} as JSON: dict keys must be strings, "
                                f"got {k!r}")
            if k == _TAG:
                raise TypeError(f"cannot write {where!r} as JSON: the key {_TAG!r} is reserved")
            out[k] = _encode(v, f"{where}/{k}")
        return out
    if isinstance(value, tuple):
        return {_TAG: "tuple", "items": [_encode(v, f"{where}/{i}") for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, f"{where}/{i}") for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    raise TypeError(f"cannot write {where or 'the value'!r} as JSON: {type(value).__name__} {value!r} has no "
                    f"JSON form")


def _decode(value):
    if isinstance(value, Mapping):
        if _TAG in value:
            name = value[_TAG]
            if name == "tuple":
                return tuple(_decode(v) for v in value["items"])
            if name not in CONSTRUCTORS:
                raise ValueError(f"unknown domain {name!r} in the JSON; known: {sorted(CONSTRUCTORS)}")
            args = {k: (_decode(v) if k in ("categories", "values") else v) for k, v in value.items() if k != _TAG}
            return CONSTRUCTORS[name](**args)
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value
