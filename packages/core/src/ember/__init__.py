"""ember: a deep-learning framework with PyTorch's names and semantics.

>>> import ember
>>> x = ember.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""
import importlib as _importlib
import importlib.util as _importlib_util
import sys as _sys
import warnings as _warnings
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)  # ember.nn, ember.data, ... come from sibling distributions

_SIBLINGS = ("nn", "optim", "data", "parallel", "tune", "onnx")

# The core's names (ember.tensor, ember.float32, ...) are imported by ember._api and copied here on first use
# (PEP 562), so that importing a sibling such as ember.tune does not pay for NumPy and every op until it uses
# them. Each core module imports what it needs itself, so any of them can also be imported first.
_loaded = False


def _load() -> None:
    """Import ember._api and copy its names here; a nested call while it loads copies what is there so far."""
    global _loaded
    api = _sys.modules.get("ember._api") or _importlib.import_module("ember._api")
    globals().update({k: v for k, v in vars(api).items() if not k.startswith("__") or k == "__version__"})
    _loaded = getattr(api, "_complete", False)


def __getattr__(name):
    """The core's names, loaded on first use; ``ember.nn``, ``ember.optim``, ...: imported on first use, as
    ``torch.optim`` works after ``import torch``."""
    if name in _SIBLINGS:
        try:
            return _importlib.import_module(f"ember.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ember.{name}":
                raise
            dist = {"optim": "nn"}.get(name, name)
            raise AttributeError(f"module 'ember' has no attribute {name!r}: install ember-{dist} "
                                 f"(`pip install ember-{dist}`) to get ember.{name}") from None
    private = name.startswith("_") and name != "__version__"
    if not _loaded and not private:
        _load()
        if name in globals():
            return globals()[name]
    # a submodule not imported yet: a private one (``from . import _plugins`` inside the core, which must not
    # load the whole core) or one the core does not import itself (``ember.hookspecs``)
    if _importlib_util.find_spec(f"ember.{name}") is not None:
        return _importlib.import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


def __dir__():
    if not _loaded:
        _load()
    return sorted(globals())


# 1/0, log(0), overflow: results are inf/nan as in PyTorch, which stays silent about them; NumPy would warn
# from inside ember's ops. Only warnings raised in ember's own modules are silenced.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember(\.|$)")
