"""``benchmarks/run.py`` times each library in a worker process of its own, in alternating turns, and says so;
``--same-process`` keeps the older single-process method."""
import importlib
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path, *extra):
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--no-torch", "-k",
                           "op_add", "--no-details", "--repeat", "4", "--min-time", "0.005", "--json", str(out),
                           *extra], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={"EMBER_BENCH_SETTLE": "0", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("same_process", [False, True])
def test_each_library_is_sampled_in_turn(tmp_path, same_process):
    report, stdout = _run(tmp_path, *(["--same-process"] if same_process else []))
    (result,) = report["results"]
    assert report["same_process"] is same_process
    assert set(result["samples_s"]) == {"ember", "numpy"}
    assert all(len(s) == 4 and min(s) > 0 for s in result["samples_s"].values())
    assert result["ember_s"] == statistics.median(result["samples_s"]["ember"])
    said = "all libraries in one process" if same_process else "each library in a process of its own"
    assert said in stdout


def test_a_worker_that_dies_is_named_with_its_exit_status(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    run = importlib.import_module("run")
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"], stdout=subprocess.PIPE, text=True)
    with pytest.raises(RuntimeError, match="benchmark worker torch ended with exit status 3"):
        run._answer(process, "torch")


def test_a_worker_asked_for_an_unknown_workload_says_which_exist():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--worker", "ember", "no_such"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 2 and "no workload named 'no_such'; there are mlp, cnn" in proc.stderr
