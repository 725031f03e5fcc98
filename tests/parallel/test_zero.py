"""ZeroRedundancyOptimizer on 2 and 3 MPI ranks, with DDP: 3 Adam steps (a learning-rate change on the way) equal the
unsharded Adam on the concatenated batch (float64, 1e-10); each rank keeps the state of its share only; the
consolidated state dict equals the unsharded optimizer's and loads back into a fresh ZeRO optimizer."""

import pytest

from .ranks import rank_outputs

SCRIPT = """
import sys, json, datetime
import numpy as np
import ember, ember.distributed as dist
from ember import nn
from ember.parallel import DistributedDataParallel as DDP, ZeroRedundancyOptimizer

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
out = {}
B = 4


def maxdiff(a, b):
    return float(np.abs(a.detach().numpy() - b.detach().numpy()).max())


def make():
    return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3)).double()


def train_step(ddp, opt, ref, ref_opt, step):
    g = np.random.default_rng(step)
    x, y = ember.from_numpy(g.standard_normal((n * B, 5))), ember.from_numpy(g.standard_normal((n * B, 3)))
    opt.zero_grad(); ref_opt.zero_grad()
    nn.functional.mse_loss(ddp(x[r * B:(r + 1) * B]), y[r * B:(r + 1) * B]).backward()
    nn.functional.mse_loss(ref(x), y).backward()
    opt.step(); ref_opt.step()


ember.manual_seed(0)
ref, model = make(), make()
model.load_state_dict(ref.state_dict())
ddp = DDP(model)
zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=ember.optim.Adam, lr=0.01, betas=(0.8, 0.99))
ref_opt = ember.optim.Adam(ref.parameters(), lr=0.01, betas=(0.8, 0.99))
diffs = []
for step in range(3):
    if step == 2:
        zero.param_groups[0]["lr"] = ref_opt.param_groups[0]["lr"] = 0.003  # as a scheduler would
    train_step(ddp, zero, ref, ref_opt, step)
    diffs.append(max(maxdiff(p, q) for p, q in zip(model.parameters(), ref.parameters())))
out["diffs"] = diffs
out["moved"] = maxdiff(model[0].weight, make()[0].weight)
out["local_state"] = len(zero.optim.state)
out["local_numel"] = sum(p.numel() for p in zero.optim.state)
try:
    zero.state_dict()
    out["unconsolidated_error"] = None
except RuntimeError as e:
    out["unconsolidated_error"] = str(e)
zero.consolidate_state_dict(to=0)
if r == 0:
    sd, ref_sd = zero.state_dict(), ref_opt.state_dict()
    out["keys_equal"] = sorted(sd["state"]) == sorted(ref_sd["state"])
    out["state_diff"] = max(maxdiff(sd["state"][i][k], ref_sd["state"][i][k])
                            for i in ref_sd["state"] for k in ("exp_avg", "exp_avg_sq", "step"))
    out["groups_equal"] = sd["param_groups"] == ref_sd["param_groups"]
    ember.save(sd, sys.argv[1] + "/opt.pt")
else:
    try:
        zero.state_dict()
        out["other_rank_error"] = None
    except RuntimeError as e:
        out["other_rank_error"] = str(e)
dist.barrier()
# a fresh model and ZeRO optimizer, restored from the checkpoint, go on as the unsharded ones
fresh = make()
fresh.load_state_dict(ref.state_dict())
ddp2 = DDP(fresh)
zero2 = ZeroRedundancyOptimizer(ddp2.parameters(), optimizer_class=ember.optim.Adam, lr=0.5)
zero2.load_state_dict(ember.load(sys.argv[1] + "/opt.pt"))
out["loaded_lr"] = zero2.param_groups[0]["lr"]
train_step(ddp2, zero2, ref, ref_opt, 3)
out["resumed_diff"] = max(maxdiff(p, q) for p, q in zip(fresh.parameters(), ref.parameters()))
json.dump(out, open(f"{sys.argv[1]}/rank{r}.json", "w"))
"""


@pytest.mark.parametrize("n", [2, 3])
def test_zero_equals_the_unsharded_optimizer_and_consolidates(tmp_path, n):
    outs = rank_outputs(n, SCRIPT, tmp_path)
    total = 5 * 16 + 16 + 16 * 8 + 8 + 8 * 3 + 3
    assert sum(o["local_state"] for o in outs) == 6          # each parameter's state on exactly one rank
    assert sum(o["local_numel"] for o in outs) == total
    assert all(0 < o["local_numel"] < total for o in outs)    # sharded: no rank holds all of it
    for out in outs:
        assert max(out["diffs"]) < 1e-10 and out["moved"] > 1e-3, out
        assert "consolidate_state_dict" in out["unconsolidated_error"]
        assert out["loaded_lr"] == 0.003
        assert out["resumed_diff"] < 1e-10
    assert outs[0]["keys_equal"] and outs[0]["groups_equal"] and outs[0]["state_diff"] < 1e-10
    assert all("consolidate_state_dict" in o["other_rank_error"] for o in outs[1:])
