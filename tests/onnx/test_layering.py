"""Layering of ember.onnx: its modules import each other without a cycle, with every ember import at module top,
and ember-core imports neither ember.onnx nor ember.nn (ember-onnx sits above both)."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

import ember
import ember.onnx

ONNX_SRC = Path(ember.onnx.__file__).parent
CORE_SRC = Path(ember.__file__).parent
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def module_name(path: Path, root: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def modules(root: Path, package: str) -> dict:
    """``{module name: path}`` of every module under ``root`` (the directory of ``package``)."""
    return {module_name(p, root, package): p for p in sorted(root.rglob("*.py"))}


def imported(path: Path, name: str, known: dict) -> tuple:
    """The absolute names ``path`` (module ``name``) imports at module level and inside functions, each a set.

    ``from . import x`` counts as importing the submodule ``x`` where there is one, else the package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top, nested = set(), set()

    def visit(node, in_function):
        if isinstance(node, ast.Import):
            found = {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            base = ".".join(filter(None, [base, node.module]))
            found = {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
        else:
            found = set()
        (nested if in_function else top).update(found)
        for child in ast.iter_child_nodes(node):
            visit(child, in_function or isinstance(node, _SCOPES))

    visit(ast.parse(path.read_text(), str(path)), False)
    return top, nested


def find_cycle(graph: dict):
    """A list of modules forming an import cycle in ``{module: modules it imports}``, or None."""
    state = {}  # module -> "open" while on the stack, "done" after

    def walk(module, stack):
        state[module] = "open"
        for dep in sorted(graph.get(module, ())):
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep]
            if dep not in state and (cycle := walk(dep, stack + [dep])):
                return cycle
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (cycle := walk(module, [module])):
            return cycle
    return None


ONNX_MODULES = modules(ONNX_SRC, "ember.onnx")


def onnx_graph() -> dict:
    return {name: {m for m in imported(path, name, ONNX_MODULES)[0] if m in ONNX_MODULES and m != name}
            for name, path in ONNX_MODULES.items()}


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_ember_onnx_modules_import_each_other_without_a_cycle():
    graph = onnx_graph()
    assert "ember.onnx._import_ops" in graph["ember.onnx._import_module"]  # the graph does see the imports
    assert find_cycle(graph) is None


def test_the_importer_is_layered_errors_registry_handlers_module_load():
    graph = onnx_graph()
    handlers = {"ember.onnx._import_ops", "ember.onnx._import_nn_ops", "ember.onnx._import_rnn",
                "ember.onnx._import_scan"}
    for handler in handlers:
        assert graph[handler] == {"ember.onnx._import_node"}, handler
    leaves = {"ember.onnx._import_limits", "ember.onnx._import_tensors"}  # limits, tensors: on errors alone
    assert graph["ember.onnx._import_node"] == {"ember.onnx.errors"} | leaves
    for leaf in leaves:
        assert graph[leaf] == {"ember.onnx.errors"}, leaf
    assert "ember.onnx._import_validate" in graph["ember.onnx._import_module"]  # validation before building
    assert handlers <= graph["ember.onnx._import_module"]  # the one module that registers every handler
    assert "ember.onnx._import_module" in graph["ember.onnx._import"]


@pytest.mark.parametrize("name", sorted(ONNX_MODULES))
def test_no_ember_module_is_imported_inside_a_function(name):
    nested = imported(ONNX_MODULES[name], name, ONNX_MODULES)[1]
    assert not {m for m in nested if m == "ember" or m.startswith("ember.")}


def test_ember_core_imports_neither_ember_onnx_nor_ember_nn():
    core = modules(CORE_SRC, "ember")
    offenders = {}
    for name, path in core.items():
        top, nested = imported(path, name, core)
        wrong = {m for m in top | nested if m.split(".")[:2] in (["ember", "onnx"], ["ember", "nn"])}
        if wrong:
            offenders[name] = wrong
    assert "ember._tensor" in core and "ember.onnx" not in core  # the walk saw the core, without ember.onnx
    assert offenders == {}


def test_an_importer_module_imported_first_in_a_fresh_interpreter_loads_models():
    code = ("import ember.onnx._import_ops, onnx, ember\n"
            "from onnx import helper, TensorProto as T\n"
            "x, y = (helper.make_tensor_value_info(name, T.FLOAT, [2]) for name in 'xy')\n"
            "g = helper.make_graph([helper.make_node('Relu', ['x'], ['y'])], 'g', [x], [y])\n"
            "print(ember.onnx.load(helper.make_model(g))(ember.tensor([-1.0, 2.0])).tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[0.0, 2.0]"
