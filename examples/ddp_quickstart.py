"""The quickstart's spiral network, trained on 2 processes with DistributedDataParallel.

Each process takes its share of every epoch's shuffled data (``DistributedSampler``), computes the gradients of its
mini-batch, and DDP averages them over the processes during backward, so every process takes the same optimizer
step: together they train as one process on mini-batches twice the size. Rank 0 prints and saves the checkpoint,
which then loads into the bare model.

    ember-run --nproc-per-node 2 examples/ddp_quickstart.py [--epochs 41] [--out ddp_quickstart.pt]
    mpiexec -n 2 .venv/bin/python examples/ddp_quickstart.py          # the same, with MPI's own launcher
"""
import argparse
import math

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import nn
from ember.data import DataLoader, DistributedSampler, TensorDataset
from ember.nn.modules.utils import consume_prefix_in_state_dict_if_present
from ember.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--epochs", type=int, default=41)
parser.add_argument("--out", default="ddp_quickstart.pt", help="where rank 0 saves the trained model")
args = parser.parse_args()

dist.init_process_group("mpi")  # the ranks come from the launcher (ember-run or mpiexec)
rank, world = dist.get_rank(), dist.get_world_size()

# --- data: the quickstart's 3 spiral arms, made alike on every rank (same seed) -------------------------------
ember.manual_seed(0)
classes, per_class = 3, 200
r = ember.linspace(0.1, 1.0, per_class).repeat(classes)
label = ember.arange(classes).repeat_interleave(per_class)
theta = label * (2 * math.pi / classes) + 3.0 * r + 0.1 * ember.randn(classes * per_class)
x = ember.stack([r * ember.cos(theta), r * ember.sin(theta)], dim=1)  # (600, 2)
dataset = TensorDataset(x, label)
sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True)  # instead of shuffle=True
loader = DataLoader(dataset, batch_size=60 // world, sampler=sampler, pin_memory=True)


# --- model: the quickstart's, wrapped in DDP (rank 0's initial weights reach every rank) -----------------------
class SpiralNet(nn.Module):
    def __init__(self, hidden: int = 64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


model = DDP(SpiralNet())
optimizer = ember.optim.Adam(model.parameters(), lr=0.01)
scheduler = ember.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)

# --- training ---------------------------------------------------------------------------------------------------
for epoch in range(args.epochs):
    sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
    total = ember.zeros(1)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()  # gradients averaged over the ranks here
        optimizer.step()
        total += loss.detach() * len(yb)
    scheduler.step()
    dist.all_reduce(total)  # the epoch's loss over all ranks' samples, for the printout
    if rank == 0 and epoch % 5 == 0:
        print(f"epoch {epoch:2d}   loss {total.item() / len(x):.4f}   lr {scheduler.get_last_lr()[0]:.4f}")

# --- checkpoint: saved by rank 0 only; its keys carry DDP's "module." prefix -----------------------------------
if rank == 0:
    ember.save(model.state_dict(), args.out)
dist.barrier()  # the file is complete before anyone reads it
if rank == 0:
    state = ember.load(args.out)
    consume_prefix_in_state_dict_if_present(state, "module.")
    bare = SpiralNet()
    bare.load_state_dict(state)
    bare.eval()
    with ember.no_grad():
        accuracy = (bare(x).argmax(dim=1) == label).float().mean().item()
    print(f"accuracy {accuracy:.3f} (the saved model, loaded into a bare SpiralNet)   saved to {args.out}")
dist.destroy_process_group()
