"""The ``nccl`` and ``auto`` process-group backends on the CuPy stand-in (``tests/cuda_standin``: stand-in GPUs in
host memory, its ``cupy.cuda.nccl`` on mpi4py), each multi-rank case its own ``mpiexec`` subprocess with
``PYTHONPATH=tests/cuda_standin``: every collective's result against NumPy, DDP on ``cuda`` equal to one process
training on the whole batch, ``auto`` routing CUDA tensors to NCCL and CPU tensors to MPI, and the errors (a CPU
tensor given to NCCL, two ranks on one GPU, a tensor on another GPU, arguments that disagree, a rank that never
arrives, CuPy or NCCL missing). The same plumbing on a real GPU is in ``test_nccl_gpu.py``."""
import os
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

import ember.distributed as dist

from .ranks import rank_outputs, run_ranks

STANDIN = Path(__file__).resolve().parents[1] / "cuda_standin"


def standin(gpus: int = 2) -> dict:
    """The environment that makes a rank import the CuPy stand-in (with ``gpus`` stand-in GPUs) as ``cupy``."""
    path = os.pathsep.join(p for p in (str(STANDIN), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "EMBER_STANDIN_GPUS": str(gpus)}


PRELUDE = """
import sys, json, datetime
import numpy as np
import ember, ember.distributed as dist

dist.init_process_group(BACKEND, timeout=datetime.timedelta(seconds=TIMEOUT))
r, n = dist.get_rank(), dist.get_world_size()
ember.cuda.set_device(r)
dev = f"cuda:{r}"
out = {}


def save():
    with open(f"{sys.argv[1]}/rank{r}.json", "w") as f:
        json.dump(out, f)
"""


def prelude(backend: str = "nccl", timeout: float = 60) -> str:
    return PRELUDE.replace("BACKEND", repr(backend)).replace("TIMEOUT", str(timeout))


COLLECTIVES = """
world = dist.group.WORLD.backend
out["backend"], out["gpu"] = dist.get_backend(), world.device
rng = np.random.default_rng(r)


def on_gpu(a):
    t = ember.from_numpy(np.ascontiguousarray(a)).to(dev)
    assert t.device == ember.device(dev)
    return t


for dtype in ("float32", "float64", "float16", "int32", "int64", "uint8", "bool"):
    for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
        if op == "AVG" and dtype not in ("float32", "float64", "float16"):
            continue
        x = rng.integers(1, 4, size=6).astype(dtype)
        t = on_gpu(x)
        dist.all_reduce(t, op=dist.ReduceOp[op])
        out[f"all_reduce/{dtype}/{op}"] = [x.tolist(), t.cpu().numpy().astype(np.float64).tolist()]
x = rng.standard_normal((3, 4))
out["x"] = x.tolist()
last = n - 1
t = on_gpu(x); dist.broadcast(t, src=last); out["broadcast"] = t.cpu().tolist()
t = on_gpu(x); dist.reduce(t, dst=0, op=dist.ReduceOp.MAX); out["reduce"] = t.cpu().tolist()
outs = [ember.zeros(3, 4, dtype=ember.float64, device=dev) for _ in range(n)]
dist.all_gather(outs, on_gpu(x)); out["all_gather"] = [o.cpu().tolist() for o in outs]
o = ember.zeros(n * 3, 4, dtype=ember.float64, device=dev)
dist.all_gather_into_tensor(o, on_gpu(x)); out["all_gather_into_tensor"] = o.cpu().tolist()
big = np.arange(2 * n, dtype=np.float32) * (r + 1)
o = ember.zeros(2, device=dev); dist.reduce_scatter_tensor(o, on_gpu(big)); out["reduce_scatter"] = o.cpu().tolist()
g = [ember.zeros(3, 4, dtype=ember.float64, device=dev) for _ in range(n)] if r == last else None
dist.gather(on_gpu(x), g, dst=last); out["gather"] = g and [t.cpu().tolist() for t in g]
s = [on_gpu(np.full((2,), 10.0 * i)) for i in range(n)] if r == 0 else None
t = ember.zeros(2, dtype=ember.float64, device=dev); dist.scatter(t, s, src=0); out["scatter"] = t.cpu().tolist()
a2a = np.arange(2 * n, dtype=np.float32) + 100 * r
o = ember.zeros(2 * n, device=dev); dist.all_to_all_single(o, on_gpu(a2a)); out["a2a"] = o.cpu().tolist()
# uneven: rank r sends rank j (j + 1) rows
uneven = np.arange(n * (n + 1) // 2 * 2, dtype=np.float32).reshape(-1, 2) + 1000 * r
o = ember.zeros(n * (r + 1), 2, device=dev)
dist.all_to_all_single(o, on_gpu(uneven), output_split_sizes=[r + 1] * n, input_split_sizes=list(range(1, n + 1)))
out["uneven"] = o.cpu().tolist()
# point to point around the ring, one pair after the other (NCCL runs each rank's operations in order)
for j in range(n if n > 1 else 0):
    if r == j:
        work = dist.isend(on_gpu(x), dst=(j + 1) % n)
        work.wait()
    if r == (j + 1) % n:
        got = ember.zeros(3, 4, dtype=ember.float64, device=dev)
        out["recv_src"] = dist.recv(got, src=j); out["recv"] = got.cpu().tolist()
if r == 0 and n > 1:
    dist.send(on_gpu(np.arange(3.0)), dst=n - 1)
if r == n - 1 and n > 1:
    got = ember.zeros(3, dtype=ember.float64, device=dev)
    out["any_src"] = dist.recv(got); out["any"] = got.cpu().tolist()
# async: two collectives in flight at once
t1, t2 = ember.ones(1000, device=dev) * (r + 1), ember.ones(10, device=dev)
w1, w2 = dist.all_reduce(t1, async_op=True), dist.all_reduce(t2, async_op=True)
w2.wait(); w1.wait()
out["async"] = [t1.cpu().tolist()[0], t2.cpu().tolist()[0]]
# a subgroup of the first and last rank, on NCCL too
pair = dist.new_group(sorted({0, n - 1}))
t = ember.full((2,), float(r + 1), device=dev)
dist.all_reduce(t, group=pair)
out["pair"] = [dist.get_rank(pair), t.cpu().tolist()]
dist.barrier()
dist.destroy_process_group()
out["done"] = True
save()
"""


def check_collectives(ranks: list) -> None:
    """Assert what each rank of a run of :data:`COLLECTIVES` wrote against NumPy on the gathered inputs."""
    n = len(ranks)
    xs = np.array([rk["x"] for rk in ranks])
    reduce = {"SUM": np.sum, "AVG": np.mean, "PRODUCT": np.prod, "MIN": np.min, "MAX": np.max}
    keys = [k for k in ranks[0] if k.startswith("all_reduce/")]
    assert len(keys) == 7 * 4 + 3
    for r, rk in enumerate(ranks):
        assert rk["backend"] == "nccl" and rk["gpu"] == r and rk["done"]
        for key in keys:
            dtype, op = key.split("/")[1:]
            inputs = np.array([ranks[j][key][0] for j in range(n)], dtype=np.float64)
            expected = reduce[op](inputs, axis=0)
            if dtype == "bool":
                expected = (np.all if op in ("PRODUCT", "MIN") else np.any)(inputs, axis=0).astype(np.float64)
            elif dtype == "uint8":
                expected = expected % 256
            np.testing.assert_allclose(rk[key][1], expected, rtol=1e-3 if dtype == "float16" else 1e-6,
                                       err_msg=f"{key} on rank {r}")
        np.testing.assert_array_equal(rk["broadcast"], xs[n - 1])
        np.testing.assert_array_equal(rk["reduce"], xs.max(axis=0) if r == 0 else xs[r])
        np.testing.assert_array_equal(rk["all_gather"], xs)
        np.testing.assert_array_equal(rk["all_gather_into_tensor"], xs.reshape(n * 3, 4))
        total = np.arange(2 * n) * sum(range(1, n + 1))
        np.testing.assert_allclose(rk["reduce_scatter"], total[2 * r:2 * r + 2])
        np.testing.assert_array_equal(rk["scatter"], [10.0 * r] * 2)
        np.testing.assert_array_equal(rk["a2a"], [100 * j + 2 * r + i for j in range(n) for i in range(2)])
        start = r * (r + 1) // 2
        rows = np.arange(n * (n + 1) // 2 * 2).reshape(-1, 2)[start:start + r + 1]
        np.testing.assert_array_equal(rk["uneven"], np.concatenate([rows + 1000 * j for j in range(n)]))
        if n > 1:
            assert rk["recv_src"] == (r - 1) % n
            np.testing.assert_array_equal(rk["recv"], xs[(r - 1) % n])
        assert rk["async"] == [n * (n + 1) / 2, n]
        in_pair = r in (0, n - 1)
        pair_sum = float(n + 1) if n > 1 else 1.0
        assert rk["pair"] == ([0 if r == 0 else 1, [pair_sum] * 2] if in_pair else [-1, [float(r + 1)] * 2])
    assert ranks[-1]["gather"] == xs.tolist() and all(rk["gather"] is None for rk in ranks[:-1])
    if n > 1:
        assert ranks[-1]["any_src"] == 0 and ranks[-1]["any"] == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("n", [2, 3])
def test_every_nccl_collective_matches_numpy(tmp_path, n):
    check_collectives(rank_outputs(n, prelude() + COLLECTIVES, tmp_path, env=standin(gpus=n)))


DDP = """
from ember import nn
from ember.parallel import DistributedDataParallel as DDP

B = 4  # rows per rank


def make():
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3)).double()


ember.manual_seed(100)
ref = make()  # trained on the whole batch, on the CPU, in one process
ember.manual_seed(100 + r)  # every replica starts different: DDP broadcasts rank 0's
model = make().to(dev)
ddp = DDP(model, device_ids=[r], bucket_cap_mb=0.0002, find_unused_parameters=FIND_UNUSED)
opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1)
calls = []
comm = dist.group.WORLD.backend.nccl._comm if dist.get_backend() == "auto" else None
try:  # count NCCL's all-reduces: the buckets must go through NCCL (the stand-in's; CuPy's methods are read-only)
    real = comm.allReduce
    comm.allReduce = lambda *a: (calls.append(a[2]), real(*a))[1]
except AttributeError:
    calls = None
for step in range(3):
    rng = np.random.default_rng(step)  # the same global batch on every rank
    x, y = rng.standard_normal((n * B, 5)), rng.standard_normal((n * B, 3))
    opt.zero_grad()
    mine = slice(r * B, (r + 1) * B)
    nn.functional.mse_loss(ddp(ember.from_numpy(x[mine]).to(dev)), ember.from_numpy(y[mine]).to(dev)).backward()
    opt.step()
    ref_opt.zero_grad()
    nn.functional.mse_loss(ref(ember.from_numpy(x)), ember.from_numpy(y)).backward()
    ref_opt.step()
out["buckets"] = len(ddp.reducer.buckets)
out["devices"] = sorted({str(p.device) for p in model.parameters()} | {str(p.grad.device) for p in model.parameters()})
out["diff"] = max(float(np.abs(p.detach().cpu().numpy() - q.detach().numpy()).max())
                  for p, q in zip(model.parameters(), ref.parameters()))
out["nccl_allreduce_elements"] = calls
save()
"""


@pytest.mark.parametrize("backend, find_unused", [("nccl", False), ("nccl", True), ("auto", False)])
def test_ddp_on_cuda_over_nccl_equals_one_process_training_on_the_whole_batch(tmp_path, backend, find_unused):
    script = prelude(backend) + DDP.replace("FIND_UNUSED", str(find_unused))
    ranks = rank_outputs(2, script, tmp_path, env=standin())
    for r, rk in enumerate(ranks):
        assert rk["buckets"] > 1
        assert rk["devices"] == [f"cuda:{r}"]
        assert rk["diff"] < 1e-10, rk
    if backend == "auto":  # every bucket of every step, 3 steps: all on NCCL, and nothing else
        n_params = 16 * 5 + 16 + 8 * 16 + 8 + 3 * 8 + 3
        assert sum(ranks[0]["nccl_allreduce_elements"]) == 3 * n_params


AUTO = """
world = dist.group.WORLD.backend
comm = world.nccl._comm
calls = []
for name in ("allReduce", "broadcast", "allGather"):
    real = getattr(comm, name)
    setattr(comm, name, lambda *a, _n=name, _f=real: (calls.append(_n), _f(*a))[1])
g = ember.full((3,), float(r + 1), device=dev)
c = ember.full((3,), float(r + 1))
dist.all_reduce(g); out["after_cuda"] = list(calls)
dist.all_reduce(c); out["after_cpu"] = list(calls)
dist.broadcast(g, src=0); dist.broadcast(c, src=1)
outs = [ember.zeros(3) for _ in range(n)]
dist.all_gather(outs, c)
out["calls"] = calls
out["g"], out["c"], out["gathered"] = g.cpu().tolist(), c.tolist(), [o.tolist() for o in outs]
try:
    dist.all_gather([ember.zeros(3) for _ in range(n)], g)
except ValueError as exc:
    out["mixed"] = str(exc)
out["backend"] = dist.get_backend()
save()
"""


def test_auto_sends_cuda_tensors_over_nccl_and_cpu_tensors_over_mpi(tmp_path):
    ranks = rank_outputs(2, prelude("auto") + AUTO, tmp_path, env=standin())
    for rk in ranks:
        assert rk["backend"] == "auto"
        assert rk["after_cuda"] == ["allReduce"] and rk["after_cpu"] == ["allReduce"]
        assert rk["calls"] == ["allReduce", "broadcast"]  # the CPU broadcast and all_gather went over MPI
        assert rk["g"] == [3.0] * 3 and rk["c"] == [3.0] * 3 and rk["gathered"] == [[3.0] * 3] * 2
        assert "the tensors are on cpu and cuda devices" in rk["mixed"]


AUTO_WITHOUT_GPU = """
import sys, json
import ember, ember.distributed as dist
dist.init_process_group("auto")
r = dist.get_rank()
t = ember.full((2,), float(r + 1))
dist.all_reduce(t)
world = dist.group.WORLD.backend
with open(f"{sys.argv[1]}/rank{r}.json", "w") as f:
    json.dump({"sum": t.tolist(), "nccl": world.nccl is None, "why": world.refusal(ember.device("cuda"))}, f)
"""


ONLY_RANK_0_HAS_A_GPU = """
import os
if os.environ.get("PMI_RANK") == "1":  # MPICH's rank, known before MPI starts
    os.environ["EMBER_STANDIN_GPUS"] = "0"
"""


@pytest.mark.parametrize("gpus, prefix, reason", [
    (0, "", "no CUDA-capable device"),
    (1, "", "ranks 0 and 1 of the default group would both use cuda:0"),
    (2, ONLY_RANK_0_HAS_A_GPU, "rank 1 of the default group cannot use NCCL")])
def test_auto_without_a_gpu_per_rank_is_mpi_alone_and_says_why_it_refuses_cuda_tensors(tmp_path, gpus, prefix,
                                                                                       reason):
    ranks = rank_outputs(2, prefix + AUTO_WITHOUT_GPU, tmp_path, env=standin(gpus=gpus))
    for rk in ranks:
        assert rk["sum"] == [3.0, 3.0] and rk["nccl"]
        assert "this group has no NCCL (" in rk["why"] and reason in rk["why"]
        assert "to send it over MPI" in rk["why"]


ERRORS = """
lines = []


def attempt(name, call):
    try:
        call()
        lines.append(f"{name}: no error")
    except (RuntimeError, TypeError, ValueError) as exc:
        lines.append(f"{name}: {type(exc).__name__}: {exc}")


attempt("cpu", lambda: dist.all_reduce(ember.ones(2)))
attempt("other_gpu", lambda: dist.all_reduce(ember.ones(2).to(f"cuda:{1 - r}")))
attempt("shape", lambda: dist.all_reduce(ember.zeros(4 if r == 0 else 5, device=dev)))
attempt("bitwise", lambda: dist.all_reduce(ember.zeros(2, dtype=ember.int32, device=dev), op=dist.ReduceOp.BOR))
attempt("int16", lambda: dist.all_reduce(ember.zeros(2, dtype=ember.int16, device=dev)))
attempt("recv", lambda: dist.send(ember.zeros(3, device=dev), 1) if r == 0 else
        dist.recv(ember.zeros(3, dtype=ember.int64, device=dev), 0))
t = ember.ones(2, device=dev); dist.all_reduce(t); lines.append(f"usable: {t.cpu().tolist()}")
with open(f"{sys.argv[1]}/rank{r}.txt", "w") as f:
    f.write("\\n".join(lines))
"""


def test_errors_name_the_device_the_rank_and_what_to_do(tmp_path):
    done = run_ranks(2, prelude() + ERRORS, tmp_path, env=standin())
    assert done.returncode == 0, done.stdout + done.stderr
    for r in (0, 1):
        lines = dict(line.split(": ", 1) for line in (tmp_path / f"rank{r}.txt").read_text().split("\n"))
        assert lines["cpu"].startswith(f"RuntimeError: [rank {r}] all_reduce: the 'nccl' backend of the default "
                                       f"group cannot serve tensor on device cpu; NCCL moves CUDA tensors only")
        assert "backend='auto'" in lines["cpu"] and "backend='mpi'" in lines["cpu"]
        assert (f"[rank {r}] all_reduce: this rank's NCCL communicator of the default group is on cuda:{r}, but "
                f"the tensor is on cuda:{1 - r}") in lines["other_gpu"]
        assert "rank 0: all_reduce" in lines["shape"] and "shape (5,)" in lines["shape"]
        assert "ReduceOp.BOR is not available on NCCL for integer tensors" in lines["bitwise"]
        assert "NCCL cannot reduce int16 tensors" in lines["int16"]
        assert lines["usable"] == "[2.0, 2.0]"
    assert "rank 0 sent a float32 tensor of shape (3,)" in (tmp_path / "rank1.txt").read_text()


def test_two_ranks_on_one_gpu_is_an_error_naming_them(tmp_path):
    done = run_ranks(2, prelude(), tmp_path, env=standin(gpus=1), timeout=60)
    assert done.returncode != 0
    assert ("DistError: init_process_group(backend='nccl'): ranks 0 and 1 of the default group would both use "
            "cuda:0 of one host") in done.stderr, done.stderr


def test_nccl_without_a_gpu_is_an_error_saying_so(tmp_path):
    done = run_ranks(1, prelude(), tmp_path, env=standin(gpus=0), timeout=60)
    assert done.returncode != 0
    assert ("RuntimeError: [rank 0] init_process_group(backend='nccl'): CuPy sees no GPU (cudaErrorNoDevice"
            in done.stderr), done.stderr


NEVER_ENTERS = """
import time
dist.all_reduce(ember.ones(2, device=dev))
if r == 1:
    time.sleep(60)  # never enters the next collective; the failure of rank 0 must end it
dist.all_reduce(ember.ones(2, device=dev))
"""


def test_a_collective_one_rank_never_enters_times_out_naming_it(tmp_path):
    start = time.monotonic()
    done = run_ranks(2, prelude(timeout=3) + NEVER_ENTERS, tmp_path, env=standin(), timeout=60)
    assert done.returncode != 0 and time.monotonic() - start < 30
    assert "DistBackendError: [rank 0] all_reduce (operation #1 on the default group) timed out after 3 s" \
        in done.stderr, done.stderr
    assert "rank 1 of the default group did not arrive" in done.stderr


# -- in this process: NCCL missing ----------------------------------------------------------------------------------

def test_nccl_without_cupy_is_an_error_suggesting_mpi_or_auto(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    with pytest.raises(RuntimeError, match=r"init_process_group\(backend='nccl'\): CuPy does not import .*"
                                           r"ember-core\[cuda12\].*backend='mpi'.*backend='auto'"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_nccl_with_cupy_but_no_nccl_library_is_an_error_saying_so(monkeypatch):
    cupy, cuda, nccl = (types.ModuleType(n) for n in ("cupy", "cupy.cuda", "cupy.cuda.nccl"))
    nccl.available = False
    cupy.cuda, cuda.nccl = cuda, nccl
    for module in (cupy, cuda, nccl):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    with pytest.raises(RuntimeError, match=r"CuPy imports, but its NCCL library does not load .*nvidia-nccl-cu12"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_an_error_nccl_reports_while_an_operation_is_pending_ends_the_wait_naming_the_rank():
    from ember.distributed.backends.nccl import _EventDone

    class Pending:
        done = False

    class FailedPeer:
        def check_async_error(self):
            raise RuntimeError("NCCL_ERROR_REMOTE_ERROR: remote process exited")

    with pytest.raises(dist.DistBackendError, match=r"^\[rank 1\] all_reduce on cuda:1: NCCL reported an error: "
                                                    r"NCCL_ERROR_REMOTE_ERROR"):
        _EventDone(Pending(), FailedPeer(), "[rank 1] all_reduce on cuda:1").Test()
    Pending.done = True
    assert _EventDone(Pending(), FailedPeer(), "").Test()
