"""Finding searchers, schedulers and executors by name, built-in and third-party alike.

>>> from ember.tune import registry
>>> registry.get("searcher", "random").__name__
'RandomSearcher'
>>> registry.get("scheduler", "nonsense")
Traceback (most recent call last):
...
ValueError: unknown scheduler 'nonsense'; known: ...
"""
from __future__ import annotations

from ember import collect_claims, ensure_plugins, hookimpl, register_plugin  # noqa: F401  (re-exported for plugin authors)

from . import hookspec

#: built-in plugin modules, registered through the same call a third party uses
BUILTIN_PLUGINS = (
    "ember.tune.searchers.grid", "ember.tune.searchers.random", "ember.tune.searchers.tpe",
    "ember.tune.searchers.bohb", "ember.tune.searchers.nsga2",
    "ember.tune.schedulers.fifo", "ember.tune.schedulers.median", "ember.tune.schedulers.hyperband",
    "ember.tune.schedulers.asha", "ember.tune.schedulers.pbt", "ember.tune.schedulers.pb2",
    "ember.tune.executors.local", "ember.tune.executors.ray",
)

_HOOKS = {"searcher": "ember_tune_searchers", "scheduler": "ember_tune_schedulers", "executor": "ember_tune_executors"}


def available(kind: str) -> dict:
    """``{name: class}`` of every registered component of ``kind`` ("searcher", "scheduler" or "executor")."""
    if kind not in _HOOKS:
        raise ValueError(f"unknown component kind {kind!r}; expected one of {sorted(_HOOKS)}")
    plugin_manager()
    return {name: cls for name, (cls, _) in collect_claims(_HOOKS[kind], f"the tune {kind} {{key}}").items()}


def plugin_manager():
    """ember's plugin manager with ember.tune's hooks and built-in plugins registered."""
    return ensure_plugins(hookspec, BUILTIN_PLUGINS)


def get(kind: str, name: str):
    """The class registered as ``name`` for ``kind``, or a ValueError listing the known names."""
    found = available(kind)
    try:
        return found[name]
    except KeyError:
        raise ValueError(f"unknown {kind} {name!r}; known: {sorted(found)}") from None


def resolve(kind: str, spec, **kwargs):
    """An instance from ``spec``: an instance is returned as is, a name is looked up and built with ``kwargs``."""
    if spec is None or isinstance(spec, str):
        return get(kind, spec or DEFAULTS[kind])(**kwargs)
    return spec


DEFAULTS = {"searcher": "random", "scheduler": "fifo", "executor": "local"}
