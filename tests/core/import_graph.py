"""The import graph of ember's distributions, read from their sources (AST), for the layering tests.

Every ``import`` statement of an ember module counts, at module level or inside a function: an import inside
a function that would close a cycle at module level is the same cycle, only hidden. ``if TYPE_CHECKING:``
blocks are left out (they never run).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOTS = sorted((ROOT / "packages").glob("*/src"))


def module_files() -> dict[str, Path]:
    """``{dotted module name: source file}`` for every module of every distribution under packages/."""
    found = {}
    for src in SOURCE_ROOTS:
        for path in sorted(src.rglob("*.py")):
            parts = list(path.relative_to(src).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """The Import/ImportFrom nodes of a module, outside ``if TYPE_CHECKING:`` blocks."""
    todo = [tree]
    while todo:
        node = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                todo.extend(child.orelse)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            else:
                todo.append(child)


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """``{module: modules whose import it runs}``: the module imported and those of its packages that the
    importer is not itself inside (importing ``a.b.c`` from outside ``a.b`` runs ``a/b/__init__.py`` first)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules}
            targets.update(submodules)
            # ``from <a package this module is in> import <submodules>`` needs only those submodules
            if len(submodules) < len(node.names) or base not in _ancestors(name):
                targets.add(base)
        inside = set(_ancestors(name)) | {name}
        out = set()
        for target in targets:
            if target not in modules:
                continue
            out.add(target)
            out.update(a for a in _ancestors(target) if a not in inside and a in modules)
        out.discard(name)
        graph[name] = out
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)
