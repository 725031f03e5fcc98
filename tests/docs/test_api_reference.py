"""The API reference (docs/api/) lists every public name of every distribution: the site is built and each name
has its entry (an anchor ``ember.xxx.name``) on some page."""
import importlib
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: each public namespace, and whether its names are its ``__all__`` (True) or its public attributes (False; also
#: where ``__all__`` is only what ``ember`` takes from it, as ember.memory's)
NAMESPACES = {
    "ember": False, "ember.autograd": True, "ember.linalg": True, "ember.amp": True, "ember.memory": False,
    "ember.errors": False,
    "ember.cuda": True, "ember.accelerator": False, "ember.random": True, "ember.serialization": True,
    "ember.backends": True, "ember.hookspecs": False, "ember.utils": True, "ember.utils.checkpoint": True,
    "ember.utils.hooks": False,
    "ember.nn": False, "ember.nn.functional": False, "ember.nn.init": True, "ember.nn.utils": False,
    "ember.nn.callbacks": False, "ember.nn.models": True, "ember.optim": False, "ember.optim.lr_scheduler": True,
    "ember.data": False, "ember.tune": True, "ember.onnx": True, "ember.distributed": True, "ember.parallel": True,
}


#: names a module imports for its own use, which are not its API
IMPORTS = {"extend_path", "annotations", "ember.memory.Backend", "ember.memory.as_device", "ember.memory.backends"}


def public_names(name, use_all):
    """The names a user of ``name`` reaches: its ``__all__``, or its attributes that are neither private nor
    modules nor imports for its own use."""
    module = importlib.import_module(name)
    if use_all:
        return set(module.__all__)
    return {n for n in dir(module) if not n.startswith("_") and n not in IMPORTS and f"{name}.{n}" not in IMPORTS
            and not isinstance(getattr(module, n), types.ModuleType)}


@pytest.fixture(scope="module")
def anchors(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--quiet", "--site-dir", str(site)], cwd=ROOT,
                   check=True, timeout=600)
    found = set()
    for page in (site / "api").rglob("index.html"):
        found |= set(re.findall(r'id="(ember[\w.]*)"', page.read_text()))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("namespace", sorted(NAMESPACES))
def test_every_public_name_has_an_entry_in_the_api_reference(namespace, anchors):
    module = importlib.import_module(namespace)

    def listed(name):
        # a function that a submodule of the same name hides (ember.autograd.gradcheck) is listed where it is
        # defined: ember.autograd.gradcheck.gradcheck
        # and a submodule named in __all__ (ember.utils.hooks) by its members
        obj = getattr(module, name)
        full = f"{namespace}.{name}"
        return (full in anchors or f"{getattr(obj, '__module__', '')}.{name}" in anchors
                or isinstance(obj, types.ModuleType) and any(a.startswith(full + ".") for a in anchors))

    missing = sorted(n for n in public_names(namespace, NAMESPACES[namespace]) if not listed(n))
    assert not missing, f"docs/api/ lists no entry for these names of {namespace}: {missing}"
