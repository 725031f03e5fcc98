"""The plugin manager: built-in and third-party plugins, registered alike.

>>> import ember
>>> sorted(ember.list_backends())[:1]
['cpu']
"""
from __future__ import annotations

import functools
import importlib
import importlib.metadata

import pluggy

from . import hookspecs
from .errors import PluginError

hookimpl = pluggy.HookimplMarker("ember")

#: modules registered as built-in plugins, in this order, before any entry point
BUILTIN_PLUGINS = ("ember.backends.cpu",)

_pm: pluggy.PluginManager | None = None


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, with built-ins and entry-point plugins loaded on first use."""
    global _pm
    if _pm is None:
        _pm = pluggy.PluginManager("ember")
        _pm.add_hookspecs(hookspecs)
        for modname in BUILTIN_PLUGINS:
            register_plugin(importlib.import_module(modname), modname)
        for ep in importlib.metadata.entry_points(group="ember"):
            try:
                plugin = ep.load()
            except Exception as exc:  # a broken third-party plugin must say who it is
                raise PluginError(f"could not load ember plugin {ep.name!r} ({ep.value}): {exc}") from exc
            register_plugin(plugin, ep.name)
    return _pm


def register_plugin(plugin, name: str | None = None) -> str:
    """Register ``plugin`` (a module or object with ``@ember.hookimpl`` functions) under ``name``.

    Built-ins use this same call. A name already taken by another plugin is a
    :class:`~ember.errors.PluginError` naming both.
    """
    pm = get_plugin_manager() if _pm is None else _pm
    name = name or getattr(plugin, "__name__", None) or repr(plugin)
    existing = pm.get_plugin(name)
    if existing is not None:
        raise PluginError(f"plugin name {name!r} is claimed by both {_describe(existing)} and {_describe(plugin)}")
    pm.register(plugin, name)
    _clear_caches()
    return name


def unregister_plugin(name: str) -> None:
    """Remove a plugin registered under ``name`` (mainly for tests)."""
    pm = get_plugin_manager()
    if pm.get_plugin(name) is None:
        raise PluginError(f"no plugin named {name!r} is registered; registered: {sorted(plugin_names())}")
    pm.unregister(name=name)
    _clear_caches()


def plugin_names() -> list[str]:
    return [name for name, _ in get_plugin_manager().list_name_plugin()]


def _describe(plugin) -> str:
    mod = getattr(plugin, "__name__", None) or type(plugin).__module__ + "." + type(plugin).__qualname__
    return repr(mod)


def _collect(hook_name: str, *args) -> dict:
    """Run a dict/list-returning hook on each plugin; ``{key: (value, plugin_name)}``, clashes are errors."""
    pm = get_plugin_manager()
    found: dict = {}
    for impl in getattr(pm.hook, hook_name).get_hookimpls():
        result = impl.function(*args) or {}
        items = result.items() if isinstance(result, dict) else ((b.name, b) for b in result)
        for key, value in items:
            if key in found:
                raise PluginError(
                    f"{hook_name}: {key!r} is claimed by both plugin {found[key][1]!r} and plugin {impl.plugin_name!r}")
            found[key] = (value, impl.plugin_name)
    return found


@functools.cache
def backends() -> dict:
    """``{device_type: (backend, plugin_name)}`` for every registered backend."""
    return _collect("ember_backends")


def list_backends() -> list[str]:
    """Names (device types) of the registered backends."""
    return list(backends())


def get_backend(name: str):
    """The backend for device type ``name``, or a clear error listing the known ones."""
    try:
        return backends()[name][0]
    except KeyError:
        raise RuntimeError(
            f"no ember backend for device type {name!r}; registered backends: {sorted(backends())}. "
            "A backend comes from a plugin (see `python -m ember info`).") from None


@functools.cache
def op_kernels(backend_name: str) -> dict:
    """``{op_name: kernel}`` that plugins give for ``backend_name``."""
    backend = get_backend(backend_name)
    return {op: k for op, (k, _) in _collect("ember_op_kernels", backend).items()}


@functools.cache
def onnx_lowerings() -> dict:
    return {op: f for op, (f, _) in _collect("ember_onnx_lowerings").items()}


def _clear_caches():
    from ._device import _INTERNED
    backends.cache_clear()
    op_kernels.cache_clear()
    onnx_lowerings.cache_clear()
    for dev in _INTERNED.values():
        dev._backend = None
    from .autograd.function import clear_kernel_cache
    clear_kernel_cache()
