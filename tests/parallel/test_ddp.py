"""DistributedDataParallel on 2 and 3 MPI ranks, each case an ``mpiexec`` subprocess: gradients and parameters after 3
SGD steps equal one process training on the concatenated batch (float64, 1e-10), buckets launched during backward,
buffers broadcast, the ``module.`` checkpoint, ``no_sync``, unused parameters (the error and
``find_unused_parameters``), uneven inputs with ``join()``, and the fp16-compression hook. Each rank writes what it
measured to ``rank<r>.json``; the assertions are here."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ember
from ember.parallel import DistributedDataParallel
from ember.parallel._reducer import assign_buckets

from .ranks import MPIEXEC, rank_outputs

PRELUDE = """
import sys, json, datetime
import numpy as np
import ember, ember.distributed as dist
from ember import nn
from ember.parallel import DistributedDataParallel as DDP
from ember.parallel.comm_hooks import allreduce_hook, fp16_compress_hook
from ember.nn.modules.utils import consume_prefix_in_state_dict_if_present

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
out = {}
B = 4  # rows per rank


def maxdiff(a, b):
    return float(np.abs(a.detach().numpy() - b.detach().numpy()).max())


def batch(step, seed=0, width=5):
    rng = np.random.default_rng(1000 * seed + step)  # the same global batch on every rank
    return ember.from_numpy(rng.standard_normal((n * B, width))), ember.from_numpy(rng.standard_normal((n * B, 3)))


def mine(t):
    return t[r * B:(r + 1) * B]


def make():
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3)).double()
"""

CORE = PRELUDE + """
ember.manual_seed(100)
ref = make()                      # rank 0's initial weights, trained on the concatenated batch
ember.manual_seed(100 + r)        # every rank's replica starts different: DDP must broadcast rank 0's
model = make()
ddp = DDP(model, bucket_cap_mb=0.0002)  # 210 bytes: 3 buckets
out["n_buckets"] = len(ddp.reducer.buckets)
out["init_diff"] = max(maxdiff(p, q) for p, q in zip(model.parameters(), ref.parameters()))
launches = []


def recording_hook(state, bucket):  # was the first layer's gradient (the last bucket's) still missing?
    launches.append([bucket.index(), model[0].weight.grad is None])
    return allreduce_hook(state, bucket)


ddp.register_comm_hook(None, recording_hook)
opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
grad_diffs, param_diffs = [], []
for step in range(3):
    x, y = batch(step)
    opt.zero_grad(); ref_opt.zero_grad()
    nn.functional.mse_loss(ddp(mine(x)), mine(y)).backward()
    nn.functional.mse_loss(ref(x), y).backward()
    grad_diffs.append(max(maxdiff(p.grad, q.grad) for p, q in zip(model.parameters(), ref.parameters())))
    opt.step(); ref_opt.step()
    param_diffs.append(max(maxdiff(p, q) for p, q in zip(model.parameters(), ref.parameters())))
out["launches"], out["grad_diffs"], out["param_diffs"] = launches, grad_diffs, param_diffs
out["moved"] = maxdiff(model[0].weight, make()[0].weight)  # training changed something

sd = ddp.state_dict()
out["keys"] = sorted(sd)
if r == 0:
    ember.save(sd, sys.argv[1] + "/ckpt.pt")
dist.barrier()
loaded = ember.load(sys.argv[1] + "/ckpt.pt")
consume_prefix_in_state_dict_if_present(loaded, "module.")
bare = make()
bare.load_state_dict(loaded)
out["ckpt_diff"] = max(maxdiff(p, q) for p, q in zip(bare.parameters(), ref.parameters()))

# gradient_as_bucket_view: the same training, the .grad views into the buckets (whether zero_grad sets them to None
# or zeroes the views in place, so that backward accumulates into them)
ember.manual_seed(100)
vref = make()
ember.manual_seed(100)
vmodel = make()
vddp = DDP(vmodel, bucket_cap_mb=0.0002, gradient_as_bucket_view=True)
vopt = ember.optim.SGD(vddp.parameters(), lr=0.1, momentum=0.9)
vref_opt = ember.optim.SGD(vref.parameters(), lr=0.1, momentum=0.9)
view_diffs, views = [], []
for step in range(4):
    x, y = batch(step, seed=3)
    vopt.zero_grad(set_to_none=step % 2 == 0); vref_opt.zero_grad()
    nn.functional.mse_loss(vddp(mine(x)), mine(y)).backward()
    nn.functional.mse_loss(vref(x), y).backward()
    view_diffs.append(max(maxdiff(p.grad, q.grad) for p, q in zip(vmodel.parameters(), vref.parameters())))
    views.append(all(any(np.shares_memory(p.grad.numpy(), b.buffer.numpy()) for b in vddp.reducer.buckets)
                     for p in vmodel.parameters()))
    vopt.step(); vref_opt.step()
out["view_diffs"], out["views"] = view_diffs, views
out["view_param_diff"] = max(maxdiff(p, q) for p, q in zip(vmodel.parameters(), vref.parameters()))

# without a hook: each gradient divided as it is copied into its bucket; a .grad this backward created becomes the
# bucket's averaged part (no copy back; a .grad held from an earlier step is not overwritten by later steps), one that
# existed before backward (zero_grad(set_to_none=False)) keeps its identity
ember.manual_seed(100)
dref = make()
ember.manual_seed(100)
dmodel = make()
dddp = DDP(dmodel, bucket_cap_mb=0.0002)
dopt = ember.optim.SGD(dddp.parameters(), lr=0.1, momentum=0.9)
dref_opt = ember.optim.SGD(dref.parameters(), lr=0.1, momentum=0.9)
default_diffs, identities, held_kept, held = [], [], [], None
for step in range(5):
    x, y = batch(step, seed=4)
    to_none = step % 2 == 0
    before = [p.grad for p in dmodel.parameters()]
    dopt.zero_grad(set_to_none=to_none); dref_opt.zero_grad()
    nn.functional.mse_loss(dddp(mine(x)), mine(y)).backward()
    nn.functional.mse_loss(dref(x), y).backward()
    default_diffs.append(max(maxdiff(p.grad, q.grad) for p, q in zip(dmodel.parameters(), dref.parameters())))
    if not to_none:
        identities.append(all(p.grad is g for p, g in zip(dmodel.parameters(), before)))
    if held is not None:
        held_kept.append(maxdiff(*held))
    held = (dmodel[2].weight.grad, dmodel[2].weight.grad.clone()) if step % 2 == 1 else None
    dopt.step(); dref_opt.step()
out["default_diffs"], out["identities"], out["held_kept"] = default_diffs, identities, held_kept
out["default_param_diff"] = max(maxdiff(p, q) for p, q in zip(dmodel.parameters(), dref.parameters()))


class Counter(nn.Module):  # a buffer that each forward changes
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2).double()
        self.register_buffer("count", ember.zeros(1, dtype=ember.float64))

    def forward(self, x):
        self.count += 1
        return self.lin(x)


for broadcast in (True, False):
    c = Counter()
    d = DDP(c, broadcast_buffers=broadcast)
    c.count.fill_(10.0 * r + 5)
    d(ember.ones(1, 2, dtype=ember.float64)).sum().backward()
    out[f"count_{broadcast}"] = c.count.item()
json.dump(out, open(f"{sys.argv[1]}/rank{r}.json", "w"))
"""

FEATURES = PRELUDE + """
# -- no_sync: two micro-batches, the first accumulated locally ------------------------------------------------
ember.manual_seed(7)
ref, model = make(), make()
ddp = DDP(model)
model.load_state_dict(ref.state_dict())
(x1, y1), (x2, y2) = batch(0, 1), batch(1, 1)
with ddp.no_sync():
    nn.functional.mse_loss(ddp(mine(x1)), mine(y1)).backward()
local = make(); local.load_state_dict(ref.state_dict())
nn.functional.mse_loss(local(mine(x1)), mine(y1)).backward()
out["no_sync_local_diff"] = max(maxdiff(p.grad, q.grad) for p, q in zip(model.parameters(), local.parameters()))
nn.functional.mse_loss(ddp(mine(x2)), mine(y2)).backward()
(nn.functional.mse_loss(ref(x1), y1) + nn.functional.mse_loss(ref(x2), y2)).backward()
out["no_sync_diff"] = max(maxdiff(p.grad, q.grad) for p, q in zip(model.parameters(), ref.parameters()))


# -- unused parameters ----------------------------------------------------------------------------------------
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(5, 3).double(), nn.Linear(3, 3).double()

    def forward(self, x, use_b):
        h = self.a(x)
        return self.b(h) if use_b else h


ember.manual_seed(3)
plain = DDP(Branchy())
try:
    plain(mine(x1), False).sum().backward()
    out["unused_error"] = None
except RuntimeError as e:
    out["unused_error"] = str(e)
ember.manual_seed(3)
ref_b, net = Branchy(), Branchy()
net.load_state_dict(ref_b.state_dict())
found = DDP(net, find_unused_parameters=True)
nn.functional.mse_loss(found(mine(x1), False), mine(y1)).backward()   # no rank uses b
nn.functional.mse_loss(ref_b(x1, False), y1).backward()
out["unused_a_diff"] = maxdiff(net.a.weight.grad, ref_b.a.weight.grad)
out["unused_b_grad_is_none"] = net.b.weight.grad is None
for p in [*net.parameters(), *ref_b.parameters()]:
    p.grad = None
nn.functional.mse_loss(found(mine(x1), r == 0), mine(y1)).backward()  # only rank 0 uses b
rows0, rest = slice(0, B), slice(B, n * B)
ref_out = ember.cat([ref_b(x1[rows0], True), ref_b(x1[rest], False)])
nn.functional.mse_loss(ref_out, y1).backward()
out["partly_used_diff"] = max(maxdiff(p.grad, q.grad) for p, q in zip(net.parameters(), ref_b.parameters()))

# -- find_unused_parameters with no_sync(): a parameter this rank leaves out of the syncing step still contributes the
# gradient it accumulated under no_sync() (PyTorch copies a defined .grad into the bucket); one no rank used in the
# syncing step keeps this rank's own .grad
for users in ((1,), ()):
    ember.manual_seed(3)
    acc, acc_ref = Branchy(), Branchy()
    acc_ref.load_state_dict(acc.state_dict())
    acc_ddp = DDP(acc, find_unused_parameters=True)
    with acc_ddp.no_sync():
        acc_ddp(mine(x1), True).sum().backward()
    acc_ddp(mine(x2), r in users).sum().backward()
    acc_ref(mine(x1), True).sum().backward()   # this rank's local gradients of both steps
    acc_ref(mine(x2), r in users).sum().backward()
    expect = [q.grad.clone() for q in acc_ref.parameters()]
    if users:
        for g in expect:
            dist.all_reduce(g)
            g.div_(n)
    else:  # b: no rank used it, it keeps this rank's own gradient; a: averaged
        for g in expect[:2]:
            dist.all_reduce(g)
            g.div_(n)
    out[f"no_sync_unused_diff_{len(users)}"] = max(maxdiff(p.grad, g) for p, g in zip(acc.parameters(), expect))

# -- a DDP wrapper that is collected takes its reducer (and the reducer's hooks on the parameters) with it ------------
import gc, weakref
kept = nn.Linear(2, 2).double()
gone = DDP(kept)
reducer_ref = weakref.ref(gone.reducer)
del gone
gc.collect()
out["reducer_collected"] = reducer_ref() is None
out["hooks_left"] = sum(len(p._post_acc_hooks or {}) for p in kept.parameters())

# -- uneven inputs: rank 0 has 3 batches, the others 2 -------------------------------------------------------------
for initial in (True, False):
    ember.manual_seed(11)
    ref, model = make(), make()
    model.load_state_dict(ref.state_dict())
    ddp = DDP(model)
    opt, ref_opt = ember.optim.SGD(ddp.parameters(), lr=0.1), ember.optim.SGD(ref.parameters(), lr=0.1)
    counts = [3 if k == 0 else 2 for k in range(n)]
    with ddp.join(divide_by_initial_world_size=initial):
        for step in range(counts[r]):
            x, y = batch(step, 2)
            opt.zero_grad()
            nn.functional.mse_loss(ddp(mine(x)), mine(y)).backward()
            opt.step()
    for step in range(max(counts)):  # each step: the mean losses of the ranks still training, summed, divided by
        x, y = batch(step, 2)        # the world size (or by the number of those ranks)
        active = [k for k in range(n) if counts[k] > step]
        ref_opt.zero_grad()
        loss = sum(nn.functional.mse_loss(ref(x[k * B:(k + 1) * B]), y[k * B:(k + 1) * B]) for k in active)
        (loss / (n if initial else len(active))).backward()
        ref_opt.step()
    out[f"join_diff_{initial}"] = max(maxdiff(p, q) for p, q in zip(model.parameters(), ref.parameters()))

# -- the fp16-compression hook ---------------------------------------------------------------------------------
ember.manual_seed(5)
ref, model = make(), make()
model.load_state_dict(ref.state_dict())
ddp = DDP(model)
ddp.register_comm_hook(None, fp16_compress_hook)
nn.functional.mse_loss(ddp(mine(x1)), mine(y1)).backward()
nn.functional.mse_loss(ref(x1), y1).backward()
out["fp16_diff"] = max(maxdiff(p.grad, q.grad) for p, q in zip(model.parameters(), ref.parameters()))
out["fp16_scale"] = max(float(p.grad.abs().max()) for p in ref.parameters())
out["grad_dtype"] = str(model[0].weight.grad.dtype)
json.dump(out, open(f"{sys.argv[1]}/rank{r}.json", "w"))
"""


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_training_equals_one_process_on_the_concatenated_batch(tmp_path, n):
    for r, out in enumerate(rank_outputs(n, CORE, tmp_path)):
        assert out["init_diff"] == 0.0  # rank 0's parameters broadcast at construction
        assert max(out["grad_diffs"]) < 1e-10 and max(out["param_diffs"]) < 1e-10, out
        assert out["moved"] > 1e-3
        nb = out["n_buckets"]
        assert nb >= 3
        # every step launches each bucket once, in order; the first while the first layer's gradient is missing
        assert [b for b, _ in out["launches"]] == list(range(nb)) * 3
        assert all(missing for b, missing in out["launches"] if b < nb - 1)
        assert out["keys"] == sorted(f"module.{i}.{w}" for i in (0, 2, 4) for w in ("weight", "bias"))
        assert out["ckpt_diff"] < 1e-10
        assert max(out["view_diffs"]) < 1e-10 and out["view_param_diff"] < 1e-10, out
        assert out["views"] == [True] * 4  # every .grad a view into a bucket, each step
        assert max(out["default_diffs"]) < 1e-10 and out["default_param_diff"] < 1e-10, out
        assert out["identities"] == [True, True] and out["held_kept"] == [0.0, 0.0], out
        assert out["count_True"] == 6.0  # rank 0's 5, broadcast before the forward's += 1
        assert out["count_False"] == 10.0 * r + 6


def test_ddp_no_sync_unused_parameters_join_and_fp16_hook(tmp_path):
    for r, out in enumerate(rank_outputs(2, FEATURES, tmp_path)):
        assert out["no_sync_local_diff"] < 1e-12  # inside no_sync: this rank's own gradients
        assert out["no_sync_diff"] < 1e-10        # then the accumulated ones averaged
        error = out["unused_error"]
        assert error is not None and "b.weight" in error and "b.bias" in error and "a.weight" not in error
        assert "find_unused_parameters=True" in error
        assert out["unused_a_diff"] < 1e-10 and out["unused_b_grad_is_none"]
        assert out["partly_used_diff"] < 1e-10
        assert out["no_sync_unused_diff_1"] < 1e-10 and out["no_sync_unused_diff_0"] < 1e-10, out
        assert out["reducer_collected"] and out["hooks_left"] == 0, out
        assert out["join_diff_True"] < 1e-10 and out["join_diff_False"] < 1e-10
        assert 0 < out["fp16_diff"] < 2e-3 * out["fp16_scale"]  # compressed, close to exact
        assert out["grad_dtype"] == "ember.float64"


def test_ddp_quickstart_example_trains_on_2_processes_and_saves_on_rank_0(tmp_path):
    example = Path(__file__).resolve().parents[2] / "examples" / "ddp_quickstart.py"
    ckpt = tmp_path / "model.pt"
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    command = [str(MPIEXEC), "-n", "2", sys.executable, str(example), "--epochs", "12", "--out", str(ckpt)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("epoch  0") == 1  # rank 0 alone prints
    accuracy = float(done.stdout.split("accuracy ")[1].split()[0])
    assert accuracy > 0.95, done.stdout
    assert sorted(ember.load(str(ckpt))) == sorted(f"module.{m}.{w}" for m in ("body.0", "body.2", "head")
                                                   for w in ("weight", "bias"))


def test_buckets_in_reverse_registration_order_one_dtype_each_first_one_capped_at_1_mib():
    mib = 1024 * 1024
    params = [ember.zeros(mib // 8), ember.zeros(10, dtype=ember.float64), ember.zeros(mib // 4),  # 0.5, -, 1 MiB
              ember.zeros(10), ember.zeros(mib // 2)]                                              # -, 2 MiB
    # 4 closes the 1 MiB first bucket; 3, 2 and 0 fill a 25 MiB one that never closes; float64's 1 has its own
    assert assign_buckets(params, cap_bytes=25 * mib) == [[4], [3, 2, 0], [1]]
    assert assign_buckets(params, cap_bytes=mib) == [[4], [3, 2], [1], [0]]  # open buckets last, as opened


def test_ddp_argument_errors_say_what_was_expected():
    with pytest.raises(TypeError, match="must be an ember.nn.Module"):
        DistributedDataParallel(lambda x: x)
    with pytest.raises(ValueError, match="bucket_cap_mb must be a positive number"):
        DistributedDataParallel(ember.nn.Linear(2, 2), bucket_cap_mb=0)
    with pytest.raises(ValueError, match=r"device_ids=\[1\], .* this replica's parameters are on cpu; pass"):
        DistributedDataParallel(ember.nn.Linear(2, 2), device_ids=[1])
    with pytest.raises(ValueError, match="output_device='cpu:1'"):
        DistributedDataParallel(ember.nn.Linear(2, 2), output_device="cpu:1")
