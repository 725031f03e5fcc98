"""Write the type stubs of ember's public surface, so that editors and type checkers see what import makes.

Most ``Tensor`` methods (``x.exp()``, ``x + y``) are attached by the ops in ``ember/ops/`` at import, and the
top-level ``ember`` namespace is filled on first use (PEP 562's ``__getattr__`` in ``ember/__init__.py``): neither
a reader of the source nor a type checker finds them. This script imports ember and writes

- ``ember/_tensor.pyi``: the whole ``Tensor`` class (every method, property and operator, private ones included
  so that ember's own modules type-check against it) and the other names of ``ember/_tensor.py``;
- ``ember/__init__.pyi``: the ``ember`` namespace. Classes, modules and constants are re-exported from the module
  that defines them (so "go to definition" reaches the source); functions are declared here with typed
  signatures and their docstrings (most of ember's functions carry no annotations, and a re-export of an
  unannotated function types its results as ``Any``), each under a comment naming the module that defines it.

Signatures come from ``inspect.signature``; types come from the source's annotations where they use only names
the stubs know, else from the parameter's name and default (``dim``, ``dtype``, ``keepdim=False`` ...) and
from the tables below. Defaults are written ``...``. The output is sorted and formatted deterministically;
``tests/core/test_stubs.py`` fails when the stubs differ from what this script writes now.

    uv run python tools/generate_stubs.py          # rewrite the stubs
    uv run python tools/generate_stubs.py --check  # exit status 1 (and the stale files named) if out of date
"""
from __future__ import annotations

import argparse
import ast
import functools
import inspect
import re
import sys
import types
from pathlib import Path

import ember
import ember._tensor as tensor_module

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "packages" / "core" / "src" / "ember"
REGENERATE = "uv run python tools/generate_stubs.py"
LINE_LENGTH = 120

TENSOR = "Tensor"
#: the builtin types, spelled so that a Tensor method or an ember dtype of the same name (``float``) cannot shadow
BUILTINS = {name: f"builtins.{name}" for name in ("bool", "int", "float", "str", "bytes", "complex", "object",
                                                   "tuple", "list", "dict", "set", "slice", "type")}
#: names a source annotation may use, and how the stubs spell them
KNOWN_NAMES = {**BUILTINS, "None": "None", "Tensor": TENSOR, "Size": "_Size", "dtype": "_DType",
               "device": "_Device", "Any": "Any", "Sequence": "Sequence", "Iterable": "Iterable",
               "Iterator": "Iterator", "Callable": "Callable", "Mapping": "Mapping"}
HEADER_IMPORTS = {
    "Any": "from typing import Any",
    "Callable": "from collections.abc import Callable",
    "Iterable": "from collections.abc import Iterable",
    "Iterator": "from collections.abc import Iterator",
    "Mapping": "from collections.abc import Mapping",
    "Sequence": "from collections.abc import Sequence",
    "Self": "from typing_extensions import Self",
    "_DType": "from ember._dtype import dtype as _DType",
    "_Device": "from ember._device import device as _Device",
    "_Size": "from ember._size import Size as _Size",
}

SCALAR = "builtins.float"  # also accepts int and bool
TENSOR_OR_SCALAR = f"{TENSOR} | {SCALAR}"
INTS = "builtins.int | Sequence[builtins.int]"
DEVICE_LIKE = "_Device | builtins.str | builtins.int"
#: parameter types by name (a default of None adds ``| None``)
PARAMETERS = {
    "input": TENSOR, "other": TENSOR_OR_SCALAR, "exponent": TENSOR_OR_SCALAR, "out": TENSOR,
    "dim": "builtins.int", "dim0": "builtins.int", "dim1": "builtins.int", "dims": INTS,
    "dtype": "_DType", "device": DEVICE_LIKE, "tensors": f"Sequence[{TENSOR}]",
    "requires_grad": "builtins.bool", "keepdim": "builtins.bool",
    # scalars whose int default does not mean an int (``alpha=1`` takes 0.5)
    "alpha": SCALAR, "beta": SCALAR, "value": "Any", "p": "Any", "lambd": SCALAR, "min": "Any", "max": "Any",
}
#: a variadic ``*name`` of these names takes ints or one sequence of ints (``x.view(2, 3)``, ``x.view((2, 3))``)
SHAPE_VARARGS = {"size", "shape", "sizes", "dims"}
#: parameter types of one function where the rule by name is wrong
PARAMETER_OVERRIDES = {("pow", "input"): TENSOR_OR_SCALAR, ("where", "input"): TENSOR_OR_SCALAR,
                       ("__getitem__", "key"): "Any", ("__array__", "dtype"): "Any",
                       ("__setitem__", "value"): "Any"}

#: results that are not a Tensor (the default for ops and Tensor methods), by name
RETURNS = {
    "None": ("backward", "set_default_dtype", "set_printoptions", "synchronize", "empty_cache",
             "reset_peak_memory_stats", "save", "set_rng_state", "retain_grad", "__setitem__", "__del__"),
    "builtins.bool": ("allclose", "equal", "__bool__"),
    "builtins.int": ("dim", "ndimension", "numel", "nelement", "element_size", "get_device", "data_ptr",
                     "__len__", "__int__", "__index__", "__hash__", "storage_offset", "memory_allocated",
                     "max_memory_allocated", "memory_reserved", "initial_seed", "seed"),
    "builtins.float": ("__float__",),
    "builtins.str": ("__repr__", "__format__"),
    "_DType": ("get_default_dtype", "promote_types", "result_type"),
    f"Iterator[{TENSOR}]": ("__iter__",),
    f"builtins.tuple[{TENSOR}, ...]": ("chunk", "split", "unbind", "std_mean", "var_mean"),
    # several results (named tuples made at run time, or a Tensor or a tuple depending on the arguments)
    "Any": ("item", "tolist", "numpy", "__array__", "__reduce__", "size", "stride", "type", "max", "min",
            "median", "nanmedian", "sort", "topk", "kthvalue", "aminmax", "slogdet", "unique", "register_hook",
            "register_post_accumulate_grad_hook", "get_printoptions", "printoptions", "fork_rng",
            "manual_seed", "list_backends", "get_plugin_manager", "memory_stats", "load", "move_array",
            "apply_inplace", "register_plugin", "unregister_plugin"),
}
RETURN_BY_NAME = {name: kind for kind, names in RETURNS.items() for name in names}
#: Tensor properties and class attributes whose runtime value does not tell their type
ATTRIBUTES = {"shape": "_Size", "dtype": "_DType", "device": "_Device", "grad": f"{TENSOR} | None",
              "data": TENSOR, "T": TENSOR, "mT": TENSOR, "grad_fn": "Any", "_dtype": "_DType",
              "_device": "_Device", "_vc": "builtins.list[builtins.int]", "_nbytes": "builtins.int",
              "_base": f"{TENSOR} | None", "_grad": f"{TENSOR} | None"}
IN_PLACE_OPERATORS = {"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
                      "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__"}
#: comparisons return a Tensor where ``object`` returns a bool
OVERRIDE_IGNORED = {"__eq__", "__ne__"}
SKIPPED_CLASS_ATTRIBUTES = {"__dict__", "__weakref__", "__doc__", "__module__", "__slots__", "__qualname__",
                            "__annotations__", "__firstlineno__", "__static_attributes__",
                            "__repr__", "__str__", "__del__"}  # object's, as far as a type checker can tell


# -- types ---------------------------------------------------------------------------------------------------------
class _Spell(ast.NodeTransformer):
    """Rewrite a source annotation into the stubs' spelling; raises KeyError on a name the stubs do not know."""

    def visit_Name(self, node):
        return ast.Name(KNOWN_NAMES[node.id])

    def visit_Attribute(self, node):  # ``dt.dtype``: the last part names it
        return ast.Name(KNOWN_NAMES[node.attr])

    def visit_Constant(self, node):
        if node.value is None or node.value is Ellipsis:
            return node
        raise KeyError(repr(node.value))


def source_annotation(annotation) -> str | None:
    """A parameter's or result's annotation in the stubs' spelling, or None if absent or not expressible."""
    if annotation is inspect.Parameter.empty:
        return None
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))
    try:
        return ast.unparse(_Spell().visit(ast.parse(text, mode="eval")).body)
    except (KeyError, SyntaxError):
        return None


def parameter_type(function_name: str, param: inspect.Parameter) -> str:
    spelled = source_annotation(param.annotation)
    if spelled is not None:
        return spelled
    if param.kind is param.VAR_POSITIONAL:
        return INTS if param.name in SHAPE_VARARGS else "Any"
    if param.kind is param.VAR_KEYWORD:
        return "Any"
    default = param.default
    kind = PARAMETER_OVERRIDES.get((function_name, param.name)) or PARAMETERS.get(param.name)
    if param.name == "dim" and default is None:
        kind = INTS
    if kind is None and default is not param.empty and default is not None:
        kind = BUILTINS.get(type(default).__name__) if type(default) in (bool, int, float, str) else None
    if kind is None:
        return "Any"
    return f"{kind} | None" if default is None and kind != "Any" else kind


def return_type(name: str, function, *, tensor_result: bool, method: bool) -> str:
    in_place = name in IN_PLACE_OPERATORS or (name.endswith("_") and not name.startswith("_"))
    if name == "__new__" or (method and in_place):
        return "Self"  # ``x.add_(1)``, ``x += 1``: x itself (a Parameter stays a Parameter)
    if name in RETURN_BY_NAME:
        return RETURN_BY_NAME[name]
    spelled = source_annotation(inspect.signature(function).return_annotation)
    if spelled is not None:
        return spelled
    if name.startswith("is_"):
        return "builtins.bool"
    return TENSOR if tensor_result else "Any"


# -- rendering -----------------------------------------------------------------------------------------------------
def docstring(doc: str | None, indent: str) -> list[str]:
    """The lines of a docstring body (escaped), or ``...`` where there is none."""
    if not doc:
        return [f"{indent}..."]
    text = inspect.cleandoc(doc).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = text.splitlines()
    if len(lines) == 1 and not text.endswith('"') and len(indent) + len(text) + 6 <= LINE_LENGTH:
        return [f'{indent}"""{text}"""']
    body = [f"{indent}{line}" if line.strip() else "" for line in lines]
    return [f'{indent}"""{body[0].lstrip()}', *body[1:], f'{indent}"""']


def parameters(name: str, signature: inspect.Signature, first: str | None) -> list[str]:
    """Each parameter as ``name: type = ...``, with ``/`` and ``*`` where the kinds change; ``first`` (``self``,
    ``cls``) replaces the first parameter of a function attached as a method."""
    params = list(signature.parameters.values())
    if name.startswith("__") and name not in ("__new__", "__init__"):  # an operator takes its operands only
        # (mypy compares ``__iadd__`` with ``__add__``, and the right operand is all that ``a + b`` passes)
        params = [p for p in params if p.kind is not p.KEYWORD_ONLY or p.default is p.empty]
    out = []
    if first is not None:
        out.append(first)
        if params and params[0].kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            params = params[1:]
    saw_positional_only = star_written = False
    for p in params:
        if saw_positional_only and p.kind is not p.POSITIONAL_ONLY:
            out.append("/")
            saw_positional_only = False
        if p.kind is p.KEYWORD_ONLY and not star_written:
            out.append("*")
            star_written = True
        text = f"{p.name}: {parameter_type(name, p)}"
        if p.kind is p.VAR_POSITIONAL:
            text, star_written = "*" + text, True
        elif p.kind is p.VAR_KEYWORD:
            text = "**" + text
        elif p.default is not p.empty:
            text += " = ..."
        saw_positional_only = p.kind is p.POSITIONAL_ONLY
        out.append(text)
    if saw_positional_only:
        out.append("/")
    return out


def function(name: str, fn, *, indent: str = "", first: str | None = None, tensor_result: bool,
             decorators: tuple[str, ...] = (), origin: str | None = None) -> list[str]:
    """A ``def`` with its signature and docstring; ``origin``: the defining module, written as a comment."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a callable without a signature: anything in, anything out
        params, result = [first] if first else [], "Any"
        params += ["*args: Any", "**kwargs: Any"]
    else:
        params = parameters(name, signature, first)
        result = return_type(name, fn, tensor_result=tensor_result, method=first == "self")
    ignore = "  # type: ignore[override]" if name in OVERRIDE_IGNORED else ""
    head = f"{indent}def {name}({', '.join(params)}) -> {result}:{ignore}"
    if len(head) > LINE_LENGTH:
        head = "\n".join([f"{indent}def {name}(", *(f"{indent}    {p}," for p in params),
                          f"{indent}) -> {result}:{ignore}"])
    lines = [f"{indent}# {origin}"] if origin else []
    lines += [f"{indent}{d}" for d in decorators]
    return lines + [head] + docstring(inspect.getdoc(fn) if fn.__doc__ else None, indent + "    ")


def attribute_type(name: str, value) -> str:
    if name in ATTRIBUTES:
        return ATTRIBUTES[name]
    if type(value) in (bool, int, float, str):
        return BUILTINS[type(value).__name__]
    return "Any"


def header(body: list[str], docstring_text: str, extra_imports: list[str]) -> str:
    """The stub's text: a docstring, the imports the body uses (sorted), then the body."""
    text = "\n".join(body)
    used = [line for word, line in HEADER_IMPORTS.items() if re.search(rf"\b{re.escape(word)}\b", text)]
    imports = []
    for line in sorted({"import builtins", *used, *extra_imports}, key=_import_order):
        previous = imports[-1] if imports else ""
        if " as " not in line + previous and previous.startswith(line[:line.find(" import ") + 8]) and line[0] == "f":
            imports[-1] += ", " + line.split()[-1]  # ``from m import a, b``, as isort writes it
        else:
            imports.append(line)
    for i in reversed(range(1, len(imports))):  # a blank line between sections
        if _import_order(imports[i])[0] != _import_order(imports[i - 1])[0]:
            imports.insert(i, "")
    return "\n".join([f'"""{docstring_text}\n\n{GENERATED}\n"""', *imports, "", *body]).rstrip("\n") + "\n"


def _natural(text: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text.lower())]


def _import_order(line: str) -> tuple:
    """isort's (and ruff's) order: the standard library, third-party modules, then ember (first-party); ``import``
    before ``from``; modules and then names in natural order (``int8`` before ``int16``), constants before
    classes before other names."""
    words = line.split()
    module, member, alias = words[1], words[3] if len(words) > 3 else "", words[-1]
    member_kind = 0 if member.isupper() and len(member) > 1 else 1 if member[:1].isupper() else 2
    top = module.split(".")[0]
    section = 0 if top in sys.stdlib_module_names else 2 if top == "ember" else 1
    return section, words[0] == "from", _natural(module), member_kind, _natural(member), _natural(alias)


GENERATED = f"Generated by tools/generate_stubs.py; do not edit. After changing the API, run\n`{REGENERATE}`."


# -- ember/_tensor.pyi ---------------------------------------------------------------------------------------------
@functools.cache
def _defined_names(path: Path) -> set[str]:
    """The names a module's source binds at its top level (def, class, assignment)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def tensor_members(cls=ember.Tensor) -> list[str]:
    """The body of ``class Tensor``: every attribute of the class, sorted by name."""
    body = []
    for name, value in sorted(vars(cls).items()):
        if name in SKIPPED_CLASS_ATTRIBUTES:
            continue
        origin = getattr(value, "__module__", None)
        origin = origin if origin not in (None, tensor_module.__name__) else None
        if isinstance(value, property):
            kind = property_type(name, value)
            body += ["    @property", f"    def {name}(self) -> {kind}:", *docstring(value.__doc__, "        ")]
            if value.fset is not None:
                body += [f"    @{name}.setter", f"    def {name}(self, value: {kind}) -> None: ..."]
        elif isinstance(value, (staticmethod, classmethod)):
            fn = value.__func__
            first = "cls" if isinstance(value, classmethod) or name == "__new__" else None
            decorator = () if name == "__new__" else (f"@{type(value).__name__}",)
            body += function(name, fn, indent="    ", first=first, tensor_result=True, decorators=decorator)
        elif callable(value):  # a private helper's result is unknown; a public method's or operator's, a Tensor
            private = name.startswith("_") and not name.startswith("__")
            body += function(name, value, indent="    ", first="self", tensor_result=not private, origin=origin)
        else:
            body.append(f"    {name}: {attribute_type(name, value)}")
    return body


def property_type(name: str, prop: property) -> str:
    if name in ATTRIBUTES:
        return ATTRIBUTES[name]
    return source_annotation(inspect.signature(prop.fget).return_annotation) or (
        "builtins.bool" if name.startswith(("is_", "_is_")) else "Any")


def tensor_stub() -> str:
    module = tensor_module
    body = ["class Tensor:", *docstring(ember.Tensor.__doc__, "    "), *tensor_members(), ""]
    for name in sorted(_defined_names(Path(module.__file__)) | set(module.__all__)):
        value = getattr(module, name, None)
        if name == "Tensor" or name.startswith("__") or isinstance(value, types.ModuleType):
            continue
        if isinstance(value, types.FunctionType):
            body += function(name, value, tensor_result=False)
        else:
            body.append(f"{name}: Any")
    return header(body, "Type stub of ember._tensor: the Tensor class with the methods the ops attach at import.", [])


# -- ember/__init__.pyi --------------------------------------------------------------------------------------------
def _home(name: str, value) -> str | None:
    """The module of ember-core whose source binds ``name`` to ``value`` at its top level (the first in sorted
    order), where "go to definition" should land; None if none does."""
    for module_name in sorted(m for m in sys.modules if m.startswith("ember.")):
        path = Path(getattr(sys.modules[module_name], "__file__", None) or "/")
        if (path.suffix == ".py" and path.resolve().is_relative_to(PACKAGE.resolve())
                and getattr(sys.modules[module_name], name, None) is value and name in _defined_names(path)):
            return module_name
    return None


def submodules() -> list[str]:
    """The public modules of the ``ember`` namespace, from the workspace's files: ember-core's (``ember.linalg``,
    ``ember.onnx``, ...) and the other distributions' (``ember.nn``, ``ember.data``, ...), which ``ember`` imports
    on first use. (Which of them ``dir(ember)`` lists depends on what the process has imported so far.)"""
    found = {p.stem for p in PACKAGE.iterdir() if p.suffix == ".py"}
    for src in [PACKAGE, *sorted(ROOT.glob("packages/*/src/ember"))]:
        found |= {p.name for p in src.iterdir() if (p / "__init__.py").exists()}
    return sorted(name for name in found if not name.startswith("_"))


def namespace_names() -> list[str]:
    """The names the stub declares: the public names of ``dir(ember)`` but modules, and the modules above."""
    names = {n for n in dir(ember) if (not n.startswith("_") or n == "__version__")
             and not isinstance(getattr(ember, n), types.ModuleType)}
    return sorted(names | set(submodules()))


def namespace_stub() -> str:
    imports, body = [], []
    modules = set(submodules())
    for name in namespace_names():
        if name in modules:
            imports.append(f"from ember import {name} as {name}")
            continue
        value = getattr(ember, name)
        module = getattr(value, "__module__", "")  # some of ember's classes say "ember", where this stub is
        defined_in = module != "ember" and getattr(sys.modules.get(module), getattr(value, "__qualname__", ""),
                                                   None) is value
        if isinstance(value, types.FunctionType) and value.__module__.startswith("ember"):
            ops = value.__module__.startswith(("ember.ops", "ember.linalg"))
            body += ["", *function(name, value, tensor_result=ops, origin=value.__module__)]
        elif isinstance(value, (type, types.FunctionType)) and defined_in:  # a class, or another library's function
            imports.append(f"from {value.__module__} import {value.__qualname__} as {name}")
        elif _home(name, value):  # a constant: ember.float32, ember.hookimpl, ...
            imports.append(f"from {_home(name, value)} import {name} as {name}")
        elif name == "__version__":
            body.append(f"{name}: builtins.str")
        else:
            body.append(f"{name}: {'_DType' if isinstance(value, ember.dtype) else 'Any'}")
    return header(body, "Type stub of the ember namespace, whose names ember/__init__.py loads on first use.", imports)


def stubs() -> dict[Path, str]:
    """Each stub's path and the text this script writes there now."""
    return {PACKAGE / "_tensor.pyi": tensor_stub(), PACKAGE / "__init__.pyi": namespace_stub()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale stubs (exit status 1)")
    args = parser.parse_args(argv)
    wanted = stubs()
    stale = [path for path, text in wanted.items() if not path.exists() or path.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run `{REGENERATE}`", file=sys.stderr)
        return 1 if stale else 0
    for path, text in wanted.items():
        path.write_text(text, encoding="utf-8")
    print(f"wrote {', '.join(str(p.relative_to(ROOT)) for p in wanted)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
