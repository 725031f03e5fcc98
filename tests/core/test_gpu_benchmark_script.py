"""``benchmarks/gpu/run.py`` runs and writes its JSON (on the CPU: its smoke test, ``--device cpu``)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_benchmark_smoke_run_on_cpu(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu" / "run.py"), "--device", "cpu", "--quick",
                           "--no-torch", "--parts", "overhead,bandwidth", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert set(report["results"]) == {"overhead", "bandwidth"}
    assert report["results"]["overhead"]["ember"]["dispatch"]["median_s"] > 0
    assert "pinned_gbps" in report["results"]["bandwidth"]["ember"]
    assert "overhead" in proc.stdout and "bandwidth" in proc.stdout


def test_gpu_benchmark_rejects_unknown_parts():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu" / "run.py"), "--parts", "steps,nope"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 2 and "unknown parts ['nope']" in proc.stderr
