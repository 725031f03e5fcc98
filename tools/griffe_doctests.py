"""A griffe extension for the documentation site: the doctests in ember's docstrings become ``pycon`` code blocks.

ember's docstrings are prose with doctests (``>>>`` lines and their output) rather than Google-style sections, so
Markdown would render a doctest as a paragraph, and read its output (``[[0, 1], [2, 3]]``) as reference links.
Each run of lines from a ``>>>`` line to the next blank line is fenced as a ``pycon`` block instead.
mkdocs.yml loads it (``extensions: [tools/griffe_doctests.py]``).
"""
from __future__ import annotations

import importlib
import re
import types
from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    r"""Wrap each doctest in ``text`` (from a ``>>>`` line to the next blank line) in a ``pycon`` fence.

    ``"Adds.\n\n>>> 1 + 1\n2\n\nDone."`` becomes the same text with a ```` ```pycon ```` line before ``>>> 1 + 1``
    and a ```` ``` ```` line after ``2`` (tests/docs/test_griffe_doctests.py).
    """
    out: list[str] = []
    indent: str | None = None  # the doctest's indentation while inside one
    in_fence = False
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if indent is None and not in_fence and stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
        elif indent is not None and not stripped:
            out.append(f"{indent}```")
            indent = None
        out.append(line)
    if indent is not None:
        out.append(f"{indent}```")
    return "\n".join(out)


_ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|exc|obj):`(~?)([\w.]+)(?:\(\))?`")


def roles_to_crossrefs(text: str, resolve=lambda name: name) -> str:
    r"""Turn the reStructuredText roles of a docstring (``:class:`Foo```, ``:func:`~ember.nn.init.zeros_```)
    into optional cross-references: a link to the entry of the object the role names where the reference has
    one, the name in code where it has none (a private helper, say). ``resolve(name)`` gives the full path of a
    name as seen from the docstring's object; ``~`` shows the last part only, as Sphinx does.

    For example ``:class:`Sampler``` in a docstring of ``ember.data`` becomes
    ``<autoref identifier="ember.data.sampler.Sampler" optional><code>Sampler</code></autoref>``
    (tests/docs/test_griffe_doctests.py).
    """
    def link(m: re.Match) -> str:
        shown = m[2].rsplit(".", 1)[-1] if m[1] else m[2]
        return f'<autoref identifier="{resolve(m[2])}" optional><code>{shown}</code></autoref>'
    return _ROLE.sub(link, text)


def _resolver(obj: griffe.Object):
    """The full path of a name as a role in ``obj``'s docstring means it: from ``obj``'s scope outwards, the
    first part of a dotted name, then the rest; a name found nowhere is taken as a full path."""
    def resolve(name: str) -> str:
        first, _, rest = name.partition(".")
        scope: griffe.Object | None = obj
        while scope is not None:
            if first in scope.members:
                member = scope.members[first]
                path = member.target_path if member.is_alias else member.path  # an import: where it is defined
                return path + (f".{rest}" if rest else "")
            scope = scope.parent
        return name
    return resolve


def _link_roles(obj: griffe.Object) -> None:
    """Turn the roles of the docstrings of ``obj`` and everything it defines into cross-references."""
    if obj.docstring is not None:
        obj.docstring.value = roles_to_crossrefs(obj.docstring.value, _resolver(obj))
    for member in obj.members.values():
        if not member.is_alias:
            _link_roles(member)  # type: ignore[arg-type]


class DoctestBlocks(griffe.Extension):
    """Fences the doctests of every docstring griffe loads, and (once the whole ``ember`` package is loaded)
    turns their reStructuredText roles into cross-references."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _link_roles(pkg)


class SiblingPackages(griffe.Extension):
    """Loads ``ember.nn``, ``ember.data``, ... from their own distributions' source folders into ``ember``.

    ``ember/__init__.py`` extends its ``__path__`` with ``pkgutil.extend_path`` in a form griffe does not
    recognise as a namespace package, so griffe would only see the core's ``ember`` folder. Once the core's
    ``ember`` is loaded, the submodules in every other search path's ``ember`` folder are loaded into it.
    """

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.name != "ember":
            return
        for search_path in loader.finder.search_paths:
            folder = search_path / "ember"
            if folder.is_dir() and folder.resolve() != pkg.filepath.parent.resolve():  # type: ignore[union-attr]
                # parents before their submodules, as griffe's own loading goes
                for parts, path in sorted(loader.finder.iter_submodules(folder), key=lambda item: len(item[0])):
                    loader._load_submodule(pkg, parts, path)
        loader.expand_exports(pkg)
        loader.expand_wildcards(pkg, external=False)
        _add_lazy_exports(pkg)


def _add_lazy_exports(module: griffe.Module) -> None:
    """Names of ``__all__`` that griffe cannot see in the source are added from the module at run time: those a
    module makes on first use (PEP 562 ``__getattr__``, as ``ember.tune`` does) and those bound by tuple or
    chained assignment (``half, float, double = float16, float32, float64``). A class or function becomes an
    alias of its definition; any other object an attribute showing its value."""
    for sub in module.members.values():
        if not sub.is_alias and sub.is_module:
            _add_lazy_exports(sub)  # type: ignore[arg-type]
    if module.path == "ember":  # ember's names come from its stub, __init__.pyi
        return
    exported = [name if isinstance(name, str) else str(name) for name in module.exports or ()]
    if "__getattr__" not in module.members and all(name in module.members for name in exported):
        return
    runtime = importlib.import_module(module.path)
    for name in getattr(runtime, "__all__", ()):
        if name in module.members:
            continue
        obj = getattr(runtime, name)
        if isinstance(obj, (type, types.FunctionType)):
            module.set_member(name, griffe.Alias(name, f"{obj.__module__}.{obj.__qualname__}", parent=module))
        else:
            module.set_member(name, griffe.Attribute(name, value=repr(obj), parent=module))
