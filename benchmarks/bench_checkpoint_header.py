"""How long ``ember.load`` takes on a big safetensors header, for one or two ember sources, one core.

Builds one file per case in a temporary directory (about ``--mib`` MiB of header each), then loads each in a
fresh process pinned to one CPU, timing ``ember.load`` with the process CPU clock. Cases:

- ``plain``: a plain safetensors header of many 1-byte tensors (what ``safetensors.save_file`` writes for a
  state dict with very many entries);
- ``ember``: the same tensors with ember's metadata naming each one;
- ``collide``: ember metadata holding one set of ints that all have the same hash (``i * (2**61 - 1)``), which a
  Python set stores in time quadratic in their number unless it is refused.

Give the ember sources to compare as ``label=DIR`` (``DIR`` is put first on ``PYTHONPATH``: a
``packages/core/src`` of an older checkout, e.g. from ``git archive``); run with the OpenBLAS variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_checkpoint_header.py \\
        old=/tmp/old/packages/core/src new=packages/core/src --mib 55 --cases plain,ember --rounds 3

Printed per case and source: the median and range of the rounds, and what ``load`` ended with (``ok`` or the
exception's class). A round that runs past ``--limit`` seconds is stopped and printed as ``>limit``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile

_CHILD = r"""
import sys, time
import ember
t0 = time.process_time()
try:
    ember.load(sys.argv[1]); end = "ok"
except Exception as exc:
    end = type(exc).__name__
print(time.process_time() - t0, end)
"""


def _write(path, header, data=b""):
    raw = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + data)


def _build(kind, mib, path):
    if kind == "collide":
        n = int(mib * 2**20 / 21)  # each int is about 20 digits and a comma
        root = {"set": [i * (2**61 - 1) for i in range(n)]}
        _write(path, {"__metadata__": {"ember": json.dumps({"version": 2, "root": root})}})
        return n
    per = 66 if kind == "plain" else 125  # bytes of header per tensor
    n = int(mib * 2**20 / per)
    header = {f"t{i}": {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i in range(n)}
    if kind == "ember":
        root = {"dict": [[f"t{i}", {"tensor": f"t{i}", "device": "cpu"}] for i in range(n)]}
        header["__metadata__"] = {"ember": json.dumps({"version": 1, "root": root}, separators=(",", ":"))}
    _write(path, header, bytes(n))
    return n


def _run(src, path, limit):
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, "-c", _CHILD, path]
    if hasattr(os, "sched_setaffinity"):
        cmd = ["taskset", "-c", "0", *cmd]
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=limit, check=True).stdout
    except subprocess.TimeoutExpired:
        return None, f">{limit}s"
    seconds, end = out.split()
    return float(seconds), end


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("sources", nargs="+", help="label=DIR, DIR first on PYTHONPATH")
    p.add_argument("--mib", type=float, default=55)
    p.add_argument("--cases", default="plain,ember,collide")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--limit", type=float, default=300, help="seconds before a round is stopped")
    args = p.parse_args()
    sources = [s.split("=", 1) for s in args.sources]
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.cases.split(","):
            path = os.path.join(tmp, f"{kind}.safetensors")
            n = _build(kind, args.mib, path)
            with open(path, "rb") as f:
                size = struct.unpack("<Q", f.read(8))[0] / 2**20  # the header's size
            for label, src in sources:
                times, ends = [], set()
                for _ in range(args.rounds):
                    seconds, end = _run(os.path.abspath(src), path, args.limit)
                    ends.add(end)
                    if seconds is None:
                        break
                    times.append(seconds)
                fig = (f"median {statistics.median(times):.2f} s (range {min(times):.2f}-{max(times):.2f}, "
                       f"{len(times)} rounds)" if times else "")
                print(f"{kind:8} {size:6.1f} MiB header {n:>9} items  {label:6} {fig} {'/'.join(sorted(ends))}",
                      flush=True)


if __name__ == "__main__":
    main()
