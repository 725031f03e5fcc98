"""The examples a newcomer runs first do what their docstrings promise."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_trains_the_spiral_classifier():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "SpiralNet(" and "  (head): Linear(in_features=64, out_features=3, bias=True)" in lines
    losses = [float(line.split()[3]) for line in lines if line.startswith("epoch")]
    accuracy = float(lines[-1].split()[1])
    assert len(losses) == 9 and losses[0] > 0.5 and losses[-1] < losses[0] / 10 and accuracy >= 0.97, proc.stdout
