"""ember.distributed's collectives on 2 and 3 MPI ranks, each run an ``mpiexec`` subprocess: results against NumPy on
the gathered inputs, every ReduceOp and dtype, async handles, subgroups, object collectives, and the errors (tensors
that disagree across ranks, a rank that never enters a collective)."""
import time

import numpy as np
import pytest

from .ranks import run_ranks

# Every rank saves its inputs and outputs (np.savez) as rank<r>.npz; the test recomputes the outputs with NumPy.
COLLECTIVES = """
import sys, datetime
import numpy as np
import ember, ember.distributed as dist
from ember.distributed import ReduceOp

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(r)
saved = {}

def keep(key, t):
    saved[key] = (t.float() if t.dtype == ember.bfloat16 else t).numpy().copy()  # npz has no bfloat16

for dtype in ("float32", "float64", "int32", "int64", "uint8", "bool", "float16", "bfloat16"):
    for op in ReduceOp:
        floating = dtype.startswith(("float", "bf"))
        if op is ReduceOp.AVG and not floating or op.name.startswith("B") and floating:
            continue
        if dtype == "bool":
            x = rng.random(6) < 0.5
        elif floating:
            x = rng.integers(-4, 5, 6).astype(np.float64) * 0.5   # exact in every float type
        else:
            x = rng.integers(1, 4, 6)
        t = ember.tensor(x.tolist(), dtype=getattr(ember, dtype))
        keep(f"in/all_reduce/{dtype}/{op.name}", t)
        dist.all_reduce(t, op=op)
        keep(f"out/all_reduce/{dtype}/{op.name}", t)

x = ember.from_numpy(rng.standard_normal((3, 4)))
keep("in/x", x)
b = x.clone(); dist.broadcast(b, src=n - 1); keep("out/broadcast", b)
red = x.clone(); dist.reduce(red, dst=1, op=ReduceOp.MAX); keep("out/reduce", red)
parts = [ember.zeros(3, 4, dtype=ember.float64) for _ in range(n)]
dist.all_gather(parts, x); keep("out/all_gather", ember.stack(parts))
flat = ember.zeros(n * 3, 4, dtype=ember.float64)
dist.all_gather_into_tensor(flat, x); keep("out/all_gather_into_tensor", flat)
big = ember.from_numpy(rng.standard_normal((n * 2, 4))); keep("in/big", big)
rs = ember.zeros(2, 4, dtype=ember.float64); dist.reduce_scatter_tensor(rs, big); keep("out/reduce_scatter", rs)
ra = ember.zeros(2, 4, dtype=ember.float64)
dist.reduce_scatter_tensor(ra, big, op=ReduceOp.AVG); keep("out/reduce_scatter_avg", ra)
gl = [ember.zeros(3, 4, dtype=ember.float64) for _ in range(n)] if r == 1 else None
dist.gather(x, gl, dst=1)
if r == 1:
    keep("out/gather", ember.stack(gl))
sl = [ember.full((3, 4), 10.0 * i, dtype=ember.float64) for i in range(n)] if r == 0 else None
sc = ember.zeros(3, 4, dtype=ember.float64); dist.scatter(sc, sl, src=0); keep("out/scatter", sc)
a2a_in = ember.from_numpy(rng.standard_normal((n * 2, 3))); keep("in/a2a", a2a_in)
a2a = ember.zeros(n * 2, 3, dtype=ember.float64); dist.all_to_all_single(a2a, a2a_in); keep("out/a2a", a2a)
# uneven: rank r sends j + 1 rows to rank j, so it receives r + 1 rows from each
uneven_in = ember.from_numpy(rng.standard_normal((n * (n + 1) // 2, 2))); keep("in/uneven", uneven_in)
uneven = ember.zeros(n * (r + 1), 2, dtype=ember.float64)
dist.all_to_all_single(uneven, uneven_in, output_split_sizes=[r + 1] * n, input_split_sizes=list(range(1, n + 1)))
keep("out/uneven", uneven)
# point to point: a ring, blocking and non-blocking
got = ember.zeros(3, 4, dtype=ember.float64)
if r % 2 == 0:
    dist.send(x, dst=(r + 1) % n); src = dist.recv(got, src=(r - 1) % n)
else:
    src = dist.recv(got); dist.send(x, dst=(r + 1) % n)
keep("out/recv", got); saved["out/recv_src"] = np.array(src)
got2 = ember.zeros(3, 4, dtype=ember.float64)
works = [dist.isend(x, dst=(r + 1) % n, tag=7), dist.irecv(got2, src=(r - 1) % n, tag=7)]
for w in works:
    w.wait()
keep("out/irecv", got2); saved["out/irecv_src"] = np.array(works[1].source_rank())
# async collective handles
h = ember.full((1000,), float(r + 1))
work = dist.all_reduce(h, async_op=True)
assert work.wait() is True and work.is_completed() and work.is_success() and work.exception() is None
keep("out/async", h)
# a wait() shorter than the operation raises and leaves it going; it finishes when the message comes
late = ember.zeros(2)
if r == 0:
    pending = dist.irecv(late, src=1, tag=99)
    try:
        pending.wait(timeout=datetime.timedelta(milliseconds=200))
    except dist.DistBackendError as exc:
        saved["out/wait_timeout"] = np.array("wait() timed out" in str(exc) and "rank 1 sent nothing" in str(exc))
    saved["out/pending_then"] = np.array(pending.is_completed())
dist.barrier()
if r == 1:
    dist.send(ember.ones(2), dst=0, tag=99)
elif r == 0:
    pending.wait()
    saved["out/pending_done"] = np.array(pending.is_completed() and late.tolist() == [1.0, 1.0])
# subgroup of the first and last rank: src is a global rank
pair = dist.new_group([0, n - 1])
sub = ember.full((2,), float(r + 1))
result = dist.all_reduce(sub, group=pair, async_op=True)  # a Work on members, None elsewhere
if result is not None:
    result.wait()
saved["out/pair_rank"] = np.array([dist.get_rank(pair), dist.get_world_size(pair)])
keep("out/pair_sum", sub)
pb = ember.full((2,), float(r)); dist.broadcast(pb, src=n - 1, group=pair); keep("out/pair_bcast", pb)
saved["out/pair_none"] = np.array(result is None)
dist.barrier(); dist.barrier(group=pair)
# objects
objs = [None] * n
dist.all_gather_object(objs, {"rank": r, "name": "x" * r})
saved["out/objects_ok"] = np.array(objs == [{"rank": i, "name": "x" * i} for i in range(n)])
items = [("a", 1), [2.5]] if r == 1 else [None, None]
dist.broadcast_object_list(items, src=1)
saved["out/bcast_objects_ok"] = np.array(items == [("a", 1), [2.5]])
np.savez(f"{sys.argv[1]}/rank{r}.npz", **saved)
dist.destroy_process_group()
print(f"rank {r} done")
"""

_NUMPY_REDUCE = {"SUM": np.sum, "AVG": np.mean, "PRODUCT": np.prod, "MIN": np.min, "MAX": np.max,
                 "BAND": np.bitwise_and.reduce, "BOR": np.bitwise_or.reduce, "BXOR": np.bitwise_xor.reduce}
_BOOL_REDUCE = {"SUM": np.any, "MAX": np.any, "BOR": np.any, "PRODUCT": np.all, "MIN": np.all, "BAND": np.all,
                "BXOR": lambda a, axis: np.logical_xor.reduce(a, axis=axis)}


@pytest.mark.parametrize("n", [2, 3])
def test_every_collective_matches_numpy_on_the_gathered_inputs(tmp_path, n):
    done = run_ranks(n, COLLECTIVES, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    ranks = [dict(np.load(tmp_path / f"rank{r}.npz")) for r in range(n)]
    reduced = [k.split("/", 1)[1] for k in ranks[0] if k.startswith("in/all_reduce/")]
    assert len(reduced) == 8 * 8 - 4 * 3 - 4  # every dtype and op, less bitwise ops on floats and AVG on non-floats
    for key in reduced:
        dtype, op = key.split("/")[1:]
        inputs = np.stack([rk[f"in/{key}"] for rk in ranks])
        expected = (_BOOL_REDUCE if dtype == "bool" else _NUMPY_REDUCE)[op](inputs, axis=0)
        for r, rk in enumerate(ranks):
            got = rk[f"out/{key}"]
            if dtype in ("bool", "int32", "int64", "uint8"):
                np.testing.assert_array_equal(got, expected.astype(got.dtype), err_msg=f"{key} on rank {r}")
            else:
                tol = 1e-6 if dtype in ("float32", "float64") else 1e-2
                np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=tol,
                                           err_msg=f"{key} on rank {r}")
    xs = np.stack([rk["in/x"] for rk in ranks])
    bigs = np.stack([rk["in/big"] for rk in ranks]).sum(axis=0)
    for r, rk in enumerate(ranks):
        np.testing.assert_array_equal(rk["out/broadcast"], xs[n - 1])
        np.testing.assert_array_equal(rk["out/reduce"], xs.max(axis=0) if r == 1 else xs[r])
        np.testing.assert_array_equal(rk["out/all_gather"], xs)
        np.testing.assert_array_equal(rk["out/all_gather_into_tensor"], xs.reshape(n * 3, 4))
        np.testing.assert_allclose(rk["out/reduce_scatter"], bigs[2 * r:2 * r + 2], rtol=1e-12)
        np.testing.assert_allclose(rk["out/reduce_scatter_avg"], bigs[2 * r:2 * r + 2] / n, rtol=1e-12)
        np.testing.assert_array_equal(rk["out/scatter"], np.full((3, 4), 10.0 * r))
        np.testing.assert_array_equal(rk["out/a2a"], np.concatenate([ranks[j]["in/a2a"][2 * r:2 * r + 2]
                                                                     for j in range(n)]))
        start = r * (r + 1) // 2  # rank j's rows for rank r follow those for ranks 0 .. r-1 (1 + 2 + ... + r rows)
        np.testing.assert_array_equal(rk["out/uneven"], np.concatenate([ranks[j]["in/uneven"][start:start + r + 1]
                                                                        for j in range(n)]))
        for kind in ("recv", "irecv"):
            np.testing.assert_array_equal(rk[f"out/{kind}"], xs[(r - 1) % n])
            assert rk[f"out/{kind}_src"] == (r - 1) % n
        np.testing.assert_array_equal(rk["out/async"], np.full(1000, n * (n + 1) / 2))
        in_pair = r in (0, n - 1)
        assert rk["out/pair_rank"].tolist() == ([0 if r == 0 else 1, 2] if in_pair else [-1, -1])
        np.testing.assert_array_equal(rk["out/pair_sum"], np.full(2, float(n + 1) if in_pair else r + 1.0))
        np.testing.assert_array_equal(rk["out/pair_bcast"], np.full(2, float(n - 1) if in_pair else float(r)))
        assert bool(rk["out/pair_none"]) == (not in_pair)  # a rank outside the group gets None
        assert rk["out/objects_ok"] and rk["out/bcast_objects_ok"]
    np.testing.assert_array_equal(ranks[1]["out/gather"], xs)
    assert ranks[0]["out/wait_timeout"] and not ranks[0]["out/pending_then"] and ranks[0]["out/pending_done"]


MISMATCHES = """
import sys, datetime
import ember, ember.distributed as dist

dist.init_process_group(timeout=datetime.timedelta(seconds=30))
r = dist.get_rank()
lines = []
cases = {
    "shape": lambda: dist.all_reduce(ember.zeros(4 if r == 0 else 5)),
    "dtype": lambda: dist.broadcast(ember.zeros(4, dtype=ember.float32 if r == 0 else ember.float64), src=0),
    "op": lambda: dist.all_reduce(ember.zeros(2), op=dist.ReduceOp.SUM if r == 0 else dist.ReduceOp.MAX),
    "call": lambda: dist.all_reduce(ember.zeros(2)) if r == 0 else dist.broadcast(ember.zeros(2), src=0),
    "splits": lambda: dist.all_to_all_single(ember.zeros(2), ember.zeros(2), output_split_sizes=[1, 1],
                                             input_split_sizes=[1, 1] if r == 0 else [2, 0]),
    "avg_int": lambda: dist.all_reduce(ember.zeros(2, dtype=ember.int64), op=dist.ReduceOp.AVG),
    "recv": lambda: dist.send(ember.zeros(3), 1) if r == 0 else dist.recv(ember.zeros(3, dtype=ember.int64), 0),
}
for name, case in cases.items():
    try:
        case()
        lines.append(f"{name}: no error")
    except (dist.DistError, TypeError) as exc:
        lines.append(f"{name}: {exc}")
    if name != "recv":  # the group stays usable after a mismatch: nothing was sent
        t = ember.ones(2); dist.all_reduce(t); assert t.tolist() == [2.0, 2.0]
lines.append("finished")
with open(f"{sys.argv[1]}/rank{r}.txt", "w") as f:
    f.write("\\n".join(lines))
"""


def test_tensors_that_disagree_across_ranks_are_errors_naming_the_ranks(tmp_path):
    done = run_ranks(2, MISMATCHES, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = {}
    for r in (0, 1):
        text = (tmp_path / f"rank{r}.txt").read_text().split("\n")
        assert text[-1] == "finished"
        lines.update({f"rank {r} {line.split(':', 1)[0]}": line for line in text[:-1]})
    for r in (0, 1):
        assert "rank 0: all_reduce" in lines[f"rank {r} shape"] and "shape (4,)" in lines[f"rank {r} shape"]
        assert "rank 1: all_reduce" in lines[f"rank {r} shape"] and "shape (5,)" in lines[f"rank {r} shape"]
        assert "rank 1: broadcast" in lines[f"rank {r} dtype"] and "float64" in lines[f"rank {r} dtype"]
        assert "op SUM" in lines[f"rank {r} op"] and "op MAX" in lines[f"rank {r} op"]
        assert "rank 1: broadcast" in lines[f"rank {r} call"] and "rank 0: all_reduce" in lines[f"rank {r} call"]
        assert "rank 1 sends 2 rows to rank 0" in lines[f"rank {r} splits"]
        assert "ReduceOp.AVG is not defined for integer tensors (ember.int64)" in lines[f"rank {r} avg_int"]
    assert "rank 0 sent a float32 tensor of shape (3,)" in lines["rank 1 recv"]
    assert "int64 tensor of shape (3,)" in lines["rank 1 recv"]
    assert lines["rank 0 recv"] == "recv: no error"  # the receiver takes the data it refuses: the send completes


NEVER_ENTERS = """
import sys, time, datetime
import ember, ember.distributed as dist

dist.init_process_group(timeout=datetime.timedelta(seconds=3))
dist.all_reduce(ember.ones(2))  # both ranks enter this one
if dist.get_rank() == 1:
    time.sleep(60)  # never enters the next collective; the failure of rank 0 must end it
dist.all_reduce(ember.ones(2))
"""


def test_a_collective_one_rank_never_enters_times_out_naming_it_and_ends_the_job(tmp_path):
    start = time.monotonic()
    done = run_ranks(2, NEVER_ENTERS, tmp_path, timeout=60)
    took = time.monotonic() - start
    assert done.returncode != 0
    assert took < 3 + 8, f"the job took {took:.1f} s to end"
    err = done.stderr
    assert "[rank 0] Traceback" in err, err
    assert "DistBackendError: [rank 0] all_reduce (operation #1 on the default group) timed out after 3 s" in err, err
    assert "rank 1 of the default group did not arrive" in err, err
