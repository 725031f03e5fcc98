"""ember: a deep-learning framework with PyTorch's names and semantics.

>>> import ember
>>> x = ember.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""
import importlib as _importlib
import importlib.abc as _importlib_abc
import importlib.util as _importlib_util
import sys as _sys
import warnings as _warnings
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)  # ember.nn, ember.data, ... come from sibling distributions

_SIBLINGS = ("nn", "optim", "data", "parallel", "tune", "onnx")

# The core's names (ember.tensor, ember.float32, ...) are imported by ember._api and copied here on first use
# (PEP 562), so that importing a sibling such as ember.tune does not pay for NumPy and every op until it uses
# them. The core's modules rely on ember._api's import order, so the first import of a core submodule
# (``import ember.autograd`` before anything else) loads the core first, through _CoreFirst.
_loaded = False


def _load() -> None:
    """Import ember._api and copy its names here; a nested call while it loads copies what is there so far."""
    global _loaded
    api = _sys.modules.get("ember._api")
    if api is None:
        if _CORE_FIRST in _sys.meta_path:
            _sys.meta_path.remove(_CORE_FIRST)
        api = _importlib.import_module("ember._api")
    globals().update({k: v for k, v in vars(api).items() if not k.startswith("__") or k == "__version__"})
    _loaded = getattr(api, "_complete", False)


class _CoreFirst(_importlib_abc.MetaPathFinder, _importlib_abc.Loader):
    """Until the core is loaded: an import of a core submodule loads the whole core (in ember._api's order)
    first, then hands out the module that load made."""

    _specs: dict = {}

    def find_spec(self, fullname, path=None, target=None):
        parts = fullname.split(".")
        if parts[0] != "ember" or len(parts) < 2 or parts[1] in _SIBLINGS or parts[1] == "_api":
            return None
        _load()
        module = _sys.modules.get(fullname)
        if module is None:
            return None
        # the import system would run a module again from a spec of its own: hand it this loader instead,
        # which gives back the module the load made (and puts its own spec back)
        self._specs[fullname], module.__spec__ = module.__spec__, None
        return _importlib_util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return _sys.modules[spec.name]

    def exec_module(self, module):
        module.__spec__ = self._specs.pop(module.__name__)


_CORE_FIRST = _CoreFirst()
_sys.meta_path.insert(0, _CORE_FIRST)


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
    if not _loaded:
        _load()
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


def __dir__():
    if not _loaded:
        _load()
    return sorted(globals())


# 1/0, log(0), overflow: results are inf/nan as in PyTorch, which stays silent about them; NumPy would warn
# from inside ember's ops. Only warnings raised in ember's own modules are silenced.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember(\.|$)")
