"""Out of memory, explained and fixed: the notes' troubleshooting chapter as one program (docs/memory.md).

A deep MLP trains under a memory cap (`ember.memory.set_memory_limit`, so the same thing happens on any
machine, the CPU included). A batch that is too big raises `ember.OutOfMemoryError`, whose report says why;
then three fixes, each measured: the largest batch that fits (`find_max_batch_size`), activation
checkpointing, and bfloat16 with `ember.autocast`.

    python examples/memory_troubleshooting.py
"""
import ember
from ember import nn
from ember.utils import find_max_batch_size
from ember.utils.checkpoint import checkpoint_sequential

MiB = 1024 * 1024
WIDTH, DEPTH, CLASSES = 256, 12, 10


def build():
    """A deep MLP (12 hidden layers of 256) and its optimizer."""
    ember.manual_seed(0)
    layers = [nn.Linear(WIDTH, WIDTH) if i % 2 == 0 else nn.ReLU() for i in range(2 * DEPTH)]
    model = nn.Sequential(*layers, nn.Linear(WIDTH, CLASSES))
    return model, ember.optim.SGD(model.parameters(), lr=0.01)


def make_step(model, optimizer, mode):
    """A training step on a batch of ``batch_size`` random rows: ``mode`` is "plain", "checkpoint" (the hidden
    layers in 4 recomputed segments) or "bfloat16" (under ``ember.autocast``)."""
    def step(batch_size):
        x = ember.randn(batch_size, WIDTH)
        y = ember.randint(0, CLASSES, (batch_size,))
        optimizer.zero_grad()
        try:
            if mode == "checkpoint":
                hidden = checkpoint_sequential(model[:-1], 4, x, use_reentrant=False)
                logits = model[-1](hidden)
            elif mode == "bfloat16":
                with ember.autocast("cpu", dtype=ember.bfloat16):
                    logits = model(x)
            else:
                logits = model(x)
            loss = nn.functional.cross_entropy(logits.float(), y)
            loss.backward()
        except ember.OutOfMemoryError:
            optimizer.zero_grad()  # a backward cut short leaves some gradients: drop them with the rest
            raise
        optimizer.step()
    return step


def step_peak(step, batch_size, held):
    """The bytes one step of ``batch_size`` rows needs above what the model holds."""
    ember.reset_peak_memory_stats()
    step(batch_size)
    return ember.max_memory_allocated() - held


def main():
    model, optimizer = build()
    make_step(model, optimizer, "plain")(1)  # the gradients exist from here on: part of what the model holds
    held = ember.memory_allocated()
    ember.memory.set_memory_limit(held + 16 * MiB)  # 16 MiB for one step's activations
    print(f"the model, its gradients and the optimizer hold {held / MiB:.1f} MiB; cap: 16 MiB more")

    # 1. too big: the report says what was asked, what is held, by what, and what usually helps
    try:
        make_step(model, optimizer, "plain")(4096)
    except ember.OutOfMemoryError as error:
        print("batch 4096:", str(error).splitlines()[0])
        print(f"  the device held {error.allocated / MiB:.1f} MiB; largest tensor: "
              f"{list(error.top_tensors[0]['shape'])}")

    # 2-4. what a step of 1024 rows needs, and the largest batch that fits: plain, checkpointed, bfloat16
    found = {}
    for mode in ("plain", "checkpoint", "bfloat16"):
        step = make_step(model, optimizer, mode)
        peak = step_peak(step, 1024, held)
        search = find_max_batch_size(step, start=256, max=8192)
        found[mode] = search.batch_size
        print(f"{mode:>10}: a step of 1024 rows needs {peak / MiB:5.1f} MiB; largest batch under the cap: "
              f"{search.batch_size}")
    ember.memory.set_memory_limit(None)
    return found


if __name__ == "__main__":
    main()
