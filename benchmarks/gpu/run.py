"""ember's ``cuda`` backend against PyTorch CUDA, in one run of about four minutes on one GPU.

Run from the repository root on a machine with an NVIDIA GPU, ember's CUDA extra and PyTorch with CUDA::

    python benchmarks/gpu/run.py --out gpu-bench.json [--quick] [--parts steps,overhead,...] [--no-torch]

Parts (each in its own try/except: one failing does not lose the others):

- ``steps``: the MLP, CNN and resnet18 training steps of ``benchmarks/workloads`` on ``cuda``, ember and
  PyTorch in turns, each sample a few steps between device synchronizations; median and quartiles, and
  ember's ratio to PyTorch (target: at most 1.5x);
- ``overhead``: microseconds per ``a + b`` on tiny tensors (the host-side cost of an op), ember and PyTorch;
- ``bandwidth``: host-to-device GB/s from pageable memory and from ``pin_memory()`` with
  ``non_blocking=True`` (target: pinned at least 2x pageable);
- ``autocast``: the CNN's step (batch 512) under autocast float16 and bfloat16 against float32;
- ``kernels``: each family of ember's cuda kernels against the ops' own forwards, and the CNN and resnet18
  steps with all kernels, with the plain-``xp`` ones only and with none (which kernels to keep).

Prints a compact table; ``--out`` writes every figure as JSON.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/: the shared workloads

import kernel_parts  # noqa: E402
import parts  # noqa: E402

PARTS = ("steps", "overhead", "bandwidth", "autocast", "kernels")
BUDGET_S = {"steps": 25.0, "overhead": 10.0, "bandwidth": 15.0, "autocast": 30.0, "kernels": 60.0}


def load_libs(use_torch, device):
    import ember
    import ember.nn.functional  # noqa: F401
    import ember.optim  # noqa: F401
    libs = {"ember": ember}
    if use_torch:
        try:
            import torch
        except ImportError:
            return libs
        if not device.startswith("cuda") or torch.cuda.is_available():
            libs["torch"] = torch
    return libs


def machine(libs):
    ember = libs["ember"]
    info = {"python": platform.python_version(), "ember_cuda_available": ember.cuda.is_available(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    try:
        import cupy
        info["cupy"] = cupy.__version__
        info["gpu"] = ember.cuda.get_device_name(0)
    except Exception as exc:
        info["gpu_error"] = f"{type(exc).__name__}: {exc}"
    if "torch" in libs and libs["torch"].cuda.is_available():
        torch = libs["torch"]
        info.update(torch=torch.__version__, torch_gpu=torch.cuda.get_device_name(0),
                    torch_cudnn_allow_tf32=torch.backends.cudnn.allow_tf32,
                    torch_matmul_allow_tf32=torch.backends.cuda.matmul.allow_tf32)
    try:
        import kernel_tables
        info["ember_cuda_kernels_in_effect"] = kernel_tables.in_effect(ember, "cuda")
    except Exception as exc:
        info["kernels_error"] = f"{type(exc).__name__}: {exc}"
    return info


def run_parts(libs, device, selected, scale, save):
    ember = libs["ember"]
    jobs = []
    if "steps" in selected:
        jobs += [(f"steps:{n}", lambda n=n: parts.training_steps(libs, device, n, BUDGET_S["steps"] * scale / 3))
                 for n in parts.WORKLOADS]
    if "overhead" in selected:
        jobs.append(("overhead", lambda: parts.op_overhead(libs, device, BUDGET_S["overhead"] * scale)))
    if "bandwidth" in selected:
        jobs.append(("bandwidth", lambda: parts.h2d_bandwidth(libs, device, BUDGET_S["bandwidth"] * scale)))
    if "autocast" in selected:
        jobs.append(("autocast", lambda: parts.autocast_speedup(libs, device, BUDGET_S["autocast"] * scale)))
    if "kernels" in selected:
        jobs.append(("kernels:families",
                     lambda: kernel_parts.per_family(ember, device, BUDGET_S["kernels"] * scale / 2)))
        jobs.append(("kernels:steps",
                     lambda: kernel_parts.whole_steps(ember, device, BUDGET_S["kernels"] * scale / 2)))
    results = {}
    for key, job in jobs:
        start = time.perf_counter()
        try:
            results[key] = job()
        except Exception as exc:
            results[key] = {"name": key, "error": f"{type(exc).__name__}: {exc}", "text": f"FAILED: {exc}"[:300],
                            "traceback": traceback.format_exc()[-3000:]}
        results[key]["seconds"] = time.perf_counter() - start
        print(_row(key, results[key]), flush=True)
        save(results)  # after each part: a run cut short keeps what it measured
    return results


def _row(key, res):
    mark = {True: "ok  ", False: "MISS", None: "    "}[res.get("passed")]
    return f"{mark} {key:<18} {res.get('text', '')}  ({res['seconds']:.0f} s)"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the figures as JSON to this path")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--quick", action="store_true", help="a quarter of the time budgets (a smoke test)")
    parser.add_argument("--no-torch", action="store_true", help="time ember alone")
    args = parser.parse_args(argv)
    selected = set(args.parts.split(","))
    unknown = selected - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; expected some of {', '.join(PARTS)}")
    libs = load_libs(not args.no_torch, args.device)
    report = {"machine": machine(libs)}
    print(json.dumps(report["machine"]), flush=True)
    if args.device.startswith("cuda") and not libs["ember"].cuda.is_available():
        print("ember sees no CUDA device: nothing to time", file=sys.stderr)
        report["error"] = "ember.cuda.is_available() is False"
    else:
        def save(results):
            report["results"] = results
            if args.out:
                Path(args.out).write_text(json.dumps(report, indent=1, default=str))
        save(run_parts(libs, args.device, selected, 0.25 if args.quick else 1.0, save))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1, default=str))
        print(f"figures written to {args.out}")
    return 0 if "results" in report else 1


if __name__ == "__main__":
    sys.exit(main())
