"""DataLoader throughput (samples per second) of ember, side by side with PyTorch (CPU) when it is installed.

Run from the repository root (the OpenBLAS variables of some machines distort timings)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_data.py

Cases (the datasets are in ``data_bench_datasets.py``, NumPy only, the same class for both libraries):

(a) an in-memory ``TensorDataset`` of 60,000 x 784 float32 rows and int64 labels, batch 256, shuffled, no workers;
(b) 20,000 3x32x32 uint8 images read with a NumPy random crop (pad 4) and horizontal flip per item,
    batch 128, shuffled, ``num_workers=2``; the time to the first batch (worker start-up) is a separate figure;
(c) ``default_collate`` of 256 samples ``(float32 tensor of shape (784,), int)``.

A run of (a) or (b) makes a fresh iterator, takes one warm-up batch, then times the rest of the epoch (or,
with ``--quick``, a fixed number of batches). PyTorch is timed in this interpreter if it has ``torch``,
otherwise in the one given by ``--torch-python`` (or ``$EMBER_BENCH_TORCH_PYTHON``), which needs only torch
and NumPy. The two libraries alternate over ``--rounds``; each figure is the median of all its runs.
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data_bench_datasets import AugmentedImages, mnist_like  # noqa: E402

#: key, description, target for ember/PyTorch throughput
CASES = [
    ("tensor", "(a) TensorDataset 60000x784 f32, batch 256, shuffle, 0 workers", 1.0),
    ("augment", "(b) crop+flip 20000x3x32x32 u8, batch 128, shuffle, 2 workers", 1.0),
    ("collate", "(c) default_collate 256 x (784 f32 tensor, int)", 1.0),
]


class Library:
    """The pieces of ember or PyTorch a case needs, under one set of names."""

    def __init__(self, name: str):
        self.name = name
        if name == "ember":
            import ember
            from ember.data import DataLoader, TensorDataset, default_collate
            self.version, self.from_numpy, self.manual_seed = ember.__version__, ember.from_numpy, ember.manual_seed
        else:
            import torch
            from torch.utils.data import DataLoader, TensorDataset, default_collate
            self.version, self.from_numpy, self.manual_seed = torch.__version__, torch.from_numpy, torch.manual_seed
        self.DataLoader, self.TensorDataset, self.default_collate = DataLoader, TensorDataset, default_collate


def time_epoch(loader, max_batches: int | None) -> tuple[float, float]:
    """(seconds to the first batch, samples per second over the batches after it)."""
    start = time.perf_counter()
    it = iter(loader)
    next(it)
    first = time.perf_counter()
    samples = 0
    for i, batch in enumerate(it):
        samples += len(batch[1])
        if max_batches is not None and i + 1 >= max_batches:
            break
    elapsed = time.perf_counter() - first
    del it
    return first - start, samples / elapsed


def measure(lib_name: str, repeat: int, quick: bool) -> dict:
    """``{case: {"per_s": [samples/s of each run], "startup_s": [...]}}`` for one library; errors as strings."""
    lib = Library(lib_name)
    lib.manual_seed(0)
    results: dict = {}

    def loader_runs(key, make_loader, max_batches):
        try:
            loader = make_loader()
            runs = [time_epoch(loader, max_batches) for _ in range(repeat)]
            results[key] = {"per_s": [r[1] for r in runs], "startup_s": [r[0] for r in runs]}
        except Exception as exc:  # a half-written loader must not hide the other figures
            results[key] = f"{type(exc).__name__}: {exc}"
        gc.collect()

    x, y = mnist_like()
    tensors = lib.TensorDataset(lib.from_numpy(x), lib.from_numpy(y))
    loader_runs("tensor", lambda: lib.DataLoader(tensors, batch_size=256, shuffle=True), 60 if quick else None)
    images = AugmentedImages()
    loader_runs("augment", lambda: lib.DataLoader(images, batch_size=128, shuffle=True, num_workers=2),
                40 if quick else None)

    batch = [(lib.from_numpy(row), int(label)) for row, label in zip(x[:256], y[:256])]
    timer = timeit.Timer(lambda: lib.default_collate(batch))
    number = 50 if quick else 200
    results["collate"] = {"per_s": [256 * number / t for t in timer.repeat(repeat=max(repeat, 3), number=number)]}
    return {"version": lib.version, "figures": results}


def torch_figures(torch_python: str | None, repeat: int, quick: bool) -> tuple[dict | None, str]:
    """PyTorch's figures and where they came from (or ``None`` and why not)."""
    if importlib.util.find_spec("torch") is not None:
        result = measure("torch", repeat, quick)
        return result["figures"], f"torch {result['version']} (this interpreter)"
    if not torch_python:
        return None, ("PyTorch not installed: `pip install torch` here, or pass --torch-python "
                      "/path/to/python-with-torch")
    cmd = [torch_python, __file__, "--only-torch", "--repeat", str(repeat)] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        return None, f"PyTorch run with {torch_python} failed: {proc.stderr.strip().splitlines()[-1:]}"
    result = json.loads(proc.stdout)
    return result["figures"], f"torch {result['version']} ({torch_python})"


def merge(into: dict, new: dict) -> None:
    """Append ``new``'s runs to ``into``'s (an error string replaces everything)."""
    for key, value in new.items():
        if isinstance(value, str) or isinstance(into.get(key), str):
            into[key] = value if isinstance(value, str) else into[key]
            continue
        slot = into.setdefault(key, {})
        for field, runs in value.items():
            slot.setdefault(field, []).extend(runs)


def summarise(runs: dict) -> dict:
    """Medians of each case's runs: ``{case: {"per_s": ..., "startup_s": ...}}`` (or the error string)."""
    return {key: value if isinstance(value, str) else {f: statistics.median(v) for f, v in value.items()}
            for key, value in runs.items()}


def report(ember_fig: dict, torch_fig: dict | None) -> dict:
    """Print the table; the rows as a dict for ``--json``."""
    header = f"{'case':<66}{'ember/s':>11}{'torch/s':>11}{'ratio':>8}   target"
    print(header)
    print("-" * (len(header) + 12))
    rows = {}
    for key, description, target in CASES:
        mine, theirs = ember_fig.get(key), (torch_fig or {}).get(key)
        row = {"description": description, "target_ratio": target, "ember_per_s": None, "torch_per_s": None,
               "ratio": None, "pass": None}
        if isinstance(mine, str):
            row["ember_error"] = mine
        elif mine:
            row["ember_per_s"] = mine["per_s"]
        if isinstance(theirs, str):
            row["torch_error"] = theirs
        elif theirs:
            row["torch_per_s"] = theirs["per_s"]
        if row["ember_per_s"] and row["torch_per_s"]:
            row["ratio"] = row["ember_per_s"] / row["torch_per_s"]
            row["pass"] = row["ratio"] >= target
        cells = [f"{v:11.0f}" if v else f"{'-':>11}" for v in (row["ember_per_s"], row["torch_per_s"])]
        ratio = f"{row['ratio']:7.2f}x" if row["ratio"] else f"{'-':>8}"
        verdict = "" if row["pass"] is None else ("PASS" if row["pass"] else "FAIL")
        print(f"{description:<66}{cells[0]}{cells[1]}{ratio}   >= {target:g}x {verdict}")
        for side in ("ember", "torch"):
            if f"{side}_error" in row:
                print(f"    {side} failed: {row[f'{side}_error']}")
        startups = [fig[key].get("startup_s") if isinstance((fig or {}).get(key), dict) else None
                    for fig in (ember_fig, torch_fig)]
        if key == "augment" and any(startups):
            row["ember_startup_s"], row["torch_startup_s"] = startups
            shown = [f"{s * 1e3:8.0f} ms" if s else f"{'-':>11}" for s in startups]
            print(f"{'    worker start-up (iter() to first batch)':<66}{shown[0]}{shown[1]}")
        rows[key] = row
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case and round")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of ember and PyTorch")
    parser.add_argument("--quick", action="store_true", help="fewer batches per run, one round")
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    parser.add_argument("--torch-python", default=os.environ.get("EMBER_BENCH_TORCH_PYTHON"),
                        help="a Python with torch installed, used when this one has none")
    parser.add_argument("--only-torch", action="store_true", help=argparse.SUPPRESS)  # the subprocess side
    args = parser.parse_args(argv)
    if args.only_torch:
        print(json.dumps(measure("torch", args.repeat, args.quick)))
        return 0
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            print(f"warning: {var} is set; run under `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`", file=sys.stderr)
    rounds = 1 if args.quick else args.rounds
    # The speed of a small machine drifts over seconds; alternating the libraries compares them alike.
    ember_runs, torch_runs, source, version = {}, {}, "", ""
    for _ in range(rounds):
        mine = measure("ember", args.repeat, args.quick)
        version = mine["version"]
        merge(ember_runs, mine["figures"])
        theirs, source = torch_figures(args.torch_python, args.repeat, args.quick)
        if theirs is None:
            torch_runs = None
        elif torch_runs is not None:
            merge(torch_runs, theirs)
    print(f"ember {version}, samples per second (median of {rounds * args.repeat} runs per case), "
          f"{os.cpu_count()} CPUs")
    rows = report(summarise(ember_runs), summarise(torch_runs) if torch_runs else None)
    print(f"\nPyTorch: {source}")
    verdicts = [row["pass"] for row in rows.values()]
    print("all targets met" if all(v is True for v in verdicts) else "some targets missed or not measured")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ember": version, "torch": source, "quick": args.quick, "rounds": rounds,
                       "repeat": args.repeat, "cases": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
