"""ember-nn, ember-data and ember-tune reach ember-core's internals only through ``ember._sibling_api``.

The sources of the sibling distributions are parsed (never imported for this),
and the test fails on

- an import of a private module of another distribution (a dotted name with a part that starts with ``_``:
  ``ember._tensor``, ``ember.ops._common``), ``ember._sibling_api`` excepted;
- a private name imported from, or read off, another distribution's module (``from ember.ops.conversion
  import _parse_to``, ``from ember import _plugins``, ``ember._plugins``);
- a private attribute of core's ``Tensor`` (``x._data``, ``x._vc``, ``Tensor._make``, ...), read or written,
  also through ``getattr``/``setattr``/``hasattr``, on anything but ``self`` or ``cls`` in a class that is not
  itself a tensor;
- an import from the core modules that hold core's machinery under public-looking names (:data:`MACHINERY`).

What must stay is listed in :data:`ALLOWED`, each entry with its reason; an entry that no longer matches
anything fails too, so the list only shrinks. Since ``ember._sibling_api`` is stable only within a minor
version of ember-core, each sibling pins that minor version (and any sibling it depends on likewise).
"""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10, where pytest itself depends on tomli
    import tomli as tomllib

import pytest

import ember
import ember.data
import ember.nn
import ember.optim
import ember.tune

ROOT = Path(__file__).resolve().parents[2]

#: each sibling distribution's source folder, and the top-level ``ember`` subpackages it owns
DISTRIBUTIONS = {
    "nn": (ROOT / "packages/nn/src", ("ember.nn", "ember.optim")),
    "data": (ROOT / "packages/data/src", ("ember.data",)),
    "tune": (ROOT / "packages/tune/src", ("ember.tune",)),
    "onnx": (ROOT / "packages/onnx/src", ("ember.onnx",)),
    "parallel": (ROOT / "packages/parallel/src", ("ember.distributed", "ember.parallel")),
}

#: the one private core module a sibling may import: the documented internal API
SIBLING_API = "ember._sibling_api"

#: core modules whose public-looking names are core's machinery, with what siblings use instead
MACHINERY = {
    "ember.autograd.function": "Op is ember._sibling_api.Op; a custom autograd function is ember.autograd.Function",
    "ember.autograd.grad_mode": "STATE is core's grad-mode state: ember.is_grad_enabled(), ember.no_grad()",
    "ember.ops.conversion": "its argument parser is ember._sibling_api.parse_to; moving a tensor is Tensor.to",
    "ember.ops.loss_common": "declares nothing public (__all__ = []): its shared helpers are in ember._sibling_api",
}

#: (file relative to the repository root, the offending name) -> why it stays
ALLOWED: dict = {
    ("packages/parallel/src/ember/parallel/sync_batchnorm.py", "_BatchNorm"):
        "SyncBatchNorm is a BatchNorm whose statistics cover all ranks: it subclasses ember-nn's _BatchNorm, as "
        "PyTorch's SyncBatchNorm subclasses torch.nn.modules.batchnorm._BatchNorm (same parameters, buffers, "
        "state-dict layout and checks)",
}


def _tensor_private_attributes() -> frozenset:
    """The private attributes of core's Tensor: its slots and its single-underscore class attributes."""
    names = set(ember.Tensor.__slots__) | set(dir(ember.Tensor))
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__"))


def _tensor_class_names() -> frozenset:
    """Names of the classes that are tensors (``ember.Tensor`` and its subclasses, ``Parameter`` and the like):
    in those, ``self._data`` is a tensor's private attribute."""
    seen, todo = set(), [ember.Tensor]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.add(cls)
            todo.extend(cls.__subclasses__())
    return frozenset(c.__name__ for c in seen)


TENSOR_PRIVATE = _tensor_private_attributes()
TENSOR_CLASSES = _tensor_class_names()


def _is_private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def _is_module(dotted: str) -> bool:
    try:
        importlib.import_module(dotted)
    except ImportError:
        return False
    return True


class _Checker(ast.NodeVisitor):
    """Collects ``(line, name, what)`` for each reach into another distribution's internals in one file."""

    def __init__(self, own: tuple, package: str):
        self.own = own              # this distribution's top-level subpackages
        self.package = package      # the package the file is in, to resolve its relative imports
        self.modules: dict = {}     # local name -> dotted module it is bound to
        self.classes: list = []     # enclosing classes: whether each is a tensor class
        self.found: list = []

    def foreign(self, dotted: str) -> bool:
        """Whether ``dotted`` is a module of another distribution (core or a sibling)."""
        return dotted.split(".")[0] == "ember" and not any(dotted == o or dotted.startswith(o + ".")
                                                           for o in self.own)

    def report(self, node, name: str, what: str) -> None:
        self.found.append((node.lineno, name, what))

    def check_module(self, node, dotted: str) -> None:
        if not self.foreign(dotted) or dotted == SIBLING_API:
            return
        if _is_private(dotted):
            self.report(node, dotted.rsplit(".", 1)[-1], f"imports the private module {dotted}")
        elif dotted in MACHINERY:
            self.report(node, dotted, f"imports from {dotted}: {MACHINERY[dotted]}")

    def visit_Import(self, node):
        for alias in node.names:
            self.check_module(node, alias.name)
            if alias.name.split(".")[0] == "ember":
                if alias.asname:
                    self.modules[alias.asname] = alias.name
                else:
                    self.modules["ember"] = "ember"

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level:  # ``from .. import _plugins`` in ember.onnx is ember._plugins, another distribution's
            parts = self.package.split(".")
            module = ".".join(parts[: len(parts) - node.level + 1] + ([module] if module else []))
        if not self.foreign(module):
            return
        self.check_module(node, module)
        for alias in node.names:
            if alias.name == "*":
                continue
            dotted = f"{module}.{alias.name}"
            if dotted == SIBLING_API:
                continue
            if _is_private(alias.name):
                self.report(node, alias.name, f"imports the private name {alias.name} from {module}")
            elif _is_module(dotted):
                self.check_module(node, dotted)
                self.modules[alias.asname or alias.name] = dotted

    def visit_ClassDef(self, node):
        bases = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", None) for b in node.bases}
        self.classes.append(node.name in TENSOR_CLASSES or bool(bases & TENSOR_CLASSES))
        self.generic_visit(node)
        self.classes.pop()

    def visit_Attribute(self, node):
        chain, root = [node.attr], node.value
        while isinstance(root, ast.Attribute):
            chain.append(root.attr)
            root = root.value
        if isinstance(root, ast.Name) and root.id in self.modules:
            dotted = ".".join([self.modules[root.id], *reversed(chain)])
            if self.foreign(dotted) and not dotted.startswith(SIBLING_API) and _is_private(dotted):
                self.report(node, next(p for p in reversed(chain) if p.startswith("_")),
                            f"reads the private {dotted}")
                return  # one report per chain
        self.check_attribute(node, node.value, node.attr)
        self.generic_visit(node)

    def check_attribute(self, node, receiver, name: str) -> None:
        if name not in TENSOR_PRIVATE:
            return
        if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls") and self.classes \
                and not self.classes[-1]:
            return  # an object's own attribute that happens to share a name with a tensor's
        self.report(node, name, f"touches the tensor's private attribute {ast.unparse(receiver)}.{name}")

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr", "hasattr", "delattr") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            self.check_attribute(node, node.args[0], node.args[1].value)
        self.generic_visit(node)


def _reaches(dist: str) -> list:
    """``(file, line, name, what)`` for every reach into another distribution's internals from ``dist``."""
    src, own = DISTRIBUTIONS[dist]
    out = []
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        checker = _Checker(own, ".".join(parts if parts[-1] == "__init__" else parts[:-1]))
        checker.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        rel = path.relative_to(ROOT).as_posix()
        out += [(rel, line, name, what) for line, name, what in checker.found]
    return out


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
def test_sibling_reaches_core_only_through_its_internal_api(dist):
    bad = [f"{rel}:{line}: {what}" for rel, line, name, what in _reaches(dist) if (rel, name) not in ALLOWED]
    assert not bad, ("ember-" + dist + " reaches into another distribution's internals; use ember._sibling_api "
                     "(or add what it needs there) or public API:\n" + "\n".join(bad))


def test_every_allowed_entry_is_still_needed():
    used = {(rel, name) for dist in DISTRIBUTIONS for rel, _, name, _ in _reaches(dist)}
    assert not set(ALLOWED) - used, f"ALLOWED entries that match nothing any more: {sorted(set(ALLOWED) - used)}"


@pytest.mark.parametrize("source, expected", [
    ("from ember._tensor import Tensor", "imports the private module ember._tensor"),
    ("from ember.ops._common import promote", "imports the private module ember.ops._common"),
    ("import ember.ops._common as c", "imports the private module ember.ops._common"),
    ("from ember import _plugins", "imports the private name _plugins from ember"),
    ("import ember\nember._plugins.pm", "reads the private ember._plugins"),
    ("from ember.autograd.grad_mode import STATE", "imports from ember.autograd.grad_mode"),
    ("def f(p):\n    p._data *= 2", "touches the tensor's private attribute p._data"),
    ("def f(p):\n    p._vc[0] += 1", "touches the tensor's private attribute p._vc"),
    ("from ember import Tensor\nTensor._make(a, d)", "touches the tensor's private attribute Tensor._make"),
    ("getattr(t, '_base', None)", "touches the tensor's private attribute t._base"),
    ("class P(Tensor):\n    def f(self):\n        return self._data", "touches the tensor's private attribute "
                                                                          "self._data"),
    ("import ember.tune._x", "imports the private module ember.tune._x"),
    ("from ... import _plugins", "imports the private name _plugins from ember"),
    ("from ...autograd.grad_mode import STATE", "imports from ember.autograd.grad_mode"),
])
def test_the_checker_catches(source, expected):
    checker = _Checker(("ember.nn", "ember.optim"), "ember.nn.modules")
    checker.visit(ast.parse(source))
    assert [what for _, _, what in checker.found if what.startswith(expected)], checker.found


@pytest.mark.parametrize("source", [
    "from ember._sibling_api import array, mark_modified",
    "from ember import _sibling_api as core\ncore.array(t)",
    "from ember.nn.utils._zero_grad import zero_grads",        # the distribution's own private module
    "class Module:\n    def f(self):\n        return self._version",   # a name shared with Tensor, on self
    "from ember.ops import activation as act\nact.elu(x)",
    "from ..utils._zero_grad import zero_grads",               # relative, inside the distribution
])
def test_the_checker_lets_through(source):
    checker = _Checker(("ember.nn", "ember.optim"), "ember.nn.modules")
    checker.visit(ast.parse(source))
    assert checker.found == []


def _project(folder: str) -> dict:
    return tomllib.loads((ROOT / "packages" / folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
def test_sibling_pins_the_minor_version_of_each_ember_distribution_it_needs(dist):
    versions = {_project(folder)["name"]: _project(folder)["version"] for folder in ("core", *DISTRIBUTIONS)}
    needs = {}
    for requirement in _project(dist)["dependencies"]:
        name, specifier = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*(.*)", requirement).groups()
        if name.startswith("ember-"):
            needs[name] = specifier.replace(" ", "")
    assert "ember-core" in needs
    for name, specifier in needs.items():
        major, minor = (int(n) for n in versions[name].split(".")[:2])
        assert specifier == f">={major}.{minor},<{major}.{minor + 1}", (dist, name, specifier)
