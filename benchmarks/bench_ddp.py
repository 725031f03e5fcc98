"""DistributedDataParallel on the MNIST CNN workload (``workloads/cnn.py``: batch 64 per rank, cross-entropy, Adam):
(a) samples/s on 2 ranks against 1 rank, and (c) how much of the gradients' all-reduce DDP hides behind backward.

Run from the repository root (it starts its workers under the venv's ``mpiexec``, one BLAS thread per rank)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/bench_ddp.py [--rounds 5] [--steps 15] \
        [--gradient-as-bucket-view]

(a) Each round launches a 1-rank job (the plain model, no DDP), a 2-rank job (DDP) and, as the ceiling this machine
allows, a 2-rank job whose ranks each train their own plain model without communicating, in turns; each job times
``--steps`` training steps after 3 warm-up steps and reports its median step time; samples/s is ranks x 64 / that
time. Printed: the median over rounds of each job's samples/s, their min..max, and the ratios of the medians
(target >= 1.8x for DDP; the ceiling shows what two processes reach on this machine with no communication at all:
shared caches, memory bandwidth and other tenants' load).

(c) One 2-rank job times, in turns within the same processes: a step (forward + backward) of the plain model
followed by a barrier (so that it lasts until the slower rank is done, as a synchronous step must), the same step
with DDP (its backward includes waiting for the buckets' all-reduces), and the all-reduce of the DDP
buckets' buffers alone (blocking, one bucket after the other); within the DDP step, the time spent in the gradient
hooks (copying each gradient into its bucket, launching the buckets, moving the launched ones on), in launching the
buckets (dividing the buffer by the world size, posting the non-blocking collective: it returns at once) and in the
final callback (waiting for the all-reduces, and so for the slower rank, copying the averages into ``.grad``).
Printed: medians with min..max, and DDP's extra time over the plain step (the median of each DDP step's difference
to the plain step timed just before it, which cancels slow drifts of the machine's load) as a fraction of the
all-reduce time (target <= 0.3: at least 70% of the communication hidden behind backward or otherwise free).

The machine may be shared: every figure is a median, with its spread, and the load average is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

_DROP = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def _launch(nproc: int, mode: str, args, independent: bool = False) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _DROP}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    command = [mpiexec, "-n", str(nproc), sys.executable, __file__, "--worker", mode, "--steps", str(args.steps),
               "--bucket-cap-mb", str(args.bucket_cap_mb)]
    if args.gradient_as_bucket_view:
        command.append("--gradient-as-bucket-view")
    if independent:
        command.append("--independent")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"the {nproc}-rank {mode} job failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _worker(args) -> None:
    # the workers alone need ember and MPI: the launching process starts neither
    from workloads import cnn

    import ember
    import ember.distributed as dist
    import ember.nn.functional as F
    from ember.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    rank, n = dist.get_rank(), dist.get_world_size()
    model, _, x, y, _ = cnn.build(ember)
    ember.manual_seed(rank)
    x = ember.randn(*x.shape)  # each rank its own batch
    result = {}
    if args.worker == "throughput":
        net = model if n == 1 or args.independent else DDP(model, bucket_cap_mb=args.bucket_cap_mb,
                                       gradient_as_bucket_view=args.gradient_as_bucket_view)
        opt = ember.optim.Adam(net.parameters(), lr=cnn.LR)

        def step():
            opt.zero_grad()
            F.cross_entropy(net(x), y).backward()
            opt.step()
        times = _times(step, args.steps, dist.barrier)
        result = {"ranks": n, "step_s": statistics.median(times), "samples_per_s": n * cnn.BATCH /
                  statistics.median(times)}
    else:
        ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb, gradient_as_bucket_view=args.gradient_as_bucket_view)
        plain = cnn.build(ember)[0]
        buffers = [b.buffer for b in ddp.reducer.buckets]

        def plain_step():  # ends when the slower rank is done, as any synchronous step does
            plain.zero_grad()
            F.cross_entropy(plain(x), y).backward()
            dist.barrier()

        def ddp_step():
            ddp.zero_grad()
            F.cross_entropy(ddp(x), y).backward()

        def allreduce():
            for buf in buffers:
                dist.all_reduce(buf)
        samples = {"plain": [], "ddp": [], "allreduce": [], "hooks": [], "launches": [], "final": []}
        reducer = ddp.reducer  # where DDP's time goes: its bound methods, timed on the instance
        reducer.mark_ready = _timed(reducer.mark_ready, samples["hooks"])
        reducer._launch = _timed(reducer._launch, samples["launches"])
        reducer.finish = _timed(reducer.finish, samples["final"])
        for _ in range(3):
            plain_step(), ddp_step(), allreduce()
        del samples["hooks"][:], samples["launches"][:], samples["final"][:]
        for _ in range(args.steps):
            for name, fn in (("plain", plain_step), ("ddp", ddp_step), ("allreduce", allreduce)):
                samples[name].extend(_times(fn, 1, dist.barrier, warmup=0))
        for name in ("hooks", "launches"):  # per step
            per_step = len(samples[name]) // args.steps
            samples[name] = [sum(samples[name][i:i + per_step]) for i in range(0, len(samples[name]), per_step)]
        result = {"buckets": [b.buffer.numel() for b in ddp.reducer.buckets], "samples": samples}
    if rank == 0:
        print(json.dumps(result), flush=True)
    dist.destroy_process_group()


def _timed(fn, into: list):
    def timed(*args):
        start = time.perf_counter()
        fn(*args)
        into.append(time.perf_counter() - start)
    return timed


def _times(fn, steps: int, barrier, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(steps):
        barrier()
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def _spread(values) -> str:
    return f"{statistics.median(values):.4g} ({min(values):.4g}..{max(values):.4g})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="1-rank/2-rank job pairs for (a)")
    parser.add_argument("--steps", type=int, default=15, help="timed steps per job")
    parser.add_argument("--bucket-cap-mb", type=float, default=25)
    parser.add_argument("--gradient-as-bucket-view", action="store_true",
                        help="DDP's gradient_as_bucket_view=True (no copy of the averages into .grad)")
    parser.add_argument("--skip", choices=("throughput", "overlap"), help="leave one part out")
    parser.add_argument("--worker", choices=("throughput", "overlap"), help=argparse.SUPPRESS)
    parser.add_argument("--independent", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args)
        return 0
    print(f"load average before: {os.getloadavg()}")
    if args.skip != "throughput":
        rates: dict[str, list[float]] = {"one": [], "ddp": [], "ceiling": []}
        for _ in range(args.rounds):
            rates["one"].append(_launch(1, "throughput", args)["samples_per_s"])
            rates["ddp"].append(_launch(2, "throughput", args)["samples_per_s"])
            rates["ceiling"].append(_launch(2, "throughput", args, independent=True)["samples_per_s"])
        med = {k: statistics.median(v) for k, v in rates.items()}
        print("(a) MNIST CNN, batch 64 per rank, one BLAS thread per rank; samples/s, median (min..max) of "
              f"{args.rounds} jobs of {args.steps} steps")
        print(f"    1 rank (plain model):                      {_spread(rates['one'])}")
        print(f"    2 ranks (DDP):                             {_spread(rates['ddp'])}")
        print(f"    2 ranks, no communication (the ceiling):   {_spread(rates['ceiling'])}")
        print(f"    DDP {med['ddp'] / med['one']:.2f}x one rank (target >= 1.8x); the ceiling "
              f"{med['ceiling'] / med['one']:.2f}x; DDP at {med['ddp'] / med['ceiling']:.0%} of the ceiling")
    if args.skip != "overlap":
        out = _launch(2, "overlap", args)
        s = {k: [v * 1e3 for v in vals] for k, vals in out["samples"].items()}
        med = {k: statistics.median(v) for k, v in s.items()}
        paired = [d - p for p, d in zip(s["plain"], s["ddp"])]  # each DDP step against the plain step before it
        hidden = statistics.median(paired) / med["allreduce"]
        print(f"(c) 2 ranks, forward + backward, ms, median (min..max) of {args.steps}; buckets of "
              f"{out['buckets']} elements")
        print(f"    plain model + barrier:     {_spread(s['plain'])}")
        print(f"    DDP:                       {_spread(s['ddp'])}")
        print(f"    all-reduce of the buckets: {_spread(s['allreduce'])}")
        print(f"    of which in DDP's gradient hooks (copies into the buckets, launches, progress): "
              f"{_spread(s['hooks'])}")
        print(f"      of which in the bucket launches (dividing the buffers, posting the all-reduces): "
              f"{_spread(s['launches'])}")
        print(f"    of which in DDP's final callback (waiting for the all-reduces and the slower rank, averages into "
              ".grad): "
              f"{_spread(s['final'])}")
        print(f"    DDP - plain, median of the {len(paired)} paired differences: {_spread(paired)} ms = {hidden:.2f} x "
              "the all-reduce time (target <= 0.3)")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
