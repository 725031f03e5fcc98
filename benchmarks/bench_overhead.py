"""Per-op Python overhead of ember, side by side with PyTorch (CPU) when it is installed.

Run from the repository root (the OpenBLAS variables of some machines distort timings)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_overhead.py

PyTorch is timed in this interpreter if it has ``torch``, otherwise in the one
given by ``--torch-python`` (or ``$EMBER_BENCH_TORCH_PYTHON``), which needs
only torch, not ember. Each figure is the minimum over repeats of the mean
time per call (``timeit``), in microseconds; the tensors are 4x4 float32, so
the figures are per-op overhead, not arithmetic.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import random
import subprocess
import sys
import timeit

#: name, statement, target for ember in µs
CASES = [
    ("a + b (requires_grad)", "a + b", 5.0),
    ("(a * a).sum().backward()", "(a * a).sum().backward()", 40.0),
]


def setup_namespace(lib: str) -> dict:
    """``a`` and ``b``: 4x4 float32 leaves that require grad, in ``lib`` (``"ember"`` or ``"torch"``)."""
    rng = random.Random(0)
    a, b = ([[rng.gauss(0.0, 1.0) for _ in range(4)] for _ in range(4)] for _ in range(2))
    module = importlib.import_module(lib)
    return {name: module.tensor(data, dtype=module.float32, requires_grad=True) for name, data in (("a", a), ("b", b))}


def time_us(stmt: str, namespace: dict, repeat: int) -> float:
    """Minimum over ``repeat`` runs of the mean µs per execution of ``stmt``."""
    timer = timeit.Timer(stmt, globals=namespace)
    number, _ = timer.autorange()  # enough calls for one run to take >= 0.2 s
    number = max(1, number // 2)
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def measure(lib: str, repeat: int) -> dict:
    """``{case name: µs}`` for ``lib``."""
    namespace = setup_namespace(lib)
    return {name: time_us(stmt, namespace, repeat) for name, stmt, _ in CASES}


def torch_figures(torch_python: str | None, repeat: int) -> tuple[dict | None, str]:
    """PyTorch's figures and where they came from (or ``None`` and why not)."""
    if importlib.util.find_spec("torch") is not None:
        import torch
        return measure("torch", repeat), f"torch {torch.__version__} (this interpreter)"
    if not torch_python:
        return None, ("PyTorch not installed: `pip install torch` here, or pass --torch-python "
                      "/path/to/python-with-torch")
    proc = subprocess.run([torch_python, __file__, "--only-torch", "--repeat", str(repeat)],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        return None, f"PyTorch run with {torch_python} failed: {proc.stderr.strip().splitlines()[-1:]}"
    result = json.loads(proc.stdout)
    return result["figures"], f"torch {result['version']} ({torch_python})"


def report(ember_us: dict, torch_us: dict | None) -> bool:
    """Print the table; True if every target is met."""
    import ember
    print(f"ember {ember.__version__}, 4x4 float32, min of repeats, µs per call")
    header = f"{'case':<28}{'ember µs':>10}{'torch µs':>10}{'ratio':>8}   target"
    print(header)
    print("-" * len(header) + "-------")
    all_pass = True
    for name, _, target in CASES:
        mine = ember_us[name]
        theirs = f"{torch_us[name]:10.2f}{mine / torch_us[name]:7.2f}x" if torch_us else f"{'-':>10}{'-':>8}"
        ok = mine <= target
        all_pass &= ok
        print(f"{name:<28}{mine:10.2f}{theirs}   <= {target:g} µs {'PASS' if ok else 'FAIL'}")
    return all_pass


def _lowest(best: dict | None, new: dict) -> dict:
    return dict(new) if best is None else {k: min(v, new[k]) for k, v in best.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timing runs per case; the minimum counts")
    parser.add_argument("--rounds", type=int, default=4, help="alternations of ember and PyTorch")
    parser.add_argument("--torch-python", default=os.environ.get("EMBER_BENCH_TORCH_PYTHON"),
                        help="a Python with torch installed, used when this one has none")
    parser.add_argument("--only-torch", action="store_true", help=argparse.SUPPRESS)  # the subprocess side
    args = parser.parse_args(argv)
    if args.only_torch:
        import torch
        print(json.dumps({"version": torch.__version__, "figures": measure("torch", args.repeat)}))
        return 0
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            print(f"warning: {var} is set; run under `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`", file=sys.stderr)
    # This machine's speed drifts by up to 2x over seconds; alternating the two libraries over several
    # rounds and keeping each one's minimum compares them in the same (fastest) conditions.
    ember_us, torch_us = None, None
    for _ in range(args.rounds):
        ember_us = _lowest(ember_us, measure("ember", args.repeat))
        theirs, source = torch_figures(args.torch_python, args.repeat)
        torch_us = _lowest(torch_us, theirs) if theirs is not None else None
    all_pass = report(ember_us, torch_us)
    print(f"\nPyTorch: {source}")
    print("all targets met" if all_pass else "some targets missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
