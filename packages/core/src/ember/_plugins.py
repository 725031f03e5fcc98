"""The plugin manager: built-in and third-party plugins, registered alike.

Hooks are called through pluggy, one plugin at a time (:func:`collect_claims`), so that
each claim (a backend, an op's kernel, ...) is known with the plugin that made it and a
clash names both plugins. A registration that fails in any way is undone completely.

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
#: called after every change of the registered plugins (see :func:`on_registry_change`)
_LISTENERS: list = []
#: the hooks of :mod:`ember.hookspecs`, whose claims :func:`register_plugin` always checks
#: loops over at least this many values go to a plugin's compiled kernel (hook ``ember_cpu_kernels``), when one is
#: registered. Below it NumPy takes well under a millisecond, and a program that never runs a larger loop does not
#: pay the plugin's one-time start (ember-numba: about a second to import numba and load its compiled code)
CPU_KERNEL_MIN = 1 << 16
_CORE_HOOKS = ("ember_backends", "ember_op_kernels", "ember_onnx_lowerings", "ember_cpu_kernels")


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
            _registry_changed()
            raise
    return _pm


def ensure_plugins(hookspec, builtins: tuple[str, ...] = ()) -> pluggy.PluginManager:
    """The plugin manager, with the hooks of ``hookspec`` (a distribution's hookspec module) known and its built-in
    plugin modules ``builtins`` registered through :func:`register_plugin`, as a third party's would be: how
    ember-tune, ember-parallel and others open their own hooks. Cheap once done.

    >>> import ember, ember.hookspecs
    >>> ember.ensure_plugins(ember.hookspecs) is ember.get_plugin_manager()
    True
    """
    pm = get_plugin_manager()
    names = [name for name in dir(hookspec) if pm.parse_hookspec_opts(hookspec, name) is not None]
    # a plugin registered before these hooks were known leaves callers without a spec
    if any(getattr(pm.hook, name, None) is None or getattr(pm.hook, name).spec is None for name in names):
        pm.add_hookspecs(hookspec)
    for modname in builtins:
        if pm.get_plugin(modname) is None:
            register_plugin(importlib.import_module(modname), modname)
    return pm


def entry_points() -> list:
    """The entry points of the ``ember`` group (third-party plugins), sorted by name."""
    return sorted(importlib.metadata.entry_points(group="ember"), key=lambda ep: ep.name)


def register_plugin(plugin, name: str | None = None) -> str:
    """Register ``plugin`` (a module or object with ``@ember.hookimpl`` functions) under ``name``.

    Built-ins use this same call. A name already taken by another plugin, or a
    backend device type, op kernel, ONNX lowering or other claim that another
    plugin already gives, is a :class:`~ember.errors.PluginError` naming both.
    Any failure (an invalid hook implementation, a hook wrapper, a hook that
    raises while the claims are checked, a clash) leaves the registry exactly
    as it was: the plugin is not registered, not even in part.

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
    _check_registrable(pm, plugin, name)
    try:
        pm.register(plugin, name)
    except pluggy.PluginValidationError as exc:  # e.g. a hook implementation with the wrong arguments
        raise PluginError(f"plugin {name!r} ({_describe(plugin)}) is not a valid ember plugin: {exc}") from None
    try:
        _refuse_wrappers(pm, plugin, name)
        _registry_changed()
        _check_claims(pm, plugin)
    except BaseException:  # whatever went wrong (even a KeyboardInterrupt), take the plugin out again
        pm.unregister(plugin=plugin, name=name)
        _registry_changed()
        raise
    return name


def unregister_plugin(name: str) -> None:
    """Remove a plugin registered under ``name`` (mainly for tests)."""
    pm = get_plugin_manager()
    if pm.get_plugin(name) is None:
        raise PluginError(f"no plugin named {name!r} is registered; registered: {sorted(plugin_names())}")
    pm.unregister(name=name)
    _registry_changed()


def on_registry_change(callback):
    """Have ``callback()`` called after every registration, failed registration and unregistration of a plugin.

    Core modules that cache what plugins give (a device's backend, an op's kernel) register their
    cache-clearing function here when they are imported, so this module needs not import them.
    Returns ``callback``, so it can be used as a decorator. A listener is never removed: register
    only module-level functions, as ``ember._device`` does with its ``forget_backends``::

        _plugins.on_registry_change(forget_backends)  # devices look their backend up again on next use
    """
    _LISTENERS.append(callback)
    return callback


def _registry_changed() -> None:
    backends.cache_clear()
    op_kernels.cache_clear()
    onnx_lowerings.cache_clear()
    cpu_kernels.cache_clear()
    for callback in _LISTENERS:
        callback()


def _check_registrable(pm: pluggy.PluginManager, plugin, name: str) -> None:
    """Refuse, before anything changes, a plugin that cannot be registered under ``name``."""
    existing = pm.get_plugin(name)
    if existing is not None:
        raise PluginError(f"plugin name {name!r} is claimed by both {_describe(existing)} and {_describe(plugin)}")
    registered_as = pm.get_name(plugin)
    if registered_as is not None:
        raise PluginError(f"{_describe(plugin)} is already registered as plugin {registered_as!r}; "
                          f"it cannot be registered again as {name!r}")
    try:
        hash(plugin)
    except TypeError:
        raise PluginError(f"plugin {name!r} ({_describe(plugin)}) is not hashable; ember calls each plugin's hooks "
                          "through pluggy's subset_hook_caller, which keeps plugins in a set: register a module, "
                          "or an object whose class keeps object.__hash__") from None


def _refuse_wrappers(pm: pluggy.PluginManager, plugin, name: str) -> None:
    """Every ember hook gathers claims, one plugin at a time: a hook wrapper would have nothing to wrap."""
    for caller in pm.get_hookcallers(plugin) or ():
        for impl in caller.get_hookimpls():
            if impl.plugin is plugin and (impl.wrapper or impl.hookwrapper):
                kind = "wrapper=True" if impl.wrapper else "hookwrapper=True"
                raise PluginError(
                    f"plugin {name!r} ({_describe(plugin)}) implements {caller.name} with {kind}; ember's hooks "
                    "gather claims and call each plugin's implementation on its own (so that a clash names both "
                    "plugins), so a wrapper around the other plugins' implementations is not supported: "
                    "return your claims from a plain @ember.hookimpl")


def _check_claims(pm: pluggy.PluginManager, plugin) -> None:
    """Raise :class:`PluginError` if a claim of the registry, with ``plugin`` in it, clashes with another."""
    for backend_name in backends():  # a new backend brings the other plugins' kernels for it
        op_kernels(backend_name)
    onnx_lowerings()
    cpu_kernels()
    for caller in pm.get_hookcallers(plugin) or ():  # the plugin's other hooks (ember.tune's, ...)
        if caller.name not in _CORE_HOOKS and caller.spec is not None and not caller.spec.argnames:
            collect_claims(caller.name)


def plugin_names() -> list[str]:
    return [name for name, _ in get_plugin_manager().list_name_plugin()]


def _describe(plugin) -> str:
    mod = getattr(plugin, "__name__", None) or type(plugin).__module__ + "." + type(plugin).__qualname__
    return repr(mod)


class Claim:
    """A hook result's value with a priority: the claim of the highest priority wins.

    A plain value in a hook's result has priority 0, as ember's built-in plugins' claims do. A plugin that
    means to replace a built-in (a faster convolution on the CPU) wraps its value in ``Claim(value,
    priority=1)`` (or higher); two claims of the same key and the same priority remain an error naming both
    plugins. ``python -m ember info`` lists every claim that won over another.

    >>> import ember
    >>> class FastNeg:
    ...     @ember.hookimpl
    ...     def ember_op_kernels(self, backend):
    ...         if backend.name != "cpu":
    ...             return {}
    ...         return {"neg": ember.Claim(lambda ctx, xp, a: xp.negative(a) * 2, priority=1)}
    >>> name = ember.register_plugin(FastNeg(), "fast-neg")
    >>> -ember.tensor([1.0])
    tensor([-2.])
    >>> ember.unregister_plugin("fast-neg")
    """

    __slots__ = ("value", "priority")

    def __init__(self, value, priority: int = 1):
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"Claim priority must be an int (higher wins; plain claims have 0), got {priority!r}")
        self.value, self.priority = value, priority

    def __repr__(self):
        return f"Claim({self.value!r}, priority={self.priority})"


def collect_claims(hook_name: str, claim: str = "{key}", /, **hook_kwargs) -> dict:
    """Call hook ``hook_name`` on every plugin and gather what each claims: ``{key: (value, plugin_name)}``.

    Each plugin's implementation is called on its own, through pluggy (so it receives, by name, the
    arguments of ``hook_kwargs`` it asks for), and returns ``{key: value}``, a list of objects claimed
    under their ``.name`` (as ``ember_backends`` does), or None. A value wrapped in :class:`Claim` carries a
    priority (plain values: 0): of two claims of one key the higher priority wins, and two of the same
    priority are a :class:`~ember.errors.PluginError` naming both plugins; ``claim`` describes one claim in
    that message, ``{key}`` standing for the key. A hook implementation that raises, or returns anything
    else, is a PluginError naming its plugin. Plugins are visited in the order pluggy lists their
    implementations (the order of registration, unless ``tryfirst``/``trylast`` say otherwise).

    >>> import ember
    >>> backend, plugin_name = ember.collect_claims("ember_backends", "the backend for device type {key}")["cpu"]
    >>> backend.name, plugin_name
    ('cpu', 'ember.backends.cpu')
    >>> kernels = ember.collect_claims("ember_op_kernels", "the kernel of op {key}", backend=backend)
    >>> type(kernels)
    <class 'dict'>
    """
    return claims_and_overrides(hook_name, claim, **hook_kwargs)[0]


def claims_and_overrides(hook_name: str, claim: str = "{key}", /, **hook_kwargs) -> tuple[dict, dict]:
    """:func:`collect_claims`' result, and ``{key: [plugin names]}``: for each key won by a higher priority,
    the plugins whose claims it overrode (what ``python -m ember info`` shows)."""
    pm = get_plugin_manager()
    caller = getattr(pm.hook, hook_name, None)
    if caller is None or caller.spec is None:
        known = sorted(name for name, hook in vars(pm.hook).items() if hook.spec is not None)
        raise PluginError(f"no ember hook named {hook_name!r} has a specification; known hooks: {known}")
    # each plugin once, in order: one may implement a hook twice (``specname``)
    owners = list(dict.fromkeys((impl.plugin, impl.plugin_name) for impl in caller.get_hookimpls()))
    found: dict = {}
    priorities: dict = {}
    overridden: dict = {}
    for plugin, plugin_name in owners:
        # a hook caller for this plugin alone: pluggy itself matches the arguments by name (and traces the call)
        only = pm.subset_hook_caller(hook_name, remove_plugins=[other for other, _ in owners if other is not plugin])
        try:
            results = only(**hook_kwargs)
        except Exception as exc:  # name the plugin whose hook failed, whatever it raised
            raise PluginError(f"plugin {plugin_name!r} raised {type(exc).__name__} in its hook {hook_name}: "
                              f"{exc}") from exc
        for result in results:
            for key, value in _claims(result, plugin_name, hook_name):
                priority = 0
                if isinstance(value, Claim):
                    value, priority = value.value, value.priority
                if key in found:
                    if priority == priorities[key]:
                        raise PluginError(f"{claim.format(key=repr(key))} is given by both plugin {found[key][1]!r} "
                                          f"and plugin {plugin_name!r} (hook {hook_name}) with the same priority "
                                          f"({priority}); uninstall or unregister one, or give one a higher "
                                          "priority with ember.Claim(value, priority=...)")
                    if priority < priorities[key]:
                        overridden.setdefault(key, []).append(plugin_name)
                        continue
                    overridden.setdefault(key, []).append(found[key][1])
                found[key], priorities[key] = (value, plugin_name), priority
    return found, overridden


def _claims(result, plugin_name: str, hook_name: str):
    """The ``(key, value)`` pairs of one hook result: a dict, or a list or tuple of objects with a ``.name`` (or
    :class:`Claim` of such objects)."""
    if isinstance(result, dict):
        return result.items()
    if isinstance(result, (list, tuple)) and all(isinstance(getattr(_unwrapped(v), "name", None), str) for v in result):
        return [(_unwrapped(v).name, v) for v in result]
    raise PluginError(f"plugin {plugin_name!r}'s hook {hook_name} returned {type(result).__name__} "
                      f"{result!r:.80}; expected a dict {{key: value}}, a list of objects with a str .name, or None")


def _unwrapped(value):
    return value.value if isinstance(value, Claim) else value


@functools.cache
def backends() -> dict:
    """``{device_type: (backend, plugin_name)}`` for every registered backend."""
    return collect_claims("ember_backends", "the backend for device type {key}")


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
    found = collect_claims("ember_op_kernels", f"the kernel of op {{key}} on backend {backend_name!r}",
                           backend=backend)
    return {op: kernel for op, (kernel, _) in found.items()}


@functools.cache
def onnx_lowerings() -> dict:
    """``{op_name: lowering}`` that plugins give for ONNX export (cached until the registered plugins change)."""
    found = collect_claims("ember_onnx_lowerings", "the ONNX lowering of op {key}")
    return {op: lowering for op, (lowering, _) in found.items()}


@functools.cache
def cpu_kernels() -> dict:
    """``{name: kernel}``: plugins' compiled inner loops of the CPU backend (hook ``ember_cpu_kernels``)."""
    found = collect_claims("ember_cpu_kernels", "the CPU kernel {key}")
    return {name: kernel for name, (kernel, _) in found.items()}


def cpu_kernel(name: str, n: int, min_size: int | None = None):
    """The plugin kernel ``name`` for a loop over ``n`` values, or None (ember's NumPy code then).

    Plugin kernels serve from ``min_size`` values up (default :data:`CPU_KERNEL_MIN`).
    """
    return cpu_kernels().get(name) if n >= (CPU_KERNEL_MIN if min_size is None else min_size) else None
