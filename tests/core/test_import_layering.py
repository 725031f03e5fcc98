"""The distributions' modules form a layered import graph: no cycles (hidden ones inside functions included),
each module imports first, on its own, in a fresh interpreter, in any order, and no import hook is needed."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import pytest

from . import import_graph

MODULES = sorted(import_graph.module_files())


def test_the_graph_covers_every_distribution():
    tops = {m.split(".")[1] for m in MODULES if "." in m}
    assert {"autograd", "ops", "nn", "optim", "data", "tune"} <= tops
    assert "ember.autograd.function" in import_graph.edges(import_graph.module_files())["ember.ops._common"]


def test_no_import_cycles():
    cycles = import_graph.cycles(import_graph.edges(import_graph.module_files()))
    assert cycles == [], "import cycles (each a set of modules that import one another):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def _package(tmp_path, files: dict[str, str]):
    for rel, text in files.items():
        path = tmp_path / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return {name: path for name, path in _modules_under(tmp_path / "src").items()}


def _modules_under(src):
    found = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def test_a_cycle_hidden_in_a_function_is_found(tmp_path):
    modules = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from .b import g\n",
        "pkg/b.py": "def g():\n    from .a import f\n",
        "pkg/c.py": "from . import a\n",
    })
    assert import_graph.cycles(import_graph.edges(modules)) == [["pkg.a", "pkg.b"]]


def test_a_cycle_through_a_package_init_is_found(tmp_path):
    # importing pkg.low first runs pkg/sub/__init__.py, which imports pkg.low back
    modules = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low.py": "from .sub.leaf import x\n",
        "pkg/sub/__init__.py": "from ..low import y\n",
        "pkg/sub/leaf.py": "x = 1\n",
    })
    assert import_graph.cycles(import_graph.edges(modules)) == [["pkg.low", "pkg.sub"]]


def test_type_checking_imports_and_submodule_imports_of_the_own_package_are_not_cycles(tmp_path):
    modules = _package(tmp_path, {
        "pkg/__init__.py": "from . import a, b\n",
        "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
        "pkg/b.py": "from . import a\n",
    })
    assert import_graph.cycles(import_graph.edges(modules)) == []


# Each child starts from this process forked before any ember module was imported (NumPy, pluggy and
# safetensors preloaded, so each child pays only for ember's own modules).
_CHILD = """
import importlib, os, sys
import numpy, pluggy, safetensors
assert not [m for m in sys.modules if m == "ember" or m.startswith("ember.")]
failed = []
for group in {groups!r}:
    pid = os.fork()
    if pid == 0:
        try:
            for name in group:
                importlib.import_module(name)
            finders = [f for f in sys.meta_path if type(f).__module__.startswith("ember")]
            assert not finders, f"an import hook of ember's is installed: {{finders}}"
            import ember
            x = ember.tensor([1.0, 2.0], requires_grad=True)
            (x * x).sum().backward()
            assert x.grad.tolist() == [2.0, 4.0] and ember.Tensor is sys.modules["ember._tensor"].Tensor
        except BaseException:
            import traceback
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        failed.append(group)
print(failed)
"""


def _run_groups(groups) -> list:
    proc = subprocess.run([sys.executable, "-c", _CHILD.format(groups=groups)], capture_output=True, text=True,
                          timeout=900, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [proc.stdout.strip(), proc.stderr[-6000:]]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the check forks a clean child per module")
def test_every_module_imports_first_in_a_fresh_interpreter():
    out, err = _run_groups([[m] for m in MODULES])
    assert out == "[]", f"modules that fail to import first: {out}\n{err}"


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the check forks a clean child per order")
@pytest.mark.parametrize("seed", range(3))
def test_every_module_imports_in_a_random_order(seed):
    order = MODULES[:]
    random.Random(seed).shuffle(order)
    out, err = _run_groups([order])
    assert out == "[]", f"importing in the order {order} fails:\n{err}"
