"""The type stubs (``ember/_tensor.pyi``, ``ember/__init__.pyi``) are current, complete, carry the docstrings, and
let mypy check code written against ember; every distribution ships ``py.typed``."""
import ast
import inspect
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import ember
from ember import Tensor

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "tools" / "generate_stubs.py"
CORE = ROOT / "packages" / "core" / "src" / "ember"
TENSOR_STUB = CORE / "_tensor.pyi"
NAMESPACE_STUB = CORE / "__init__.pyi"
REGENERATE = "uv run python tools/generate_stubs.py"


def typed_packages() -> dict:
    """{distribution: the package directories it must mark with ``py.typed``}: ember-core marks ``ember``; the
    others own portions of the ``ember`` namespace (no ``ember/__init__.py``), and PEP 561 wants each such
    portion's packages marked (mypy looks for ``ember/nn/py.typed`` where ``ember.nn`` is installed)."""
    typed = {}
    for src in sorted(ROOT.glob("packages/*/src/ember")):
        dist = src.parents[1].name
        typed[dist] = ["ember"] if (src / "__init__.py").exists() else \
            [f"ember/{p.name}" for p in sorted(src.iterdir()) if (p / "__init__.py").exists()]
    return typed


TYPED = typed_packages()


def stub_tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def tensor_stub_members() -> dict:
    """The stub's ``class Tensor`` body: {name: the def node, or None for an attribute}."""
    (cls,) = [n for n in stub_tree(TENSOR_STUB).body if isinstance(n, ast.ClassDef) and n.name == "Tensor"]
    members = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            members.setdefault(node.name, node)  # a property's getter comes before its setter
        elif isinstance(node, ast.AnnAssign):
            members[node.target.id] = None
    return members


def namespace_stub_names() -> dict:
    """The names ``ember/__init__.pyi`` binds: {name: the def node, or None for an import or attribute}."""
    names = {}
    for node in stub_tree(NAMESPACE_STUB).body:
        if isinstance(node, ast.FunctionDef):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign):
            names[node.target.id] = None
        elif isinstance(node, ast.ImportFrom):
            names.update({alias.asname: None for alias in node.names if alias.asname == alias.name})
    return names


def test_stubs_are_what_the_generator_writes_now():
    # a fresh interpreter: what this process imported (or attached) must not change the answer
    proc = subprocess.run([sys.executable, str(GENERATOR), "--check"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"the .pyi stubs are out of date; regenerate them with `{REGENERATE}`:\n" \
                                 f"{proc.stdout}{proc.stderr}"


def test_every_public_tensor_attribute_and_operator_is_in_the_stub():
    members = tensor_stub_members()
    public = {n for n in dir(Tensor) if not n.startswith("_")}
    operators = {n for n in vars(Tensor) if n.startswith("__") and callable(getattr(Tensor, n))} \
        - {"__repr__", "__str__", "__del__", "__init_subclass__", "__subclasshook__"}
    assert {"exp", "backward", "shape", "grad", "sum", "__add__", "__radd__", "__getitem__", "__matmul__"} <= \
        set(members)
    assert not (public | operators) - set(members), f"missing from {TENSOR_STUB.name}; run `{REGENERATE}`"


def test_every_public_name_of_ember_is_in_the_stub():
    names = namespace_stub_names()
    public = {n for n in dir(ember) if not n.startswith("_")}
    assert {"tensor", "Tensor", "float32", "Size", "no_grad", "nn", "linalg", "bool", "__version__"} <= set(names)
    assert not public - set(names), f"missing from {NAMESPACE_STUB.name}; run `{REGENERATE}`"


def test_stubs_carry_the_docstrings():
    """Hovering a method or function shows its documentation: each stub def has the runtime docstring."""
    checked = 0
    for name, node in tensor_stub_members().items():
        runtime = getattr(Tensor, name)
        runtime = runtime.fget if isinstance(runtime, property) else runtime
        if node is not None and getattr(runtime, "__doc__", None):
            assert ast.get_docstring(node) == inspect.getdoc(runtime), f"Tensor.{name}"
            checked += 1
    for name, node in namespace_stub_names().items():
        if node is not None:
            assert ast.get_docstring(node) == inspect.getdoc(getattr(ember, name)), f"ember.{name}"
            checked += 1
    assert checked > 400
    assert "tensor([1.])" in ast.get_docstring(tensor_stub_members()["exp"])  # its example, ``ember.exp(...)``


def test_each_distribution_marks_its_packages_typed():
    assert TYPED["core"] == ["ember"] and TYPED["nn"] == ["ember/nn", "ember/optim"]
    unmarked = [f"packages/{dist}/src/{p}" for dist, packages in TYPED.items() for p in packages
                if not (ROOT / "packages" / dist / "src" / p / "py.typed").is_file()]
    assert not unmarked, f"these packages need an empty py.typed file (PEP 561): {unmarked}"


USER_CODE = """\
import ember
import ember.nn
from ember import nn

x = ember.tensor([1.0], requires_grad=True)
y: ember.Tensor = x.exp() + 1
y.sum().backward()
dtype: ember.dtype = ember.float32
size: ember.Size = ember.Size([2, 3])
with ember.no_grad():
    z: ember.Tensor = ember.zeros(2, 3, dtype=ember.float32).add_(1.0).T
layer = nn.Linear(2, 3)
optimizer = ember.optim.SGD(layer.parameters(), lr=0.1)  # ember.optim is imported on first use
{extra}
"""


def mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    (tmp_path / "user.py").write_text(source)
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "user.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_mypy_checks_code_written_against_ember(tmp_path):
    ok = mypy(tmp_path, USER_CODE.format(extra=""))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = mypy(tmp_path, USER_CODE.format(extra="x.no_such_method()\nember.no_such_function()\n"
                                                 "w: int = x.exp()"))
    assert bad.returncode == 1
    errors = [line for line in bad.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 3, bad.stdout
    assert '"Tensor" has no attribute "no_such_method"' in errors[0]
    assert 'Module has no attribute "no_such_function"' in errors[1]
    assert 'expression has type "Tensor", variable has type "int"' in errors[2]


@pytest.mark.slow
def test_wheels_ship_the_stubs_and_py_typed(tmp_path):
    uv = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    assert uv, "this test needs uv (it is in the dev dependency group)"
    for dist, packages in TYPED.items():
        subprocess.run([uv, "build", "--quiet", "--wheel", "--out-dir", str(tmp_path / dist),
                        str(ROOT / "packages" / dist)], check=True, timeout=300)
        (wheel,) = (tmp_path / dist).glob("*.whl")
        with zipfile.ZipFile(wheel) as whl:
            names = set(whl.namelist())
        assert {f"{p}/py.typed" for p in packages} <= names, dist
        if dist == "core":
            assert {"ember/__init__.pyi", "ember/_tensor.pyi"} <= names
        else:
            assert not any(n.endswith(".pyi") or n == "ember/py.typed" for n in names), textwrap.shorten(
                str(sorted(names)), 200)
