"""ember's benchmark suite: each workload in ember, by hand in NumPy, and in PyTorch, side by side.

Run from the repository root, with the OpenBLAS variables that some machines set removed (they make
NumPy's matmul on transposed inputs up to 50x slower)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/run.py [--quick] [-k NAME] [--json PATH]
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/run.py --suite   # both figures the targets use

The targets are ratios to PyTorch in two settings (each workload's ``TARGETS``): one thread per library on the
process CPU clock (``--threads 1 --clock cpu``: time spent descheduled on a shared machine is not counted) and
two threads on the wall clock (``--threads 2``). ``--suite`` runs the script once in each setting and prints
both ratios side by side. A ratio is the median over rounds of ember's time divided by PyTorch's time in the
same round (the contenders take turns within a round), given with its quartiles.

PyTorch is timed when ``import torch`` works in this interpreter; without it the table has the
ember and NumPy columns only. The workloads are in ``benchmarks/workloads/`` (one module each; see
its ``__init__``). For each workload every library is warmed up, then timed in turns — ember,
NumPy, PyTorch, then the reverse order, and so on — ``--repeat`` times; each time is the mean over
enough calls to last ``--min-time`` seconds, and the table gives the median of those times.
Before each time the timer pauses ``EMBER_BENCH_SETTLE`` seconds (0.2) and makes one untimed call, so that
the previous library's spinning BLAS threads do not share the CPUs with the one being timed.

Each library runs each workload in a process of its own (this script with ``--worker``), which times a sample
whenever this process asks, so the turns alternate as before while no library sees another's effects on the
process: importing PyTorch alone took ember's LSTM step from 6.85 to 5.39 ms (glibc malloc's thresholds
grow with the blocks torch's import frees), and ember's own malloc settings (``ember.backends.cpu_malloc``)
would apply to PyTorch. ``--same-process`` times all libraries in this process instead (the method before).
"""
from __future__ import annotations

import argparse
import datetime
import gc
import importlib
import importlib.util
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import time

import numpy as np
from workloads import WORKLOADS

OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
SETTLE = float(os.environ.get("EMBER_BENCH_SETTLE", "0.2"))
#: the setting of each workload's first target; every other setting is judged by the second (two threads, wall)
ONE_THREAD_CPU = "1 thread, cpu clock"
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def limit_threads(n: int) -> None:
    """Run this script again with the BLAS and OpenMP thread pools of NumPy and PyTorch at ``n`` threads.

    NumPy's BLAS reads its thread count once, when it loads, so the variables must be set before the
    interpreter imports NumPy: the script re-executes itself with them (once; the variables tell).
    """
    if all(os.environ.get(v) == str(n) for v in THREAD_VARS):
        return
    os.environ.update({v: str(n) for v in THREAD_VARS})
    os.execv(sys.executable, [sys.executable, *sys.argv])


#: the longest this process waits for a worker's answer (its setup, or one sample), in seconds
WORKER_WAIT_S = 900.0


def load_lib(name: str):
    """The ``ember`` module (with the submodules the workloads use) or the ``torch`` module."""
    if name == "torch":
        return importlib.import_module("torch")
    import ember
    for sub in ("ember.nn", "ember.nn.functional", "ember.optim"):
        importlib.import_module(sub)
    return ember


def load_libs(use_torch: bool) -> dict:
    """``{"ember": ember, "torch": torch}``, without torch when it is not wanted or does not import."""
    libs = {"ember": load_lib("ember")}
    if use_torch and importlib.util.find_spec("torch") is not None:
        libs["torch"] = load_lib("torch")
    return libs


def environment(libs: dict) -> dict:
    """What the figures depend on: versions, CPUs, BLAS, the OpenBLAS variables."""
    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(), "platform": platform.platform(), "machine": platform.machine(),
        "processor": _cpu_model(), "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "ember": libs["ember"].__version__, "numpy": np.__version__,
        "numpy_blas": f"{blas.get('name', '?')} {blas.get('version', '')}".strip(),
        "torch": libs["torch"].__version__ if "torch" in libs else None,
        "torch_threads": libs["torch"].get_num_threads() if "torch" in libs else None,
        "numpy_blas_threads": _blas_threads(),
        "thread_vars_set": {v: os.environ[v] for v in THREAD_VARS if v in os.environ},
        "openblas_vars_set": {v: os.environ[v] for v in OPENBLAS_VARS if v in os.environ},
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    return env


def _blas_threads():
    """NumPy's BLAS thread count, if ``threadpoolctl`` is there to tell (else None)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return next((p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"
                 and "numpy" in p.get("filepath", "")), None)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def print_environment(env: dict) -> None:
    torch = f"torch {env['torch']} ({env['torch_threads']} threads)" if env["torch"] else "torch not installed"
    print(f"{env['date']}  Python {env['python']}  {env['platform']}")
    print(f"CPU: {env['processor']}, {env['cpu_count']} CPUs ({env['cpus_usable']} usable)")
    blas_threads = f", {env['numpy_blas_threads']} threads" if env["numpy_blas_threads"] else ""
    print(f"ember {env['ember']}  NumPy {env['numpy']} ({env['numpy_blas']}{blas_threads})  {torch}")
    if env["thread_vars_set"]:
        print(f"thread limits: {env['thread_vars_set']}")
    load = env["load_average"]
    if load:
        busy = load[0] >= (env["cpus_usable"] or 1)
        hint = "" if env["thread_vars_set"] else " (NumPy's multi-threaded BLAS suffers most; see --threads)"
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
              + (f": the machine is busy, figures are noisy{hint}" if busy else ""))
    for line in openblas_warning(env):
        print(line)
        print(line, file=sys.stderr)
    print()


def openblas_warning(env: dict) -> list:
    """Loud lines when the OpenBLAS variables are set (none when they are not)."""
    if not env["openblas_vars_set"]:
        return []
    bar = "!" * 78
    return [bar, f"WARNING: {env['openblas_vars_set']} set: NumPy's matmul on transposed inputs can be 50x slower.",
            "Rerun under `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`: these figures are not representative.", bar]


def per_call(fn, number: int, clock=time.perf_counter) -> float:
    """Mean seconds per call over ``number`` calls, on ``clock`` (the wall clock, or ``time.process_time``)."""
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number


def calls_for(fn, min_time: float) -> int:
    """How many calls of ``fn`` last about ``min_time`` seconds."""
    n, elapsed = 0, 0.0
    start = time.perf_counter()
    while elapsed < min_time / 5 or n < 1:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
    return max(1, round(min_time / (elapsed / n)))


def settled_sample(fn, number: int, clock) -> float:
    """Seconds per call of ``fn`` over ``number`` calls, after a collection, a pause of :data:`SETTLE` seconds (the
    last library's BLAS threads stop spinning) and one untimed call."""
    gc.collect()
    if SETTLE:
        time.sleep(SETTLE)
        fn()
    return per_call(fn, number, clock)


def make_timer(repeat: int, warmup: int, min_time: float, clock=time.perf_counter):
    """``timer(fns)``: warm each function up, then time them in alternating order; median seconds per call each.

    ``timer(fns, samples)`` also puts every function's samples (seconds per call) in the dict ``samples``.
    """
    def timer(fns: dict, samples: dict | None = None) -> dict:
        for fn in fns.values():
            for _ in range(warmup):
                fn()
        numbers = {name: calls_for(fn, min_time) for name, fn in fns.items()}
        samples = {} if samples is None else samples
        samples.update({name: [] for name in fns})
        order = list(fns)
        for r in range(repeat):
            for name in (order if r % 2 == 0 else order[::-1]):
                samples[name].append(settled_sample(fns[name], numbers[name], clock))
        return {name: statistics.median(s) for name, s in samples.items()}
    return timer


def worker(name: str, workload: str, clock: str, min_time: float, warmup: int, threads: int | None) -> int:
    """``--worker``: set up library ``name``'s side of ``workload`` ("numpy": the version by hand), then time a
    sample (:func:`settled_sample`) each time a line ``sample`` comes on stdin, answering with a JSON line
    ``{"seconds": per call}``; ``{"ready": calls per sample}`` first."""
    w = next(w for w in WORKLOADS if w.NAME == workload)
    if name == "numpy":
        fn = w.setup_numpy()
    else:
        lib = load_lib(name)
        if threads and name == "torch":
            lib.set_num_threads(threads)
        fn = w.setup(lib)
    for _ in range(warmup):
        fn()
    number = calls_for(fn, min_time)
    print(json.dumps({"ready": number}), flush=True)
    timing = time.process_time if clock == "cpu" else time.perf_counter
    for line in sys.stdin:
        if line.strip() != "sample":
            break
        print(json.dumps({"seconds": settled_sample(fn, number, timing)}), flush=True)
    return 0


def _answer(process, name: str) -> dict:
    """The next JSON line of worker ``name``, within :data:`WORKER_WAIT_S` (an error naming it otherwise)."""
    ready, _, _ = select.select([process.stdout], [], [], WORKER_WAIT_S)
    line = process.stdout.readline() if ready else None
    if not line:
        process.kill()
        why = "gave no answer" if line is None else f"ended with exit status {process.wait(timeout=10)}"
        raise RuntimeError(f"benchmark worker {name} {why} (its traceback, if any, is above on stderr)")
    return json.loads(line)


def isolated_samples(workload: str, names: list, repeat: int, args) -> dict:
    """``{library: [seconds per call, ...]}``: each library's side of ``workload`` in a worker process of its own,
    sampled in alternating turns as :func:`make_timer` does."""
    command = [sys.executable, os.path.abspath(__file__), "--clock", args.clock, "--min-time", str(args.min_time),
               *(["--threads", str(args.threads)] if args.threads else []), "--worker-warmup", str(args.warmup)]
    processes = {name: subprocess.Popen([*command, "--worker", name, workload], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True) for name in names}
    try:
        for name, process in processes.items():
            _answer(process, name)
        samples: dict = {name: [] for name in names}
        for r in range(repeat):
            for name in (names if r % 2 == 0 else names[::-1]):
                processes[name].stdin.write("sample\n")
                processes[name].stdin.flush()
                samples[name].append(_answer(processes[name], name)["seconds"])
        return samples
    finally:
        for process in processes.values():
            if process.stdin:
                process.stdin.close()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def profile_text(fn, top: int, min_time: float = 1.0) -> str:
    """cProfile of ``fn`` run for about ``min_time`` seconds (at least 3 calls): its ``top`` functions by own time."""
    import cProfile
    import io
    import pstats
    number = max(3, calls_for(fn, min_time))
    profiler = cProfile.Profile()
    profiler.runcall(per_call, fn, number)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime")
    stats.print_stats(top)
    body = out.getvalue().split("\n")
    start = next(i for i, line in enumerate(body) if "ncalls" in line)
    return f"{number} calls\n" + "\n".join(line for line in body[start:] if line.strip())


def paired_ratio(a: list, b: list) -> tuple:
    """``(median, p25, p75)`` of the per-round ratios ``a[i] / b[i]`` (samples taken in the same round)."""
    ratios = sorted(x / y for x, y in zip(a, b))
    q = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) > 1 else [ratios[0]] * 3
    return statistics.median(ratios), q[0], q[2]


def setting_of(threads: int | None, clock: str) -> str:
    """The setting a run's figures belong to: the one-thread CPU-clock one, or that of its threads and clock."""
    if threads == 1 and clock == "cpu":
        return ONE_THREAD_CPU
    return f"{threads or 'default'} threads, {clock} clock"


def run_workload(w, libs: dict, timer, with_details: bool, profile: int = 0, setting: str = "",
                 isolated=None) -> dict:
    """Time one workload in every library; its figures, ratios, target and verdict.

    ``isolated(names)``, when given, times the libraries in worker processes (:func:`isolated_samples`);
    otherwise ``timer`` times them in this process.
    """
    names = [k for k in ("ember", "numpy", "torch") if k in libs or (k == "numpy" and getattr(w, "setup_numpy", None))]
    samples: dict = {}
    if isolated is not None:
        samples = isolated(names)
        seconds = {name: statistics.median(s) for name, s in samples.items()}
    else:
        fns = {name: w.setup_numpy() if name == "numpy" else w.setup(libs[name]) for name in names}
        seconds = timer(fns, samples)
        del fns  # free the models before the details, which measure memory
    profiled = profile_text(w.setup(libs["ember"]), profile) if profile else None
    gc.collect()
    ember_s, numpy_s, torch_s = seconds["ember"], seconds.get("numpy"), seconds.get("torch")
    paired = paired_ratio(samples["ember"], samples["torch"]) if "torch" in samples else None
    vs_torch = paired[0] if paired else None
    limit = w.TARGETS[0 if setting == ONE_THREAD_CPU else 1]
    target = "-" if limit is None else f"<= {limit:g}x PyTorch"
    passed = None if limit is None or vs_torch is None else vs_torch <= limit
    result = {"name": w.NAME, "title": w.TITLE, "ember_s": ember_s, "numpy_s": numpy_s, "torch_s": torch_s,
              "ember_vs_torch": vs_torch, "ember_vs_torch_quartiles": paired[1:] if paired else None,
              "ember_vs_numpy": ember_s / numpy_s if numpy_s else None, "setting": setting,
              "target": target, "passed": passed, "details": [], "profile": profiled,
              "samples_s": samples}
    if with_details and getattr(w, "details", None):
        result["details"] = w.details(libs, timer)
    return result


def _time(s) -> str:
    if s is None:
        return "-"
    return f"{s * 1e6:.2f} µs" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def _ratio(r, quartiles=None) -> str:
    if r is None:
        return "-"
    return f"{r:.2f}x" if not quartiles else f"{r:.2f}x ({quartiles[0]:.2f}-{quartiles[1]:.2f})"


def _verdict(passed) -> str:
    return {True: "PASS", False: "FAIL", None: "n/a"}[passed]


def print_table(results: list) -> None:
    header = ("workload", "ember", "NumPy", "PyTorch", "ember/PyTorch (p25-p75)", "ember/NumPy", "target", "result")
    rows = [(r["name"], _time(r["ember_s"]), _time(r["numpy_s"]), _time(r["torch_s"]),
             _ratio(r["ember_vs_torch"], r["ember_vs_torch_quartiles"]),
             _ratio(r["ember_vs_numpy"]), r["target"], _verdict(r["passed"])) for r in results]
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(header))]

    def line(row):  # names and targets to the left, figures to the right
        cells = (c.ljust(wd) if i in (0, 6) else c.rjust(wd) for i, (c, wd) in enumerate(zip(row, widths)))
        return "  ".join(cells).rstrip()
    print(line(header))
    print("-" * len(line(header)))
    for row in rows:
        print(line(row))
    details = [d for r in results for d in r["details"]]
    if details:
        print()
    for d in details:
        print(f"{d['name']}: {d['text']}; target {d['target']}: {_verdict(d['passed'])}")
    print()
    for r in results:
        print(f"  {r['name']:<20} {r['title']}")
    for r in results:
        if r["profile"]:
            print(f"\nprofile of ember's {r['name']}, by own time: {r['profile']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats, short samples: a smoke run")
    parser.add_argument("-k", "--filter", default="", metavar="NAME", help="only workloads whose name contains NAME")
    parser.add_argument("--json", metavar="PATH", help="also write the environment and figures to PATH")
    parser.add_argument("--repeat", type=int, help="timed samples per library (default 15, 3 with --quick)")
    parser.add_argument("--min-time", type=float, help="seconds each sample lasts at least (default 0.1, 0.02 quick)")
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch out even if it is installed")
    parser.add_argument("--no-details", action="store_true", help="skip the FLOP/s and memory figures")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also profile ember's side of each workload (cProfile); print its N costliest functions")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="run NumPy's BLAS and PyTorch with N threads (default: each library's own default)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time on the wall clock or the process CPU clock (the one-thread targets use cpu)")
    parser.add_argument("--suite", action="store_true",
                        help="run once at 1 thread on the CPU clock and once at 2 threads on the wall clock, and "
                             "print both ratios with their targets")
    parser.add_argument("--same-process", action="store_true",
                        help="time every library in this process (by default each runs in a process of its own)")
    parser.add_argument("--worker", nargs=2, metavar=("LIBRARY", "WORKLOAD"), help=argparse.SUPPRESS)
    parser.add_argument("--worker-warmup", type=int, default=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.suite:
        return run_suite(args)
    if args.threads:
        limit_threads(args.threads)
    if args.worker:
        if args.worker[1] not in {w.NAME for w in WORKLOADS}:
            parser.error(f"no workload named {args.worker[1]!r}; there are {', '.join(w.NAME for w in WORKLOADS)}")
        return worker(*args.worker, args.clock, args.min_time or 0.1, args.worker_warmup, args.threads)
    repeat = args.repeat or (3 if args.quick else 15)
    args.min_time = min_time = args.min_time or (0.02 if args.quick else 0.1)
    args.warmup = 1 if args.quick else 3
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    timer = make_timer(repeat, warmup=args.warmup, min_time=min_time, clock=clock)
    setting = setting_of(args.threads, args.clock)

    libs = load_libs(not args.no_torch)
    if args.threads and "torch" in libs:
        libs["torch"].set_num_threads(args.threads)
    env = environment(libs)
    print_environment(env)
    chosen = [w for w in WORKLOADS if args.filter in w.NAME]
    if not chosen:
        parser.error(f"no workload matches {args.filter!r}; there are {', '.join(w.NAME for w in WORKLOADS)}")
    results = []
    for w in chosen:
        print(f"running {w.NAME} ...", file=sys.stderr, flush=True)
        isolated = None if args.same_process else (
            lambda names, w=w: isolated_samples(w.NAME, names, repeat, args))
        results.append(run_workload(w, libs, timer, not args.no_details, args.profile, setting, isolated))
    print_table(results)
    verdicts = [r["passed"] for r in results] + [d["passed"] for r in results for d in r["details"]]
    print(f"\n{verdicts.count(True)} targets met, {verdicts.count(False)} missed, {verdicts.count(None)} not judged "
          f"(PyTorch {'missing' if 'torch' not in libs else 'present'}); {setting}; medians of {repeat} samples; "
          f"{'all libraries in one process' if args.same_process else 'each library in a process of its own'}")
    for line in openblas_warning(env):
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "setting": setting, "repeat": repeat, "min_time_s": min_time,
                       "same_process": args.same_process, "results": results}, f, indent=2)
    return 0


#: the two settings of ``--suite``: (label, arguments)
SUITE = (("1 thread, CPU clock", ["--threads", "1", "--clock", "cpu"]),
         ("2 threads, wall clock", ["--threads", "2", "--clock", "wall"]))


def run_suite(args) -> int:
    """Run this script in each setting of :data:`SUITE` (a process each: thread counts are fixed at start) and
    print one table of both settings' ratios and verdicts."""
    import subprocess
    import tempfile
    passthrough = [a for a in sys.argv[1:] if a not in ("--suite",)]
    if args.json:  # each setting writes its own file; the suite writes the combined one
        i = passthrough.index("--json")
        del passthrough[i:i + 2]
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in SUITE:
            path = os.path.join(tmp, "figures.json")
            print(f"== {label} ==", flush=True)
            done = subprocess.run([sys.executable, os.path.abspath(__file__), *passthrough, *extra, "--json", path])
            if done.returncode != 0:
                return done.returncode
            with open(path) as f:
                runs[label] = json.load(f)
    print("\n== both settings: ember / PyTorch, median of per-round ratios (p25-p75) ==")
    header = ["workload"] + [cell for label, _ in SUITE for cell in (label, "target", "result")]
    rows = []
    names = [r["name"] for r in runs[SUITE[0][0]]["results"]]
    for name in names:
        row = [name]
        for label, _ in SUITE:
            r = next(r for r in runs[label]["results"] if r["name"] == name)
            row += [_ratio(r["ember_vs_torch"], r["ember_vs_torch_quartiles"]), r["target"], _verdict(r["passed"])]
        rows.append(row)
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(c.ljust(wd) for c, wd in zip(row, widths)).rstrip())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
