"""``import ember`` is cheap: the core's names load on first use, so a sibling such as ember.tune imports
without NumPy; a core submodule imported first imports what it needs itself (no import hook), and the core's
names, loaded later, are the same objects."""
import subprocess
import sys
import textwrap

import pytest


def run(source: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(source)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_importing_a_sibling_does_not_load_the_core():
    out = run("""
        import sys
        import ember.tune
        print("numpy" in sys.modules, "ember._tensor" in sys.modules)
        import ember
        print(ember.float32, ember.tensor([1.0, 2.0]).sum().item(), "numpy" in sys.modules)
    """)
    assert out.splitlines() == ["False False", "ember.float32 3.0 True"]


@pytest.mark.parametrize("module", ["ember.autograd.function", "ember._tensor", "ember.ops.arith",
                                    "ember.serialization", "ember.backends.cpu", "ember._dtype"])
def test_a_core_submodule_imported_first_then_the_core_share_one_set_of_modules(module):
    out = run(f"""
        import sys
        import {module}
        import ember
        mod = sys.modules["{module}"]
        assert ember.Tensor is sys.modules["ember._tensor"].Tensor  # one Tensor class: nothing ran twice
        assert mod.__spec__.name == "{module}" and type(mod.__spec__.loader).__name__ == "SourceFileLoader"
        x = ember.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        print(x.grad.tolist())
    """)
    assert out.strip() == "[2.0, 4.0]"


def test_names_from_ember_and_dir():
    out = run("""
        from ember import Tensor, no_grad
        import ember
        print(Tensor.__name__, callable(no_grad), "tensor" in dir(ember), hasattr(ember, "no_such_name"))
    """)
    assert out.strip() == "Tensor True True False"


def test_a_low_core_module_imported_first_loads_only_what_it_needs():
    out = run("""
        import sys
        import ember._dtype, ember._plugins, ember.hookspecs
        print("ember._api" in sys.modules, "ember.ops.arith" in sys.modules, "ember._tensor" in sys.modules)
        import ember
        print(ember.float32 is sys.modules["ember._dtype"].float32, "ember._api" in sys.modules)
    """)
    assert out.splitlines() == ["False False False", "True True"]
