"""Built wheels work in a fresh virtual environment, and ``ember.*`` resolves across distributions.

Builds the ember-core wheel from this checkout and a throwaway sibling
distribution, ``ember-fakeext`` (``ember/fakeext/`` without ``ember/__init__.py``,
plus an ``ember`` entry point giving a backend), installs them with uv
(dependencies come from PyPI) into new virtual environments and runs code
there. This is what proves that ``ember/__init__.py``'s ``pkgutil.extend_path``
lets sibling packages (ember-nn, ember-data, ...) provide ``ember.<name>``.
"""
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "packages" / "core"
NN = ROOT / "packages" / "nn"
DATA = ROOT / "packages" / "data"
TUNE = ROOT / "packages" / "tune"
ONNX = ROOT / "packages" / "onnx"
BUILD_TIMEOUT = 300  # the first build fetches hatchling, the first install numpy & co. from PyPI
RUN_TIMEOUT = 120

FAKEEXT_PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.24"]
build-backend = "hatchling.build"

[project]
name = "ember-fakeext"
version = "0.0.1"
requires-python = ">=3.10"
dependencies = ["ember-core"]

[project.entry-points.ember]
fakeext = "ember.fakeext"

[tool.hatch.build.targets.wheel]
packages = ["src/ember"]
"""

FAKEEXT_INIT = '''\
"""A sibling distribution's subpackage of ember, with a backend plugin for device type 'fake'."""
import ember
from ember.backends import cpu

GREETING = "hello from ember-fakeext"


class FakeBackend(type(cpu.BACKEND)):
    name = "fake"

    def describe(self):
        return "fake backend of ember-fakeext"


@ember.hookimpl
def ember_backends():
    return [FakeBackend()]
'''


def clean_env() -> dict:
    """The environment without anything that would point Python or uv at this checkout's environment."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT", "PYTHONSTARTUP"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def sh(*cmd, timeout=RUN_TIMEOUT, env=None) -> str:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          env=env or clean_env(), stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        pytest.fail(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n"
                    f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    return proc.stdout


@pytest.fixture(scope="module")
def uv() -> str:
    found = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("the packaging test needs uv (it is in the dev dependency group): pip install uv")
    return found


@pytest.fixture(scope="module")
def wheels(tmp_path_factory, uv) -> dict:
    tmp = tmp_path_factory.mktemp("wheels")
    dist = tmp / "dist"
    sh(uv, "build", "--quiet", "--wheel", "--out-dir", dist, CORE, timeout=BUILD_TIMEOUT)
    fakeext = tmp / "ember-fakeext"
    (fakeext / "src" / "ember" / "fakeext").mkdir(parents=True)
    (fakeext / "pyproject.toml").write_text(FAKEEXT_PYPROJECT)
    (fakeext / "src" / "ember" / "fakeext" / "__init__.py").write_text(FAKEEXT_INIT)
    sh(uv, "build", "--quiet", "--wheel", "--out-dir", dist, fakeext, timeout=BUILD_TIMEOUT)
    sh(uv, "build", "--quiet", "--wheel", "--out-dir", dist, NN, timeout=BUILD_TIMEOUT)
    sh(uv, "build", "--quiet", "--wheel", "--out-dir", dist, DATA, timeout=BUILD_TIMEOUT)
    sh(uv, "build", "--quiet", "--wheel", "--out-dir", dist, TUNE, timeout=BUILD_TIMEOUT)
    sh(uv, "build", "--quiet", "--wheel", "--out-dir", dist, ONNX, timeout=BUILD_TIMEOUT)
    (core,) = dist.glob("ember_core-*.whl")
    (ext,) = dist.glob("ember_fakeext-*.whl")
    (nn,) = dist.glob("ember_nn-*.whl")
    (data,) = dist.glob("ember_data-*.whl")
    (tune,) = dist.glob("ember_tune-*.whl")
    (onnx,) = dist.glob("ember_onnx-*.whl")
    return {"core": core, "fakeext": ext, "nn": nn, "data": data, "tune": tune, "onnx": onnx}


def wheel_contents(wheel: Path) -> tuple:
    """The file names in ``wheel`` and its METADATA text."""
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        metadata = next(whl.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    return names, metadata


def make_venv(uv, path: Path, *wheels) -> Path:
    sh(uv, "venv", "--quiet", "--python", sys.executable, path)
    python = path / "bin" / "python"
    sh(uv, "pip", "install", "--quiet", "--python", python, *wheels, timeout=BUILD_TIMEOUT)
    return python


@pytest.fixture(scope="module")
def core_env(tmp_path_factory, uv, wheels) -> Path:
    """A fresh environment with the ember-core wheel alone."""
    return make_venv(uv, tmp_path_factory.mktemp("core") / "venv", wheels["core"])


@pytest.fixture(scope="module")
def both_env(tmp_path_factory, uv, wheels) -> Path:
    """A fresh environment with the ember-core and ember-fakeext wheels."""
    return make_venv(uv, tmp_path_factory.mktemp("both") / "venv", wheels["core"], wheels["fakeext"])


@pytest.fixture(scope="module")
def nn_env(tmp_path_factory, uv, wheels) -> Path:
    """A fresh environment with the ember-core and ember-nn wheels."""
    return make_venv(uv, tmp_path_factory.mktemp("nn") / "venv", wheels["core"], wheels["nn"])


def run_in(python: Path, source: str, env=None) -> str:
    return sh(python, "-c", textwrap.dedent(source), env=env)


def test_core_wheel_holds_the_package_and_the_console_script(wheels):
    with zipfile.ZipFile(wheels["core"]) as whl:
        names = set(whl.namelist())
        entry_points = next(whl.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert {"ember/__init__.py", "ember/__main__.py", "ember/hookspecs.py", "ember/backends/cpu.py"} <= names
    assert not any(n.startswith(("tests/", "ember/tests/")) for n in names)
    assert "ember = ember.__main__:main" in entry_points


def test_sibling_wheel_has_no_ember_init(wheels):
    with zipfile.ZipFile(wheels["fakeext"]) as whl:
        names = whl.namelist()
    assert "ember/fakeext/__init__.py" in names
    assert "ember/__init__.py" not in names


def test_fresh_env_imports_ember_and_runs_autograd(core_env):
    out = run_in(core_env, """
        import ember
        x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (x * x).sum()
        y.backward()
        print(ember.__file__)
        print(y.item(), x.grad.tolist(), y.grad_fn.name())
    """)
    where, result = out.splitlines()
    assert where.startswith(str(core_env.parents[1])), "ember must come from the fresh environment"
    assert result == "14.0 [2.0, 4.0, 6.0] SumBackward0"


def test_fresh_env_has_only_the_builtin_backends(core_env):
    # cuda registers through ember-core's own entry point; without CuPy it is there but unavailable
    out = run_in(core_env, """
        import sys
        import ember
        print(ember.list_backends(), ember.cuda.is_available(), "cupy" in sys.modules)
        try:
            import ember.fakeext
        except ImportError:
            print("no fakeext")
        try:
            import ember.nn
        except ImportError:
            print("no nn")
    """)
    assert out.splitlines() == ["['cpu', 'cuda'] False False", "no fakeext", "no nn"]


def test_console_script_runs_in_fresh_env(core_env, wheels):
    out = sh(core_env.parent / "ember", "info")
    version = wheels["core"].name.split("-")[1]
    assert f"\ndistributions:\n  ember-core {version}\n\n" in out
    assert "\nbackends:\n  cpu " in out
    assert "strict" not in out


def test_sibling_distribution_in_the_same_env(both_env):
    out = run_in(both_env, """
        import ember.fakeext
        import ember
        print(ember.fakeext.GREETING)
        print(sorted(ember.list_backends()))
        print(ember.ones(2, device="fake").device)
    """)
    assert out.splitlines() == ["hello from ember-fakeext", "['cpu', 'cuda', 'fake']", "fake"]
    info = sh(both_env.parent / "ember", "info")
    assert "ember-fakeext 0.0.1" in info
    assert "fake     fake backend of ember-fakeext  [plugin fakeext]" in info


def test_sibling_distribution_on_another_path_entry(tmp_path, uv, wheels, core_env):
    """ember-fakeext in a separate directory: only ``extend_path`` in ember/__init__.py can find it."""
    target = tmp_path / "elsewhere"
    sh(uv, "pip", "install", "--quiet", "--python", core_env, "--no-deps", "--target", target, wheels["fakeext"],
       timeout=BUILD_TIMEOUT)
    assert not (target / "ember" / "__init__.py").exists()
    out = run_in(core_env, """
        import ember, ember.fakeext
        print(ember.__file__)
        print(ember.fakeext.__file__)
        print(ember.fakeext.GREETING)
    """, env=dict(clean_env(), PYTHONPATH=str(target)))
    core_file, ext_file, greeting = out.splitlines()
    assert core_file.startswith(str(core_env.parents[1]))
    assert ext_file == str(target / "ember" / "fakeext" / "__init__.py")
    assert greeting == "hello from ember-fakeext"


def test_nn_wheel_holds_nn_and_optim_but_not_ember_init(wheels):
    with zipfile.ZipFile(wheels["nn"]) as whl:
        names = set(whl.namelist())
    assert {"ember/nn/__init__.py", "ember/nn/functional/__init__.py", "ember/optim/__init__.py"} <= names
    assert "ember/__init__.py" not in names


def test_core_and_nn_wheels_train_a_model_in_a_fresh_env(nn_env):
    out = run_in(nn_env, """
        import ember
        from ember import nn
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        x = ember.randn(32, 3)
        y = x.sum(1, keepdim=True)
        losses = []
        for _ in range(50):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        print(nn.__file__)
        print(losses[-1] < losses[0] / 10, list(model.state_dict()))
    """)
    where, result = out.splitlines()
    assert where.startswith(str(nn_env.parents[1]))
    assert result == "True ['0.weight', '0.bias', '2.weight', '2.bias']"
    info = sh(nn_env.parent / "ember", "info")
    assert "ember-nn 0.1.0" in info


def test_core_and_data_wheels_load_batches_with_workers_in_a_fresh_env(tmp_path, uv, wheels):
    with zipfile.ZipFile(wheels["data"]) as whl:
        names = set(whl.namelist())
    assert "ember/data/dataloader.py" in names and "ember/__init__.py" not in names
    python = make_venv(uv, tmp_path / "venv", wheels["core"], wheels["data"])
    out = run_in(python, """
        import ember
        from ember.data import DataLoader, TensorDataset
        ds = TensorDataset(ember.arange(10.0), ember.arange(10))
        print([y.tolist() for _, y in DataLoader(ds, batch_size=4, num_workers=2)])
        try:
            ember.nn
        except AttributeError as exc:
            print(exc)
    """)
    batches, missing_nn = out.splitlines()
    assert batches == "[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]"
    assert "install ember-nn" in missing_nn  # ember-data needs only ember-core


def test_core_and_tune_wheels_run_an_experiment_in_a_fresh_env(tmp_path, uv, wheels):
    with zipfile.ZipFile(wheels["tune"]) as whl:
        names = set(whl.namelist())
    assert "ember/tune/tuner.py" in names and "ember/__init__.py" not in names
    python = make_venv(uv, tmp_path / "venv", wheels["core"], wheels["tune"])
    script = tmp_path / "experiment.py"  # a file, so that trial processes can import the trainable
    script.write_text(textwrap.dedent("""
        import sys

        import ember
        from ember import tune

        def train(config):
            for step in range(3):
                tune.report({"loss": (config["x"] - 0.25) ** 2 + 1.0 / (step + 1)})

        if __name__ == "__main__":
            tuner = tune.Tuner(train, param_space={"x": tune.grid_search([0.0, 0.25, 1.0])},
                               tune_config=tune.TuneConfig(metric="loss", mode="min", max_concurrent_trials=2),
                               run_config=tune.RunConfig(storage_path=sys.argv[1], name="exp", verbose=0))
            results = tuner.fit()
            print(len(results), results.get_best_result().config["x"])
            try:
                ember.nn
            except AttributeError as exc:
                print(exc)
    """))
    out = sh(python, script, tmp_path / "results")
    trials, missing_nn = out.splitlines()[-2:]
    assert trials == "3 0.25"
    assert "install ember-nn" in missing_nn  # ember-tune needs only ember-core


def test_core_wheel_ships_no_ember_onnx_and_no_onnx_extra(wheels, core_env):
    names, metadata = wheel_contents(wheels["core"])
    assert "ember/hookspecs.py" in names  # the ember_onnx_lowerings hook stays in the core
    assert not any(n.startswith("ember/onnx/") for n in names)
    assert "Provides-Extra: onnx" not in metadata and "Requires-Dist: onnx" not in metadata
    out = run_in(core_env, """
        import ember
        try:
            ember.onnx
        except AttributeError as exc:
            print(exc)
    """)
    assert "install ember-onnx (`pip install ember-onnx`) to get ember.onnx" in out


def test_onnx_wheel_exports_verifies_and_loads_with_core_and_nn_in_a_fresh_env(tmp_path, uv, wheels):
    names, metadata = wheel_contents(wheels["onnx"])
    assert {"ember/onnx/__init__.py", "ember/onnx/_import_module.py", "ember/onnx/lowerings/__init__.py"} <= names
    assert "ember/__init__.py" not in names and not any(n.startswith("ember/nn/") for n in names)
    requires = {line.split(": ", 1)[1].replace(" ", "") for line in metadata.splitlines()
                if line.startswith("Requires-Dist: ")}
    assert {"ember-core<0.2,>=0.1", "ember-nn<0.2,>=0.1"} <= requires
    python = make_venv(uv, tmp_path / "venv", wheels["core"], wheels["nn"], wheels["onnx"])
    out = run_in(python, """
        import io
        import ember
        from ember import nn
        from ember.onnx import export, load, verify
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).eval()
        x = ember.randn(5, 3)
        f = io.BytesIO()
        export(model, x, f)
        loaded = load(f.getvalue())
        print(ember.onnx.__file__)
        print(isinstance(loaded, nn.Module), list(loaded.state_dict()) == list(model.state_dict()))
        print(ember.allclose(loaded(x), model(x)), max(verify(model, x)) < 1e-5)
    """)
    where, loaded, same = out.splitlines()
    assert where.startswith(str(python.parents[1]))
    assert loaded == "True True"
    assert same == "True True"
