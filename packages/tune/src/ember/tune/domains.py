"""The domains a search space is made of: how one hyperparameter is sampled and mapped to the unit interval.

Each domain has a ``kind`` ("float", "int", "categorical", or "grid" and "function" for
:func:`grid_search` and :func:`sample_from`), samples with a NumPy ``Generator``, and (numeric and
categorical ones) maps values to and from one number: ``to_unit(value)`` is in [0, 1] for numeric
domains (after the log transform of log domains) and the category index for categorical ones;
``from_unit`` is its inverse, rounding for quantized and integer domains. These are the coordinates
model-based searchers (TPE, BOHB) work in. The constructors are re-exported by :mod:`ember.tune.space`.

>>> import numpy as np
>>> d = loguniform(1e-4, 1e-1)
>>> d.kind, d.log
('float', True)
>>> round(d.to_unit(1e-2), 6), round(d.from_unit(0.5), 6)
(0.666667, 0.003162)
>>> randint(0, 3).sample(np.random.default_rng(0)) in {0, 1, 2}
True
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

import numpy as np

#: how many distinct values a numeric domain may have and still count as small (see :attr:`Domain.size`)
_MAX_SIZE = 10**9


def _as_rng(rng):
    """A ``np.random.Generator`` from a Generator, a seed or None."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, numbers.Integral):
        return np.random.default_rng(rng)
    raise TypeError(f"rng must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}")


def _real(name, value, domain):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{domain}: {name} must be a finite number, got {value!r}")
    return value


def _safe_eq(a, b) -> bool:
    """``a == b`` as a bool; False where the comparison is ambiguous (arrays) or fails."""
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001  (e.g. numpy arrays of different shapes)
        return False


def find_index(options, value, what="categories") -> int:
    """Index of ``value`` in ``options``: the same object first, then an equal one of the same type, then any
    equal one (so ``True`` finds ``True`` before ``1``). A ValueError names the options when none matches."""
    for i, option in enumerate(options):
        if option is value:
            return i
    for i, option in enumerate(options):
        if type(option) is type(value) and _safe_eq(option, value):
            return i
    for i, option in enumerate(options):
        if _safe_eq(option, value):
            return i
    raise ValueError(f"{value!r} is not one of the {what} {list(options)!r}")


class Domain:
    """Base class of the domains. Subclasses set ``kind`` and implement :meth:`sample`."""

    kind = ""
    #: whether ``to_unit`` works on the logarithm of the value
    log = False

    def sample(self, rng=None):
        """One random value; ``rng`` is a ``numpy.random.Generator``, an int seed or None."""
        raise NotImplementedError

    def contains(self, value) -> bool:
        """Whether ``value`` is a value this domain can produce."""
        raise NotImplementedError

    @property
    def size(self):
        """The number of distinct values, or None for a continuous domain (or one too large to count)."""
        return None

    def to_json(self) -> dict:
        """The domain as JSON-serialisable data (the constructor's name and arguments)."""
        raise TypeError(f"{self!r} cannot be written as JSON")

    def __eq__(self, other):
        return type(self) is type(other) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))


class Float(Domain):
    """A real number in ``[low, high]``, uniform or log-uniform, optionally rounded to a multiple of ``q``.

    Rounding (as Ray does) makes the end points half as likely as the values between them.

    >>> quniform(0, 1, 0.25).from_unit(0.6)
    0.5
    """

    kind = "float"

    def __init__(self, low, high, *, log=False, base=10, q=None, _name=None):
        self._name = _name or ("q" if q is not None else "") + ("loguniform" if log else "uniform")
        self.low, self.high = _real("low", low, _name), _real("high", high, _name)
        if not low < high:
            raise ValueError(f"{_name}: low must be below high, got low={low!r}, high={high!r}")
        self.log, self.base, self.q = bool(log), base, q
        if self.log:
            if low <= 0:
                raise ValueError(f"{_name}: bounds must be positive for a log scale, got low={low!r}")
            _real("base", base, _name)
            if base <= 0 or base == 1:
                raise ValueError(f"{_name}: base must be positive and not 1, got {base!r}")
            self._a, self._b = math.log(low), math.log(high)
        else:
            self._a, self._b = float(low), float(high)
        if q is not None:
            _real("q", q, _name)
            if q <= 0:
                raise ValueError(f"{_name}: q must be positive, got {q!r}")
            self._kmin, self._kmax = math.ceil(low / q - 1e-9), math.floor(high / q + 1e-9)
            if self._kmin > self._kmax:
                raise ValueError(f"{_name}: no multiple of q={q!r} lies in [{low!r}, {high!r}]")

    def _quantize(self, x):
        if self.q is None:
            return float(min(max(x, self.low), self.high))
        k = min(max(round(x / self.q), self._kmin), self._kmax)
        # 15 significant digits: 0.30000000000000004 (3 * 0.1) becomes 0.3
        return float(min(max(float(f"{k * self.q:.15g}"), self.low), self.high))

    def sample(self, rng=None):
        return self.from_unit(_as_rng(rng).random())

    def to_unit(self, value) -> float:
        """``value``'s position in ``[low, high]`` as a number in [0, 1] (on the log scale if ``log``)."""
        x = float(value)
        if self.log:
            if x <= 0:
                raise ValueError(f"{self!r}: value must be positive, got {value!r}")
            x = math.log(x)
        return min(max((x - self._a) / (self._b - self._a), 0.0), 1.0)

    def from_unit(self, u) -> float:
        """The value at position ``u`` in [0, 1] (clipped), rounded to a multiple of ``q`` if given."""
        u = min(max(float(u), 0.0), 1.0)
        x = self._a + u * (self._b - self._a)
        return self._quantize(math.exp(x) if self.log else x)

    def contains(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not self.low <= value <= self.high:
            return False
        return self.q is None or abs(value / self.q - round(value / self.q)) < 1e-6

    @property
    def size(self):
        if self.q is None:
            return None
        n = self._kmax - self._kmin + 1
        return n if n <= _MAX_SIZE else None

    def values(self) -> list:
        """Every value of a quantized domain, in increasing order (for grids; use only when :attr:`size` is
        small). A continuous domain has no such list: ValueError."""
        if self.q is None:
            raise ValueError(f"{self!r} is continuous: it has no finite list of values")
        return list(dict.fromkeys(self._quantize(k * self.q) for k in range(self._kmin, self._kmax + 1)))

    def to_json(self):
        data = {"domain": self._name, "low": self.low, "high": self.high}
        if self._name in ("loguniform", "qloguniform"):
            data["base"] = self.base
        if self.q is not None:
            data["q"] = self.q
        return data

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.to_json().items() if k != "domain")
        return f"{self._name}({args})"


class Integer(Domain):
    """An integer from ``low`` to ``high`` (both included here), uniform or log-uniform, in steps of multiples
    of ``q``. ``from_unit`` maps a uniform ``u`` to uniformly distributed values (log-uniformly for ``log``).

    >>> d = randint(0, 4)
    >>> [d.from_unit(u) for u in (0.0, 0.3, 0.6, 0.99)]
    [0, 1, 2, 3]
    """

    kind = "int"

    def __init__(self, low, high, *, log=False, base=10, q=1, _name=None, _args=None):
        _name = _name or ("lograndint" if log else "qrandint")
        for name, v in (("low", low), ("high", high), ("q", q)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ValueError(f"{_name}: {name} must be an integer, got {v!r}")
        if _args is None:  # the arguments of the public constructor that makes this domain
            _args = {"low": low, "high": high + 1, "base": base} if log else {"low": low, "high": high, "q": q}
        self._name, self._args = _name, _args
        self.low, self.high, self.q, self.log, self.base = int(low), int(high), int(q), bool(log), base
        if self.q <= 0:
            raise ValueError(f"{_name}: q must be positive, got {q!r}")
        if self.log and self.q != 1:
            raise ValueError(f"{_name}: a log-scale integer domain takes no q, got q={q!r}")
        if self.low > self.high:
            raise ValueError(f"{_name}: the range is empty ({_args_text(self._args)})")
        self._kmin, self._kmax = -(-self.low // self.q), self.high // self.q
        if self._kmin > self._kmax:
            raise ValueError(f"{_name}: no multiple of q={q!r} lies in [{low!r}, {high!r}]")
        self.n = self._kmax - self._kmin + 1
        if self.log:
            if self.low <= 0:
                raise ValueError(f"{_name}: bounds must be positive for a log scale, got low={low!r}")
            _real("base", base, _name)
            if base <= 0 or base == 1:
                raise ValueError(f"{_name}: base must be positive and not 1, got {base!r}")
            # integer k covers [k, k + 1) of a log-uniform real on [low, high + 1)
            self._a, self._b = math.log(self.low), math.log(self.high + 1)

    def sample(self, rng=None):
        rng = _as_rng(rng)
        if self.log:
            return self.from_unit(rng.random())
        return (self._kmin + int(rng.integers(self.n))) * self.q

    def to_unit(self, value) -> float:
        """The centre of ``value``'s share of [0, 1] (so ``from_unit`` gives ``value`` back)."""
        if not self.contains(value):
            raise ValueError(f"{self!r}: {value!r} is not one of its values")
        v = int(value)
        if self.log:
            return (0.5 * (math.log(v) + math.log(v + 1)) - self._a) / (self._b - self._a)
        return (v // self.q - self._kmin + 0.5) / self.n

    def from_unit(self, u) -> int:
        """The value whose share of [0, 1] contains ``u`` (clipped to [0, 1])."""
        u = min(max(float(u), 0.0), 1.0)
        if self.log:
            v = math.floor(math.exp(self._a + u * (self._b - self._a)))
            return min(max(v, self.low), self.high)
        return (self._kmin + min(int(u * self.n), self.n - 1)) * self.q

    def contains(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            if not (isinstance(value, numbers.Real) and float(value).is_integer()):
                return False
        v = int(value)
        return self.low <= v <= self.high and v % self.q == 0

    @property
    def size(self):
        return self.n if self.n <= _MAX_SIZE else None

    @property
    def values_range(self) -> tuple:
        """The smallest and the largest value."""
        return self._kmin * self.q, self._kmax * self.q

    def values(self) -> list:
        """Every value, in increasing order (for grids; use only when :attr:`size` is small)."""
        return [k * self.q for k in range(self._kmin, self._kmax + 1)]

    def to_json(self):
        return {"domain": self._name, **self._args}

    def __repr__(self):
        return f"{self._name}({_args_text(self._args)})"


def _args_text(args):
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


class Categorical(Domain):
    """One of a list of categories. ``to_unit`` is the category's index (a float), ``from_unit`` rounds it.

    Categories that are dicts (or lists) containing domains make conditional parameters: the domains inside a
    category exist only when it is chosen (see :class:`ember.tune.SearchSpace`).

    >>> d = choice(["relu", "tanh"])
    >>> d.n_choices, d.to_unit("tanh"), d.from_unit(0.2)
    (2, 1.0, 'relu')
    """

    kind = "categorical"
    _name = "choice"

    def __init__(self, categories):
        if isinstance(categories, (str, bytes, Mapping, set, frozenset)) or not hasattr(categories, "__iter__"):
            raise TypeError(f"{self._name}: expected a list of values (a set has no fixed order), got "
                            f"{type(categories).__name__} {categories!r}")
        self.categories = list(categories)
        if not self.categories:
            raise ValueError(f"{self._name}: needs at least one value, got an empty list")

    @property
    def n_choices(self) -> int:
        return len(self.categories)

    @property
    def size(self):
        return len(self.categories)

    def sample(self, rng=None):
        return self.categories[int(_as_rng(rng).integers(len(self.categories)))]

    def index(self, value) -> int:
        """The index of ``value`` among the categories (ValueError if it is none of them)."""
        return find_index(self.categories, value, "categories" if self.kind == "categorical" else "grid values")

    def to_unit(self, value) -> float:
        return float(self.index(value))

    def from_unit(self, u):
        return self.categories[min(max(int(round(float(u))), 0), len(self.categories) - 1)]

    def contains(self, value) -> bool:
        try:
            self.index(value)
        except ValueError:
            return False
        return True

    def to_json(self):
        return {"domain": self._name, "categories": self.categories}

    def __repr__(self):
        return f"{self._name}({self.categories!r})"


class Grid(Categorical):
    """Values every one of which the searchers try (see :func:`grid_search`)."""

    kind = "grid"
    _name = "grid_search"

    def to_json(self):
        return {"domain": self._name, "values": self.categories}


class Function(Domain):
    """A value computed by ``fn(config)`` from the rest of the configuration (see :func:`sample_from`)."""

    kind = "function"

    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"sample_from: expected a function of the configuration, got {fn!r}")
        self.fn = fn

    def sample(self, rng=None, config=None):
        """``fn(config)``; ``rng`` is unused (the function draws its own randomness, if any)."""
        return self.fn({} if config is None else config)

    def contains(self, value) -> bool:
        return True

    def to_json(self):
        raise TypeError(f"sample_from({self.fn!r}) cannot be written as JSON: a function has no JSON form")

    def __repr__(self):
        return f"sample_from({self.fn!r})"


def uniform(low, high) -> Float:
    """A float drawn uniformly from ``[low, high]``.

    >>> uniform(0, 1).contains(0.3)
    True
    """
    return Float(low, high, _name="uniform")


def loguniform(low, high, base=10) -> Float:
    """A positive float whose logarithm is uniform on ``[log low, log high]`` (``base`` only names the scale).

    >>> loguniform(1e-3, 1).log
    True
    """
    return Float(low, high, log=True, base=base, _name="loguniform")


def quniform(low, high, q) -> Float:
    """A uniform float in ``[low, high]`` rounded to a multiple of ``q`` (the upper bound can be drawn).

    >>> sorted({quniform(0, 1, 0.5).from_unit(u) for u in (0, 0.3, 0.8)})
    [0.0, 0.5, 1.0]
    """
    return Float(low, high, q=q, _name="quniform")


def qloguniform(low, high, q, base=10) -> Float:
    """A log-uniform float in ``[low, high]`` rounded to a multiple of ``q``.

    >>> qloguniform(1, 1000, 1).from_unit(1 / 3)
    10.0
    """
    return Float(low, high, log=True, base=base, q=q, _name="qloguniform")


def randint(low, high) -> Integer:
    """An integer drawn uniformly from ``low, ..., high - 1`` (``high`` excluded, as in Ray and NumPy).

    >>> randint(0, 2).contains(2)
    False
    """
    if isinstance(high, numbers.Integral) and isinstance(low, numbers.Integral) and not low < high:
        raise ValueError(f"randint: low must be below high (high is excluded), got low={low!r}, high={high!r}")
    return Integer(low, high - 1 if isinstance(high, numbers.Integral) else high,
                   _name="randint", _args={"low": low, "high": high})


def lograndint(low, high, base=10) -> Integer:
    """A positive integer from ``low, ..., high - 1`` (``high`` excluded, as in Ray), log-uniformly:
    the floor of a log-uniform real on ``[low, high)``.

    >>> lograndint(1, 1000).from_unit(0.5)
    31
    """
    if isinstance(high, numbers.Integral) and isinstance(low, numbers.Integral) and not low < high:
        raise ValueError(f"lograndint: low must be below high (high is excluded), got low={low!r}, "
                         f"high={high!r}")
    return Integer(low, high - 1 if isinstance(high, numbers.Integral) else high, log=True, base=base,
                   _name="lograndint", _args={"low": low, "high": high, "base": base})


def qrandint(low, high, q=1) -> Integer:
    """A multiple of ``q`` drawn uniformly from ``[low, high]`` (``high`` included, as in Ray).

    >>> qrandint(0, 10, 5).values()
    [0, 5, 10]
    """
    if isinstance(high, numbers.Integral) and isinstance(low, numbers.Integral) and not low < high:
        raise ValueError(f"qrandint: low must be below high, got low={low!r}, high={high!r}")
    return Integer(low, high, q=q, _name="qrandint", _args={"low": low, "high": high, "q": q})


def choice(categories) -> Categorical:
    """One of ``categories``, each equally likely. Dict categories holding domains make conditional parameters.

    >>> choice([16, 32, 64]).sample(0) in (16, 32, 64)
    True
    """
    return Categorical(categories)


def grid_search(values) -> Grid:
    """Try every one of ``values``: the random searcher runs ``num_samples`` trials per value (and per
    combination, with several grid_search parameters), the grid searcher one.

    >>> grid_search([1, 2, 3]).size
    3
    """
    return Grid(values)


def sample_from(fn) -> Function:
    """A value computed as ``fn(config)`` from the configuration drawn so far (grid and random search only).

    >>> sample_from(lambda config: 2 * config["x"]).sample(config={"x": 3})
    6
    """
    return Function(fn)


#: constructors by the name :meth:`Domain.to_json` records
CONSTRUCTORS = {f.__name__: f for f in (uniform, loguniform, quniform, qloguniform, randint, lograndint,
                                        qrandint, choice, grid_search)}
