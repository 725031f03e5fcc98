"""ember.tune's own cost: per-trial bookkeeping in the ask/tell loop, and ``import ember.tune``.

    python benchmarks/tune/bench_overhead.py

1. 1,000 trivial trials (ask, three reports, tell; the trial itself does no work) through
   ``tune.Experiment`` with the journal on disk (``storage_path`` in a temporary folder): wall time per
   trial, target <= 5 ms. The same loop without a journal, and with ASHA instead of FIFO, for comparison.
2. ``import ember.tune`` in a fresh interpreter (best of several runs, interpreter start-up subtracted),
   target 0.3 s; beside it ``import numpy`` alone and ``import ember`` (ember-core, which ember.tune
   needs), and ember.tune's own share: the wall time over ``import ember``, and the self time of every
   ``ember.tune*`` module from ``python -X importtime``.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time

TRIAL_TARGET_MS = 5.0
IMPORT_TARGET_S = 0.3


def time_trials(n: int, storage_path, scheduler: str) -> float:
    """Milliseconds per trivial trial over ``n`` trials."""
    from ember import tune
    exp = tune.Experiment({"lr": tune.loguniform(1e-4, 1e-1), "width": tune.choice([16, 32, 64])},
                          metric="loss", mode="min", scheduler=scheduler, num_samples=n, seed=0,
                          storage_path=storage_path, name="overhead" if storage_path else None)
    started = time.perf_counter()
    while (trial := exp.ask()) is not None:
        for step in range(3):
            if exp.report(trial, {"loss": trial.config["lr"] / (step + 1)}) is not tune.Decision.CONTINUE:
                break
        else:
            exp.tell(trial)
    elapsed = time.perf_counter() - started
    if len(exp.trials) != n:
        raise RuntimeError(f"expected {n} trials, the experiment made {len(exp.trials)}")
    return 1000 * elapsed / n


def _wall(code: str, repeat: int) -> float:
    """Best wall time of ``python -c code`` in a fresh interpreter, seconds."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        best = min(best, time.perf_counter() - started)
    return best


def import_shares(repeat: int) -> dict:
    """Seconds: fresh interpreter, ``import numpy``, ``import ember.tune``, and from -X importtime the
    self time of ember.tune's modules, of the rest of ember, and numpy's cumulative time (best run)."""
    base = _wall("pass", repeat)
    out = {"python_startup": base,
           "numpy": _wall("import numpy", repeat) - base,
           "import ember (core loads on first use)": _wall("import ember", repeat) - base,
           "ember core loaded (ember.Tensor)": _wall("import ember; ember.Tensor", repeat) - base,
           "ember.tune": _wall("import ember.tune", repeat) - base}
    best = None
    for _ in range(repeat):
        text = subprocess.run([sys.executable, "-X", "importtime", "-c", "import ember.tune"],
                              capture_output=True, text=True, check=True).stderr
        tune_self = ember_self = numpy_cum = 0
        for line in text.splitlines():
            match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
            if not match:
                continue
            self_us, cumulative_us, name = int(match[1]), int(match[2]), match[4]
            if name == "ember.tune" or name.startswith("ember.tune."):
                tune_self += self_us
            elif name == "ember" or name.startswith("ember."):
                ember_self += self_us
            elif name == "numpy":
                numpy_cum = cumulative_us
        if best is None or tune_self < best[0]:
            best = (tune_self, ember_self, numpy_cum)
    out["ember.tune own modules (importtime self)"] = best[0] / 1e6
    out["ember core modules (importtime self)"] = best[1] / 1e6
    out["numpy (importtime cumulative)"] = best[2] / 1e6
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5, help="fresh interpreters per import timing")
    args = parser.parse_args(argv)
    ok = True
    print(f"# ask/tell overhead: {args.trials} trivial trials (ask, 3 reports, tell)")
    with tempfile.TemporaryDirectory() as tmp:
        journal_ms = time_trials(args.trials, tmp, "fifo")
    with tempfile.TemporaryDirectory() as tmp:
        asha_ms = time_trials(args.trials, tmp, "asha")
    memory_ms = time_trials(args.trials, None, "fifo")
    ok &= journal_ms <= TRIAL_TARGET_MS
    print(f"{'random + FIFO, journal on disk':<40}{journal_ms:8.3f} ms/trial   target <= {TRIAL_TARGET_MS} ms: "
          f"{'PASS' if journal_ms <= TRIAL_TARGET_MS else 'FAIL'}")
    print(f"{'random + ASHA, journal on disk':<40}{asha_ms:8.3f} ms/trial")
    print(f"{'random + FIFO, no journal':<40}{memory_ms:8.3f} ms/trial")
    print("\n# import time (fresh interpreter, best of %d, start-up subtracted)" % args.repeat)
    shares = import_shares(args.repeat)
    for name, seconds in shares.items():
        print(f"{name:<45}{seconds:8.3f} s")
    total = shares["ember.tune"]
    own = shares["ember.tune own modules (importtime self)"]
    over_core = total - shares["import ember (core loads on first use)"]
    loaded = shares["ember core loaded (ember.Tensor)"]
    print(f"import ember.tune: {total:.3f} s, target {IMPORT_TARGET_S} s: "
          f"{'PASS' if total <= IMPORT_TARGET_S else 'FAIL'}"
          f" (numpy alone {shares['numpy']:.3f} s, ember's core with numpy on first use {loaded:.3f} s;"
          f" ember.tune on top of ember: {over_core * 1000:+.0f} ms wall (a difference of two noisy timings),"
          f" its own modules {own * 1000:.1f} ms by -X importtime)")
    ok &= total <= IMPORT_TARGET_S
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
