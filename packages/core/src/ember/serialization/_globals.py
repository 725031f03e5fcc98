"""The classes and functions a checkpoint may name, and finding them without running code from the file.

A whole-model checkpoint names classes (and functions, such as an activation
a layer keeps) by import path, ``"package.module:Qualified.Name"``. With
``weights_only=True`` (the default of :func:`ember.load`) a name is looked up
only in an allow-list, never imported on the file's say-so:

- ember's own classes: a class defined in the ``ember`` namespace that
  declares how it restores (``__ember_setstate__``: every ``ember.nn`` module,
  ``ember.optim`` optimizer and scheduler), ember's tensor classes
  (``ember.nn.Parameter``), and the public functions of ember's ops and
  ``ember.nn.functional`` (a layer's activation). Only modules of the
  ``ember`` namespace are imported to find them (installed ember code, not the
  file's);
- what the user allows with :func:`add_safe_globals` or :class:`safe_globals`.

With ``weights_only=False`` any importable class or function is looked up,
which imports the module the file names: that runs that module's code, so it
is only for files from a trusted source (as PyTorch warns).

>>> import ember
>>> from ember.serialization import add_safe_globals, clear_safe_globals, get_safe_globals
>>> class Scale:
...     pass
>>> add_safe_globals([Scale])
>>> get_safe_globals() == [Scale]
True
>>> clear_safe_globals()
"""
from __future__ import annotations

import importlib
import re
import sys
import types

from .._tensor import Tensor

__all__ = ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals", "global_path", "resolve"]

#: dotted name ("module.Qualname") -> (object, what add_safe_globals was given for it)
_USER: dict = {}
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_PATH = re.compile(rf"({_IDENT}(?:\.{_IDENT})*):({_IDENT}(?:\.{_IDENT})*)")
_MAX_PATH = 500
#: where the functions allowed by default live: ember's tensor ops and ``ember.nn.functional`` (what a layer keeps,
#: such as its activation)
_EMBER_FUNCTION_MODULES = ("ember.ops.", "ember.nn.functional.")


def add_safe_globals(safe_globals) -> None:
    """Allow ``ember.load(..., weights_only=True)`` to rebuild these classes (and refer to these functions).

    Each item is a class or function, or a ``(class_or_function, "module.Name")``
    pair allowing it under the name a file gives (for a class since moved or
    renamed). Allowing a class means trusting it: its instances are rebuilt
    from the file's attributes (see :func:`ember.load`).

    >>> import io, ember
    >>> from ember.serialization import add_safe_globals, clear_safe_globals
    >>> class Box:
    ...     pass
    >>> box = Box(); box.w = ember.ones(2)
    >>> buf = io.BytesIO(); ember.save(box, buf); _ = buf.seek(0)
    >>> add_safe_globals([Box])
    >>> ember.load(buf).w
    tensor([1., 1.])
    >>> clear_safe_globals()
    """
    if isinstance(safe_globals, (str, bytes)) or not hasattr(safe_globals, "__iter__"):
        raise TypeError(f"add_safe_globals expects a list of classes or functions, got {type(safe_globals).__name__}")
    for item in safe_globals:
        if isinstance(item, tuple):
            if len(item) != 2 or not isinstance(item[1], str):
                raise TypeError(f"add_safe_globals: a pair must be (class_or_function, 'module.Name'), got {item!r}")
            obj, name = item
        else:
            obj, name = item, None
        if not (isinstance(obj, type) or isinstance(obj, (types.FunctionType, types.BuiltinFunctionType))):
            raise TypeError(f"add_safe_globals: {obj!r} is a {type(obj).__name__}, not a class or a function")
        _USER[name if name is not None else _dotted(obj)] = (obj, item)


def get_safe_globals() -> list:
    """What :func:`add_safe_globals` allowed, as it was given (classes, functions, ``(obj, name)`` pairs)."""
    return [given for _, given in _USER.values()]


def clear_safe_globals() -> None:
    """Forget everything :func:`add_safe_globals` allowed."""
    _USER.clear()


class safe_globals:
    """A context manager allowing ``globals`` (as :func:`add_safe_globals` takes them) only inside its block.

    >>> import io, ember
    >>> from ember.serialization import safe_globals
    >>> class Box:
    ...     pass
    >>> buf = io.BytesIO(); ember.save(Box(), buf)
    >>> with safe_globals([Box]):
    ...     _ = buf.seek(0); type(ember.load(buf)).__name__
    'Box'
    """

    def __init__(self, safe_globals):
        self._globals = safe_globals
        self._saved: dict | None = None

    def __enter__(self):
        self._saved = dict(_USER)
        add_safe_globals(self._globals)
        return self

    def __exit__(self, *exc):
        _USER.clear()
        _USER.update(self._saved or {})
        return False


def _dotted(obj) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def global_path(obj, where: str) -> str:
    """The ``"module:Qualname"`` a checkpoint names ``obj`` (a class or function) by; ``TypeError`` if it has none.

    A lambda, or a function or class defined inside a function, cannot be
    found again by name, nor one whose module holds another object under its
    name. (One its module does not hold at all, made in a doctest say, can be
    loaded where :func:`add_safe_globals` allows it by name.)
    """
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    path = f"{module}:{qualname}"
    if not (isinstance(module, str) and isinstance(qualname, str) and _PATH.fullmatch(path)) or _dunder(qualname):
        raise TypeError(f"cannot save {where}: {obj!r} cannot be found again by name (a lambda, or a function or "
                        "class defined inside a function); ember.save stores classes and functions by import path, "
                        "so use one defined at module level")
    found = _lookup(sys.modules.get(module), qualname)
    if found is not None and found is not obj:  # (one its module does not hold can still be allowed by name)
        raise TypeError(f"cannot save {where}: {module}.{qualname} names another object than {obj!r} (ember.save "
                        "stores classes and functions by import path)")
    return path


def _dunder(qualname: str) -> bool:
    return any(part.startswith("__") for part in qualname.split("."))


def _lookup(module, qualname: str):
    """``module.Qual.Name`` read from the namespaces' ``__dict__`` (no ``__getattr__``, no descriptors), or None."""
    obj = module
    for part in qualname.split("."):
        try:
            obj = vars(obj).get(part)
        except TypeError:
            return None
        if obj is None:
            return None
    return obj


def _in_ember(module: str) -> bool:
    return module == "ember" or module.startswith("ember.")


def _is_function(obj) -> bool:
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType))


def _ember_default(obj, module: str, qualname: str) -> bool:
    """Whether ``obj``, found at ``module:qualname``, is one of the ember objects allowed by default."""
    if getattr(obj, "__module__", None) != module or getattr(obj, "__qualname__", None) != qualname:
        return False  # another package's object that an ember module imported
    if isinstance(obj, type):
        return issubclass(obj, Tensor) or callable(getattr(obj, "__ember_setstate__", None))
    return (_is_function(obj) and module.startswith(_EMBER_FUNCTION_MODULES)
            and not any(part.startswith("_") for part in qualname.split(".")))


class Refused(Exception):
    """Why a name in a checkpoint was not looked up (the caller adds the file's name)."""


def resolve(path, kind: str, weights_only: bool):
    """What ``path`` names, as ``kind`` needs it; raises :class:`Refused` with the reason when it cannot be used.

    ``kind`` is ``'object'`` (a class to make an instance of from attributes:
    not a tensor class, and without a finalizer, ``__del__``, that would run
    on the file's attributes, unless the user allowed it), ``'tensor'`` (a
    tensor class) or ``'global'`` (a class or function, referred to only).
    """
    if not isinstance(path, str) or len(path) > _MAX_PATH or not _PATH.fullmatch(path):
        raise Refused(f"{path!r:.100} is not an import path of the form 'package.module:Name'")
    module, qualname = path.split(":")
    dotted = f"{module}.{qualname}"
    if _dunder(qualname) or (module != "__main__" and any(p.startswith("__") for p in module.split("."))):
        raise Refused(f"{dotted} names a dunder attribute, which no checkpoint may name")
    user = dotted in _USER
    if user:
        obj = _USER[dotted][0]
    elif weights_only and not _in_ember(module):
        raise Refused(_not_allowed(dotted))
    else:
        obj = _lookup(_import(module, dotted), qualname)
        if obj is None:
            raise Refused(f"{dotted} was not found: module {module!r} has no {qualname!r}")
        if weights_only and not _ember_default(obj, module, qualname):
            raise Refused(_not_allowed(dotted))
    if kind != "global" and not isinstance(obj, type):
        raise Refused(f"{dotted} is a {type(obj).__name__}, not a class: only classes are rebuilt from a file")
    if not (isinstance(obj, type) or _is_function(obj)):
        raise Refused(f"{dotted} is a {type(obj).__name__}, neither a class nor a function")
    if kind == "tensor" and not issubclass(obj, Tensor):
        raise Refused(f"{dotted} is not a tensor class, which a tensor node must name")
    if kind == "object" and issubclass(obj, Tensor):
        raise Refused(f"{dotted} is a tensor class, which only a tensor node may name")
    if kind == "object" and not user and getattr(obj, "__del__", None) is not None:
        raise Refused(f"{dotted} has a finalizer (__del__), which would run on attributes from the file when the "
                      f"object is freed; if you trust it, allow it with ember.serialization.add_safe_globals"
                      f"([{dotted}])")
    return obj


def _import(module: str, dotted: str):
    found = sys.modules.get(module)
    if found is not None:
        return found
    try:
        return importlib.import_module(module)
    except Exception as exc:  # any failure of the import is the file's problem to report, not a crash
        raise Refused(f"{dotted} could not be imported ({type(exc).__name__}: {exc})") from None


def _not_allowed(dotted: str) -> str:
    """PyTorch's message for a global that ``weights_only`` loading does not allow, with ember's names."""
    return ("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
            "steps only if you trust the source of the checkpoint.\n"
            "\t(1) Re-running `ember.load` with `weights_only` set to `False` will likely succeed, but it can "
            "result in arbitrary code execution. Do it only if you got the file from a trusted source.\n"
            "\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in the "
            "following error message.\n"
            f"\tWeightsUnpickler error: Unsupported global: GLOBAL {dotted} was not an allowed global by default. "
            f"Please use `ember.serialization.add_safe_globals([{dotted}])` or the "
            f"`ember.serialization.safe_globals([{dotted}])` context manager to allowlist this global if you "
            "trust this class/function.")
