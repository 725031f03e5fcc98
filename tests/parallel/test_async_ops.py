"""``async_op=True`` collectives of the MPI backend return at once, before the other ranks entered them, and still
post their transfers in the same order on every rank (several in flight, waited in any order), still check that the
ranks' tensors agree (the error comes from ``wait()``), and mix with blocking collectives and new groups. One
``mpiexec -n 2`` run."""
from __future__ import annotations

from .ranks import rank_outputs

SCRIPT = """
import sys, json, time, datetime
import ember, ember.distributed as dist

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=30))
r = dist.get_rank()
out = {}
if r == 1:
    time.sleep(1.5)  # rank 0 launches its collectives long before this rank enters them
start = time.monotonic()
tensors = [ember.full((n,), float(r + 1)) for n in (3, 100_000, 7)]
works = [dist.all_reduce(t, async_op=True) for t in tensors]
root = ember.full((5,), float(r + 10))
works.append(dist.broadcast(root, src=1, async_op=True))
out["launch_s"] = time.monotonic() - start
out["completed_at_launch"] = [w.is_completed() for w in works]
for w in reversed(works):  # the newest first: it must move the older ones on itself
    w.wait()
out["sums"] = [sorted(set(t.tolist())) for t in tensors]
out["bcast"] = sorted(set(root.tolist()))

# a mismatch is still found, by every rank, and raised by wait(); the group stays usable
bad = dist.all_reduce(ember.zeros(4 if r == 0 else 5), async_op=True)
try:
    bad.wait()
    out["mismatch"] = "no error"
except dist.DistError as exc:
    out["mismatch"] = str(exc)
out["mismatch_exception"] = type(bad.exception()).__name__

# an async collective left in flight across a blocking one and a new group (MPI's Comm.Create)
pending = ember.full((4,), float(r + 1))
work = dist.all_reduce(pending, async_op=True)
blocking = ember.full((2,), float(r + 1))
dist.all_reduce(blocking)
group = dist.new_group([0, 1])
in_group = ember.full((2,), float(r + 1))
dist.all_reduce(in_group, group=group)
work.wait()
out["mixed"] = [pending.tolist(), blocking.tolist(), in_group.tolist()]
with open(f"{sys.argv[1]}/rank{r}.json", "w") as f:
    json.dump(out, f)
"""


def test_async_collectives_return_at_once_and_keep_order_and_checks(tmp_path):
    ranks = rank_outputs(2, SCRIPT, tmp_path, timeout=120)
    first = ranks[0]
    assert first["launch_s"] < 1.0, f"rank 0's async launches took {first['launch_s']:.2f} s: they waited for rank 1"
    assert first["completed_at_launch"] == [False] * 4
    for out in ranks:
        assert out["sums"] == [[3.0], [3.0], [3.0]]
        assert out["bcast"] == [11.0]
        assert "all_reduce: the ranks' arguments disagree" in out["mismatch"], out["mismatch"]
        assert "rank 0: all_reduce" in out["mismatch"] and "shape (4,)" in out["mismatch"]
        assert "rank 1: all_reduce" in out["mismatch"] and "shape (5,)" in out["mismatch"]
        assert out["mismatch_exception"] == "DistError"
        assert out["mixed"] == [[3.0] * 4, [3.0] * 2, [3.0] * 2]
