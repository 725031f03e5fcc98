"""The multi-process pipeline (ember.parallel.pipelining) on 2 and 3 MPI ranks, each run an ``mpiexec`` subprocess:
GPipe and 1F1B, with and without activation checkpointing, give the loss, output and every parameter's gradient of
the unpipelined model (float64); 1F1B holds at most ``num_stages - stage`` micro-batches' activations (counted, and
seen in the memory peak); and the errors for a batch that n_microbatches does not divide and a stage count that is
not the world size; a checkpointed stage with BatchNorm updates its running statistics once per micro-batch."""
import json

import pytest

import ember
from ember.parallel.pipelining import Schedule1F1B, ScheduleGPipe

from .ranks import run_ranks

# Every rank builds the same 7-layer float64 model (same seed), keeps its slice of layers as its stage, and compares
# what the pipeline computed with the unpipelined model on the whole batch: each rank its own parameters' gradients,
# the last rank the loss and the output. Each rank writes its findings to rank<r>.json.
PIPELINE = """
import copy, datetime, json, sys
import ember, ember.nn as nn, ember.distributed as dist
from ember.parallel import PipelineStage, ScheduleGPipe, Schedule1F1B

dist.init_process_group(timeout=datetime.timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
CUTS = {2: [0, 4, 7], 3: [0, 2, 4, 7]}[n]

def model(width):
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                         nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 2)).double()

def batch(size):
    ember.manual_seed(1)
    return ember.randn(size, 6, dtype=ember.float64), ember.randn(size, 2, dtype=ember.float64)

full = model(16)
x, y = batch(12)
ref = copy.deepcopy(full)
ref_out = ref(x)
ref_loss = nn.MSELoss()(ref_out, y)
ref_loss.backward()
mine = slice(CUTS[r], CUTS[r + 1])
ref_grads = [p.grad for p in ref[mine].parameters()]
found = {"cases": {}}
for sched in (ScheduleGPipe, Schedule1F1B):
    for checkpoint in (False, True):
        part = copy.deepcopy(full)[mine]
        stage = PipelineStage(part, r, n, checkpoint=checkpoint)
        schedule = sched(stage, n_microbatches=4, loss_fn=nn.MSELoss())
        for _ in range(2):  # the second step, after zeroing, must give the same as the first
            part.zero_grad()
            losses = []
            out = schedule.step(x) if r == 0 else schedule.step(target=y if r == n - 1 else None,
                                                               losses=losses if r == n - 1 else None)
        case = {"grad_err": max(float((p.grad - g).abs().max()) for p, g in zip(part.parameters(), ref_grads)),
                "n_params": len(ref_grads), "max_live": stage.max_live_activations,
                "live_after": stage.live_activations}
        if r == n - 1:
            case["loss_err"] = abs(float(ember.stack(losses).mean()) - float(ref_loss))
            case["n_losses"] = len(losses)
            case["out_err"] = float((out - ref_out.detach()).abs().max())
        else:
            case["out_none"] = out is None
        found["cases"][f"{sched.__name__}/{checkpoint}"] = case
        # forward only (no loss_fn): the last stage's output equals the model's, and nothing is kept
        if checkpoint is False:
            fwd = sched(PipelineStage(part, r, n), n_microbatches=3)
            got = fwd.step(x) if r == 0 else fwd.step()
            if r == n - 1:
                found[f"forward_only/{sched.__name__}"] = float((got - ref_out.detach()).abs().max())

# dropout: checkpointing recomputes a stage's forward with the random state its forward had, so the masks repeat
drop_grads = {}
for checkpoint in (False, True):
    part = nn.Sequential(nn.Dropout(0.5), copy.deepcopy(full)[mine])
    schedule = Schedule1F1B(PipelineStage(part, r, n, checkpoint=checkpoint), 4, loss_fn=nn.MSELoss())
    ember.manual_seed(5 + r)
    schedule.step(x) if r == 0 else schedule.step(target=y if r == n - 1 else None)
    drop_grads[checkpoint] = [p.grad for p in part.parameters()]
found["dropout_ckpt_err"] = max(float((a - b).abs().max()) for a, b in zip(*drop_grads.values()))
found["dropout_vs_ref"] = max(float((a - b).abs().max()) for a, b in zip(drop_grads[True], ref_grads))

# BatchNorm: a checkpointed stage's recomputation puts the buffers back, so one step of 4 micro-batches updates the
# running statistics 4 times (not 8), to the values the non-checkpointed stage ends with; gradients equal too
for sched in (ScheduleGPipe, Schedule1F1B):
    bn_runs = {}
    for checkpoint in (False, True):
        ember.manual_seed(7)
        bn = nn.BatchNorm1d(6 if r == 0 else 16).double()
        part = nn.Sequential(bn, copy.deepcopy(full)[mine])
        schedule = sched(PipelineStage(part, r, n, checkpoint=checkpoint), 4, loss_fn=nn.MSELoss())
        schedule.step(x) if r == 0 else schedule.step(target=y if r == n - 1 else None)
        bn_runs[checkpoint] = (int(bn.num_batches_tracked), bn.running_mean.clone(), bn.running_var.clone(),
                               [p.grad for p in part.parameters()])
    (n0, mean0, var0, g0), (n1, mean1, var1, g1) = bn_runs[False], bn_runs[True]
    found[f"bn/{sched.__name__}"] = {
        "tracked": [n0, n1],
        "stats_err": max(float((mean1 - mean0).abs().max()), float((var1 - var0).abs().max())),
        "moved": float((mean0 - 0).abs().max()),
        "grad_err": max(float((a - b).abs().max()) for a, b in zip(g0, g1))}

# activation memory: a model wide inside its stages and narrow between them (so that what crosses ranks is small), 16
# micro-batches; the peak of bytes held during a step, per schedule, with and without checkpointing
ember.manual_seed(0)
bx, by = ember.randn(1024, 8, dtype=ember.float64), ember.randn(1024, 8, dtype=ember.float64)
for sched in (ScheduleGPipe, Schedule1F1B):
    for checkpoint in (False, True):
        part = nn.Sequential(nn.Linear(8, 256), nn.Tanh(), nn.Linear(256, 8)).double()
        schedule = sched(PipelineStage(part, r, n, checkpoint=checkpoint), 16, loss_fn=nn.MSELoss())
        part(bx[:64]).sum().backward()  # the parameters' .grad exist before the step measured
        base = ember.memory_allocated()
        ember.reset_peak_memory_stats()
        schedule.step(bx) if r == 0 else schedule.step(target=by if r == n - 1 else None)
        found[f"peak/{sched.__name__}/{checkpoint}"] = ember.max_memory_allocated() - base

# errors, raised on each rank on its own before anything is sent
def error(fn):
    try:
        fn()
    except (ValueError, TypeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return "no error"

part = copy.deepcopy(full)[mine]
found["err_stages"] = error(lambda: PipelineStage(part, r, n + 1))
found["err_index"] = error(lambda: PipelineStage(part, (r + 1) % n, n))
schedule = Schedule1F1B(PipelineStage(part, r, n), 4, loss_fn=nn.MSELoss())
if r == 0:
    found["err_batch"] = error(lambda: schedule.step(x[:10]))
if r == n - 1:
    found["err_target"] = error(lambda: schedule.step(target=y[:10]))
found["err_n_micro"] = error(lambda: ScheduleGPipe(PipelineStage(part, r, n), 0))
dist.barrier()
with open(f"{sys.argv[1]}/rank{r}.json", "w") as f:
    json.dump(found, f)
dist.destroy_process_group()
"""


@pytest.fixture(scope="module", params=[2, 3], ids=["2_ranks", "3_ranks"])
def ranks(request, tmp_path_factory):
    """What each rank of one run of PIPELINE on 2 or 3 ranks found (a list of dicts, by rank)."""
    n, tmp_path = request.param, tmp_path_factory.mktemp(f"pipeline{request.param}")
    done = run_ranks(n, PIPELINE, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(n)]


def test_pipeline_gradients_equal_the_unpipelined_model(ranks):
    n = len(ranks)
    for r, found in enumerate(ranks):
        assert len(found["cases"]) == 4
        for name, case in found["cases"].items():
            sched = name.split("/")[0]
            assert case["n_params"] > 0 and case["grad_err"] < 1e-10, (r, name, case)
            # GPipe holds every micro-batch; 1F1B at most num_stages - stage_index of them
            assert case["max_live"] == (4 if sched == "ScheduleGPipe" else min(n - r, 4)), (r, name, case)
            assert case["live_after"] == 0
            if r == n - 1:
                assert case["n_losses"] == 4 and case["loss_err"] < 1e-10 and case["out_err"] < 1e-10, (name, case)
            else:
                assert case["out_none"]
    for sched in ("ScheduleGPipe", "Schedule1F1B"):
        assert ranks[-1][f"forward_only/{sched}"] < 1e-10


def test_checkpointing_repeats_the_dropout_masks(ranks):
    for found in ranks:
        assert found["dropout_vs_ref"] > 1e-3  # dropout did change the gradients ...
        assert found["dropout_ckpt_err"] < 1e-12  # ... and the recomputed forward dropped the same elements


def test_checkpointing_updates_batchnorm_statistics_once(ranks):
    for found in ranks:
        for sched in ("ScheduleGPipe", "Schedule1F1B"):
            bn = found[f"bn/{sched}"]
            assert bn["tracked"] == [4, 4], (sched, bn)  # one update per micro-batch, with or without checkpointing
            assert bn["moved"] > 0, (sched, bn)  # the statistics did move from their initial values
            assert bn["stats_err"] < 1e-12, (sched, bn)
            assert bn["grad_err"] < 1e-10, (sched, bn)


def test_pipeline_schedules_bound_activation_memory(ranks):
    for r, found in enumerate(ranks):
        # GPipe keeps 16 micro-batches' activations, 1F1B at most 3, checkpointing only their (narrow) inputs, and,
        # as PyTorch's checkpoint does, the CPU generator's state (a 5056-byte tensor) of each checkpointed call
        peak = {k.split("/", 1)[1]: v for k, v in found.items() if k.startswith("peak/")}
        rng_states = 16 * len(ember.random.get_rng_state())
        assert peak["Schedule1F1B/False"] < 0.4 * peak["ScheduleGPipe/False"], (r, peak)
        assert peak["ScheduleGPipe/True"] < 0.4 * peak["ScheduleGPipe/False"], (r, peak)
        assert peak["Schedule1F1B/True"] < 1.05 * peak["Schedule1F1B/False"] + rng_states, (r, peak)


def test_pipeline_errors_say_what_was_wrong(ranks):
    n = len(ranks)
    for found in ranks:
        assert found["err_stages"].startswith("ValueError")
        assert f"num_stages={n + 1} does not match the world size {n}" in found["err_stages"]
        assert "stage_index=" in found["err_index"] and "must build stage" in found["err_index"]
        assert "n_microbatches must be a positive int, but got 0" in found["err_n_micro"]
    assert "input 0 is a batch of 10, which n_microbatches=4 does not divide" in ranks[0]["err_batch"]
    assert "target is a batch of 10, which n_microbatches=4 does not divide" in ranks[-1]["err_target"]


def test_schedule_orders():
    assert ScheduleGPipe.order(0, 2, 2) == ["F0", "F1", "B0", "B1"]
    for s in range(4):
        order = Schedule1F1B.order(s, 4, 6)
        assert sorted(order) == sorted([f"F{i}" for i in range(6)] + [f"B{i}" for i in range(6)])
        live = peak = 0
        for action in order:
            live += 1 if action[0] == "F" else -1
            peak = max(peak, live)
            assert action[0] == "F" or f"F{action[1:]}" in order[:order.index(action)]
        assert peak == 4 - s
