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

import ember.hookspecs as hookspecs  # not ``from . import``: that would look the name up on ember first
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
        try:
            for modname in BUILTIN_PLUGINS:
                register_plugin(importlib.import_module(modname), modname)
            for ep in entry_points():
                try:
                    plugin = ep.load()
                except Exception as exc:  # a broken third-party plugin must say who it is
                    raise PluginError(f"could not load ember plugin {ep.name!r} ({ep.value}): "
                                      f"{type(exc).__name__}: {exc}") from exc
                register_plugin(plugin, ep.name)
        except BaseException:
            _pm = None  # never leave a half-loaded manager behind: the next use reports the error again
            _clear_caches()
            raise
    return _pm


def entry_points() -> list:
    """The entry points of the ``ember`` group (third-party plugins), sorted by name."""
    return sorted(importlib.metadata.entry_points(group="ember"), key=lambda ep: ep.name)


def register_plugin(plugin, name: str | None = None) -> str:
    """Register ``plugin`` (a module or object with ``@ember.hookimpl`` functions) under ``name``.

    Built-ins use this same call. A name already taken by another plugin, or a
    backend device type or op kernel that another plugin already gives, is a
    :class:`~ember.errors.PluginError` naming both; the plugin is then not registered.

    >>> import ember
    >>> class Twice:
    ...     @ember.hookimpl
    ...     def ember_op_kernels(self, backend):
    ...         return {"neg": lambda ctx, xp, a: xp.negative(a) * 2} if backend.name == "cpu" else {}
    >>> name = ember.register_plugin(Twice(), "twice")
    >>> -ember.tensor([1.0])
    tensor([-2.])
    >>> ember.unregister_plugin("twice")
    >>> -ember.tensor([1.0])
    tensor([-1.])
    """
    pm = get_plugin_manager() if _pm is None else _pm
    name = name or getattr(plugin, "__name__", None) or repr(plugin)
    existing = pm.get_plugin(name)
    if existing is not None:
        raise PluginError(f"plugin name {name!r} is claimed by both {_describe(existing)} and {_describe(plugin)}")
    try:
        pm.register(plugin, name)
    except pluggy.PluginValidationError as exc:  # e.g. a hook implementation with the wrong arguments
        raise PluginError(f"plugin {name!r} ({_describe(plugin)}) is not a valid ember plugin: {exc}") from None
    _clear_caches()
    try:
        _check_claims()
    except PluginError:
        pm.unregister(name=name)
        _clear_caches()
        raise
    return name


def unregister_plugin(name: str) -> None:
    """Remove a plugin registered under ``name`` (mainly for tests)."""
    pm = get_plugin_manager()
    if pm.get_plugin(name) is None:
        raise PluginError(f"no plugin named {name!r} is registered; registered: {sorted(plugin_names())}")
    pm.unregister(name=name)
    _clear_caches()


def _check_claims() -> None:
    """Raise :class:`PluginError` if two plugins give the same backend or the same kernel on a backend."""
    for backend_name in backends():
        op_kernels(backend_name)
    onnx_lowerings()


def plugin_names() -> list[str]:
    return [name for name, _ in get_plugin_manager().list_name_plugin()]


def _describe(plugin) -> str:
    mod = getattr(plugin, "__name__", None) or type(plugin).__module__ + "." + type(plugin).__qualname__
    return repr(mod)


def _collect(what: str, hook_name: str, *args) -> dict:
    """Run a dict/list-returning hook on each plugin; ``{key: (value, plugin_name)}``, clashes are errors.

    ``what`` describes one claim for the error message, with ``{key}`` standing for the key.
    """
    pm = get_plugin_manager()
    found: dict = {}
    for impl in getattr(pm.hook, hook_name).get_hookimpls():
        result = impl.function(*args) or {}
        items = result.items() if isinstance(result, dict) else ((b.name, b) for b in result)
        for key, value in items:
            if key in found:
                raise PluginError(f"{what.format(key=repr(key))} is given by both plugin {found[key][1]!r} and "
                                  f"plugin {impl.plugin_name!r} (hook {hook_name}); uninstall or unregister one")
            found[key] = (value, impl.plugin_name)
    return found


@functools.cache
def backends() -> dict:
    """``{device_type: (backend, plugin_name)}`` for every registered backend."""
    return _collect("the backend for device type {key}", "ember_backends")


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
    found = _collect(f"the kernel of op {{key}} on backend {backend_name!r}", "ember_op_kernels", backend)
    return {op: kernel for op, (kernel, _) in found.items()}


@functools.cache
def onnx_lowerings() -> dict:
    return {op: f for op, (f, _) in _collect("the ONNX lowering of op {key}", "ember_onnx_lowerings").items()}


_listeners: list = []


def on_change(callback):
    """Call ``callback()`` whenever a plugin is registered or unregistered (to drop what was looked up from the
    plugins before: devices' backends, ops' kernels)."""
    _listeners.append(callback)
    return callback


def _clear_caches():
    backends.cache_clear()
    op_kernels.cache_clear()
    onnx_lowerings.cache_clear()
    for callback in _listeners:
        callback()
