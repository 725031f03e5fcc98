"""``dist.all_reduce`` against mpi4py's raw ``Allreduce`` on the same buffers: bus bandwidth, 1 KB .. 100 MB.

Run from the repository root (it starts itself under the venv's ``mpiexec`` with 2 ranks, one BLAS thread each)::

    .venv/bin/python benchmarks/bench_allreduce.py [--nproc 2] [--dtype float32] [--max-mb 100]

Each size is timed in alternating samples (ember, raw, ember, raw, ...), every sample preceded by a barrier and
long enough (``--sample-ms``) to average the clock's noise; both ops sum in place into the same zero-filled tensor
(its NumPy array for mpi4py). Printed on rank 0: the median time per call, the bus bandwidth
(``bytes / time * 2 (n - 1) / n``, as nccl-tests define it) of each, and their ratio ember/raw (1.0: as fast as
raw MPI). ember's own work per call (argument checks, the ranks' metadata exchange that catches tensors that
disagree and names missing ranks, nonblocking polling for the timeout) costs a fixed few microseconds, which shows
at small sizes only; the first line gives the metadata round's cost alone (``dist.barrier`` is just that round).
``--torch`` adds PyTorch's own ``torch.distributed.all_reduce`` on its gloo backend, on the same ranks, alternated
with the others (run it under ``uv run --with torch==2.13.0``), as the reference for what a Python framework's
collective costs per call.
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time

_SIZES_KB = (1, 4, 16, 64, 256, 1024, 4096, 16384, 102400)


def _launch(args) -> int:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    command = [mpiexec, "-n", str(args.nproc), sys.executable, __file__, "--worker", "--dtype", args.dtype,
               "--max-mb", str(args.max_mb), "--sample-ms", str(args.sample_ms), "--samples", str(args.samples),
               *(["--torch"] if args.torch else [])]
    return subprocess.call(command, env=env)


def _time(call, iterations: int, barrier) -> float:
    barrier()
    start = time.perf_counter()
    for _ in range(iterations):
        call()
    return (time.perf_counter() - start) / iterations


def _worker(args) -> None:
    import ember  # the worker runs under mpiexec only: the launching process needs neither ember nor MPI
    import ember.distributed as dist
    from ember import _sibling_api as core
    from ember.distributed.backends._mpi_import import MPI

    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=120))
    rank, n = dist.get_rank(), dist.get_world_size()
    comm = MPI.COMM_WORLD
    dtype = getattr(ember, args.dtype)
    rounds = comm.bcast(max(1, int(args.sample_ms / 1000 / max(_time(dist.barrier, 3, comm.Barrier), 1e-7))))
    barrier = statistics.median(_time(dist.barrier, rounds, comm.Barrier) for _ in range(args.samples))
    raw_barrier = statistics.median(_time(comm.Barrier, rounds, comm.Barrier) for _ in range(args.samples))
    if rank == 0:
        print(f"all_reduce (SUM, in place) of {args.dtype} on {n} ranks; medians of {args.samples} samples each")
        print(f"ember's metadata round alone (dist.barrier): {barrier * 1e6:.1f} us; MPI's Barrier: "
              f"{raw_barrier * 1e6:.1f} us")
        print(f"{'size':>9} {'ember us':>10} {'raw us':>10} {'ember GB/s':>11} {'raw GB/s':>9} {'ratio':>6}")
    torch_dist = _torch_group(comm) if args.torch else None
    if rank == 0 and torch_dist is not None:
        print(f"{'':>9} {'':>10} {'':>10} {'':>11} {'':>9} {'':>6} {'PyTorch us':>11} {'ratio':>6}  (gloo)")
    for kb in _SIZES_KB:
        if kb > args.max_mb * 1024:
            break
        numel = kb * 1024 // dtype.itemsize
        t = ember.zeros(numel, dtype=dtype)
        arr = core.array(t)
        contenders = {"ember": lambda: dist.all_reduce(t),
                      "raw": lambda: comm.Allreduce(MPI.IN_PLACE, arr, op=MPI.SUM)}
        if torch_dist is not None:
            import torch
            tt = torch.zeros(numel, dtype=getattr(torch, args.dtype))
            contenders["torch"] = lambda: torch_dist.all_reduce(tt)
        once = _time(contenders["raw"], 3, comm.Barrier)
        iterations = comm.bcast(max(1, int(args.sample_ms / 1000 / max(once, 1e-7))), root=0)
        times = {k: [] for k in contenders}
        for _ in range(args.samples):
            for name, call in contenders.items():
                times[name].append(_time(call, iterations, comm.Barrier))
        if rank == 0:
            med = {k: statistics.median(v) for k, v in times.items()}
            bus = {k: kb * 1024 / med[k] * 2 * (n - 1) / n / 1e9 for k in med}
            size = f"{kb} KB" if kb < 1024 else f"{kb // 1024} MB"
            line = (f"{size:>9} {med['ember'] * 1e6:10.1f} {med['raw'] * 1e6:10.1f} {bus['ember']:11.2f} "
                    f"{bus['raw']:9.2f} {med['raw'] / med['ember']:6.2f}")
            if "torch" in med:
                line += f" {med['torch'] * 1e6:11.1f} {med['raw'] / med['torch']:6.2f}"
            print(line, flush=True)
    dist.destroy_process_group()


def _torch_group(comm):
    """PyTorch's ``torch.distributed`` on its gloo backend over the same ranks (a file store in a directory rank 0
    makes), for reference; None when torch is not importable."""
    try:
        import tempfile

        import torch
        import torch.distributed as torch_dist
    except ImportError:
        return None
    torch.set_num_threads(1)
    store_dir = comm.bcast(tempfile.mkdtemp(prefix="bench-allreduce-") if comm.Get_rank() == 0 else None)
    torch_dist.init_process_group("gloo", init_method=f"file://{store_dir}/store", rank=comm.Get_rank(),
                                  world_size=comm.Get_size())
    return torch_dist


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--max-mb", type=float, default=100)
    parser.add_argument("--sample-ms", type=float, default=20.0)
    parser.add_argument("--samples", type=int, default=11)
    parser.add_argument("--torch", action="store_true",
                        help="also time PyTorch's torch.distributed.all_reduce (gloo) on the same ranks, for reference")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args)
        return 0
    return _launch(args)


if __name__ == "__main__":
    sys.exit(main())
