"""SyncBatchNorm on 2 and 3 MPI ranks holding batches of different sizes: outputs, input and parameter gradients and
running statistics equal BatchNorm's on the concatenated batch (float64); convert_sync_batchnorm swaps the layers
and keeps their tensors; inside DDP, 3 SGD steps of a conv net equal one process on the concatenated batch."""

import pytest

from .ranks import rank_outputs

SCRIPT = """
import sys, json, datetime
import numpy as np
import ember, ember.distributed as dist
from ember import nn
from ember.parallel import DistributedDataParallel as DDP, SyncBatchNorm

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
out = {}
sizes = [3 + 2 * k for k in range(n)]           # rows per rank: uneven
start, stop = sum(sizes[:r]), sum(sizes[:r + 1])
rng = np.random.default_rng(0)
x_all = ember.from_numpy(rng.standard_normal((sum(sizes), 4, 5)))
w_all = ember.from_numpy(rng.standard_normal((sum(sizes), 4, 5)))  # the loss's weights


def maxdiff(a, b):
    return float(np.abs(a.detach().numpy() - b.detach().numpy()).max())


sync, ref = SyncBatchNorm(4, dtype=ember.float64), nn.BatchNorm1d(4, dtype=ember.float64)
with ember.no_grad():
    for m in (sync, ref):
        m.weight.copy_(ember.tensor([1.0, 2.0, 0.5, -1.0]))
        m.bias.copy_(ember.tensor([0.0, 1.0, -1.0, 0.5]))
x = x_all[start:stop].clone().requires_grad_(True)
xr = x_all.clone().requires_grad_(True)
for _ in range(2):
    y, yr = sync(x), ref(xr)
    (y * w_all[start:stop]).sum().backward()
    (yr * w_all).sum().backward()
out["out_diff"] = maxdiff(y, yr[start:stop])
out["input_grad_diff"] = maxdiff(x.grad, xr.grad[start:stop])
param_grads = ember.cat([sync.weight.grad, sync.bias.grad]).contiguous()
dist.all_reduce(param_grads)                      # each rank holds its part of the total loss's gradient
out["param_grad_diff"] = maxdiff(param_grads, ember.cat([ref.weight.grad, ref.bias.grad]))
out["running_diff"] = max(maxdiff(sync.running_mean, ref.running_mean), maxdiff(sync.running_var, ref.running_var))
out["batches"] = int(sync.num_batches_tracked.item())
sync.eval(); ref.eval()
out["eval_diff"] = maxdiff(sync(x), ref(xr)[start:stop])

# bfloat16 input with 257 values per channel on each rank, summing to 256: the count (in float32, not bf16, which
# rounds 257 to 256) makes the mean 256 / 257 (0.99609 in bf16), not 1
half = SyncBatchNorm(1, momentum=1.0, dtype=ember.bfloat16)
xh = ember.zeros(257, 1, dtype=ember.bfloat16)
xh[0] = 256.0
out["bf16_dtype"] = str(half(xh).dtype)
out["bf16_mean"] = float(half.running_mean.float().item())


def net():
    return nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 16, 2)).double()


ember.manual_seed(0)
ref_net, model = net(), net()
model.load_state_dict(ref_net.state_dict())
bn = model[1]
model = SyncBatchNorm.convert_sync_batchnorm(model)
out["converted"] = [type(m).__name__ for m in model]
out["same_tensors"] = model[1].weight is bn.weight and model[1].running_mean is bn.running_mean
ddp = DDP(model)
B = 4
opt, ref_opt = ember.optim.SGD(ddp.parameters(), lr=0.1), ember.optim.SGD(ref_net.parameters(), lr=0.1)
diffs = []
for step in range(3):
    g = np.random.default_rng(step + 1)
    xb, yb = ember.from_numpy(g.standard_normal((n * B, 1, 6, 6))), ember.from_numpy(g.standard_normal((n * B, 2)))
    opt.zero_grad(); ref_opt.zero_grad()
    nn.functional.mse_loss(ddp(xb[r * B:(r + 1) * B]), yb[r * B:(r + 1) * B]).backward()
    nn.functional.mse_loss(ref_net(xb), yb).backward()
    opt.step(); ref_opt.step()
    diffs.append(max(maxdiff(p, q) for p, q in zip(model.parameters(), ref_net.parameters())))
out["ddp_diffs"] = diffs
out["ddp_running_diff"] = maxdiff(model[1].running_var, ref_net[1].running_var)
json.dump(out, open(f"{sys.argv[1]}/rank{r}.json", "w"))
"""


@pytest.mark.parametrize("n", [2, 3])
def test_sync_batchnorm_equals_batchnorm_on_the_concatenated_batch(tmp_path, n):
    for out in rank_outputs(n, SCRIPT, tmp_path):
        for key in ("out_diff", "input_grad_diff", "param_grad_diff", "running_diff", "eval_diff",
                    "ddp_running_diff"):
            assert out[key] < 1e-10, (key, out)
        assert out["batches"] == 2
        assert out["bf16_dtype"] == "ember.bfloat16"
        assert abs(out["bf16_mean"] - 256 / 257) < 1e-3, out["bf16_mean"]
        assert out["converted"] == ["Conv2d", "SyncBatchNorm", "ReLU", "Flatten", "Linear"]
        assert out["same_tensors"]
        assert max(out["ddp_diffs"]) < 1e-10, out
