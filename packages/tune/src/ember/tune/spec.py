"""The experiment's static specification as JSON: what :meth:`ember.tune.Experiment.restore` and
:meth:`ember.tune.Tuner.restore` rebuild an experiment from, without running any code read from disk.

The specification is written into the journal's first line. Each entry is ``{"json": data}`` (rebuilt from
``data``) or ``{"missing": reason}`` (a user function, an unregistered plugin, ...: restore takes it from the
caller's arguments and, if not given, says which argument to pass and why). Searchers, schedulers and
executors remember the arguments they were built with (:class:`~ember.tune._buildable.Buildable`), so a
registered one is written as its registry name and those arguments when they are plain JSON values.

>>> from ember import tune
>>> component_spec("scheduler", tune.ASHAScheduler(max_t=9, grace_period=1))
{'json': {'name': 'asha', 'args': [], 'kwargs': {'max_t': 9, 'grace_period': 1}}}
>>> component_spec("searcher", tune.TPESearcher(gamma=lambda n: 1))["missing"]
'TPESearcher(...) was built with arguments JSON cannot hold (gamma=<function>)'
>>> build("stop", {"missing": "stop is a function"}, {})
Traceback (most recent call last):
...
ValueError: the experiment's stop could not be written as JSON (stop is a function); pass stop= ...
"""
from __future__ import annotations

import dataclasses

from . import registry, stoppers
from ._buildable import plain_json
from .journal import JournalError


class _NotGiven:
    """The default of a restore argument the caller did not pass (None is a value that can be passed)."""

    def __repr__(self):
        return "<not given>"


#: "the caller did not pass this argument" (so ``stop=None`` passed explicitly means: no stop criteria)
NOT_GIVEN = _NotGiven()


def _unplain(args, kwargs) -> list:
    bad = [f"argument {i + 1}=<{type(v).__name__}>" for i, v in enumerate(args) if not plain_json(v)]
    return bad + [f"{k}=<{type(v).__name__}>" for k, v in kwargs.items() if not plain_json(v)]


def component_spec(kind: str, obj) -> dict:
    """``obj`` (a searcher, scheduler or executor instance, a registered name, or None: the default) as a
    specification entry."""
    if obj is None or isinstance(obj, str):
        return {"json": {"name": obj or registry.DEFAULTS[kind], "args": [], "kwargs": {}}}
    cls = type(obj)
    names = [name for name, found in registry.available(kind).items() if found is cls]
    if not names:
        return {"missing": f"{cls.__qualname__} is not a registered {kind} (ember.tune.register_plugin)"}
    args, kwargs = getattr(obj, "_build_args", (None, None))
    if args is None:
        return {"missing": f"{cls.__qualname__} does not record its constructor's arguments"}
    bad = _unplain(args, kwargs)
    if bad:
        return {"missing": f"{cls.__qualname__}(...) was built with arguments JSON cannot hold ({', '.join(bad)})"}
    return {"json": {"name": names[0], "args": list(args), "kwargs": dict(kwargs)}}


def value_spec(value, what: str) -> dict:
    """A plain value (stop criteria dict, None) or a built-in :class:`~ember.tune.Stopper` as a specification
    entry; a callable or another object is missing."""
    if plain_json(value):
        return {"json": value}
    if isinstance(value, stoppers.Stopper) and (data := stoppers.to_json(value)) is not None:
        return {"json": data}
    return {"missing": f"{what} is a {type(value).__name__}, which has no JSON form"}


def space_spec(space) -> dict:
    """A :class:`~ember.tune.SearchSpace` through its JSON form (``sample_from`` functions have none)."""
    try:
        return {"json": space.to_json()}
    except TypeError as e:
        return {"missing": str(e)}


def checkpoint_config_spec(config) -> dict:
    from .config import CheckpointConfig
    if config is None or type(config) is CheckpointConfig:
        return {"json": None if config is None else dataclasses.asdict(config)}
    return {"missing": f"checkpoint_config is a {type(config).__name__}, not a CheckpointConfig"}


def build(key: str, entry, given: dict, where: str = "the journal"):
    """The value of specification ``entry`` for argument ``key``: the caller's (in ``given``) if passed,
    else rebuilt from the JSON, else a ValueError naming the argument to pass. A recorded value that cannot
    be rebuilt (an edited journal) is a JournalError starting with ``where``."""
    if key in given:
        return given[key]
    if isinstance(entry, dict) and "missing" in entry and "json" not in entry:
        raise ValueError(f"the experiment's {key} could not be written as JSON ({entry['missing']}); pass "
                         f"{key}= (built as in the original run) to restore it")
    try:
        if not isinstance(entry, dict) or set(entry) != {"json"}:
            raise ValueError(f"expected {{'json': ...}} or {{'missing': reason}}, got {entry!r}")
        return _from_json(key, entry["json"])
    except (TypeError, ValueError, KeyError) as e:
        raise JournalError(f"{where}: the recorded {key} cannot be rebuilt ({type(e).__name__}: {e})") from None


def _from_json(key: str, data):
    if key == "param_space":
        from .space import SearchSpace
        return SearchSpace.from_json(data)
    if key == "checkpoint_config":
        from .config import CheckpointConfig
        return None if data is None else CheckpointConfig(**data)
    if key in _KINDS:
        if not isinstance(data, dict) or set(data) != {"name", "args", "kwargs"} or not isinstance(data["name"], str) \
                or not isinstance(data["args"], list) or not isinstance(data["kwargs"], dict):
            raise ValueError(f"expected {{'name': str, 'args': list, 'kwargs': dict}}, got {data!r}")
        return registry.get(_KINDS[key], data["name"])(*data["args"], **data["kwargs"])
    if key == "stop" and data is not None and not isinstance(data, dict):
        raise ValueError(f"stop must be a dict or null, got {data!r}")
    if key == "stop":
        if stoppers.is_json(data):
            return stoppers.from_json(data)
    return data


_KINDS = {"search_alg": "searcher", "scheduler": "scheduler", "executor": "executor"}


def qualified_name(fn) -> str:
    """``module.qualname`` of a trainable (through :func:`ember.tune.with_resources`)."""
    fn = getattr(fn, "trainable", fn)
    target = fn if hasattr(fn, "__qualname__") else type(fn)
    return f"{getattr(target, '__module__', '?')}.{target.__qualname__}"

