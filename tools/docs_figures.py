"""An MkDocs hook: the documentation's figures are drawn by the build, from small real runs, never pasted.

mkdocs.yml loads it (``hooks: [tools/docs_figures.py]``). Each figure is a function that runs ember and returns
a matplotlib figure (or PNG bytes); the PNGs join the site as ``figures/<name>.png`` (nothing is written into
``docs/``), so a page shows one with ``![...](../figures/<name>.png)`` and ``mkdocs build --strict`` checks
the link. The runs are small: all of them take a few seconds.
"""
from __future__ import annotations

import io
import os
import tempfile

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from mkdocs.structure.files import File  # noqa: E402

import ember  # noqa: E402
from ember import nn, tune  # noqa: E402
from ember.data import DataLoader, TensorDataset  # noqa: E402


def lr_find():
    """The learning-rate range test on the tuning guide's small classifier."""
    ember.manual_seed(0)
    x = ember.randn(256, 4)
    y = (x.sum(dim=1) > 0).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    found = tune.lr_find(model, nn.CrossEntropyLoss(), ember.optim.SGD(model.parameters(), lr=0.1), loader,
                         num_iter=50)
    ax = found.plot()
    ax.set_title("lr_find: smoothed loss against the learning rate")
    return ax.figure


def tuning_run():
    """An ASHA run of the tuning guide's made-up training: each trial's learning curve, and the best so far."""
    exp = tune.Experiment({"lr": tune.loguniform(1e-4, 1e-1)}, metric="loss", mode="min", num_samples=20, seed=0,
                          search_alg="random", scheduler=tune.ASHAScheduler(max_t=9, grace_period=1))
    while (trial := exp.ask()) is not None:
        for epoch in range(1, 10):
            loss = (trial.config["lr"] - 0.01) ** 2 * 1e4 + 1 / epoch
            if exp.report(trial, {"loss": loss}) != tune.Decision.CONTINUE:
                break
        exp.tell(trial)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    tune.plot_learning_curves(exp.results(), metric="loss", ax=left)
    left.set_yscale("log")
    left.set_title("learning curves (ASHA stops the bad trials early)")
    if left.get_legend() is not None:
        left.get_legend().remove()
    tune.plot_best_over_time(exp.results(), metric="loss", mode="min", ax=right, x="budget")
    right.set_title("best loss so far, against epochs used")
    fig.tight_layout()
    return fig


def memory_timeline():
    """The memory of a few training steps of a small MLP, recorded with ember.memory.record_memory_history."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10))
    optimizer = ember.optim.Adam(model.parameters())
    ember.memory.record_memory_history(max_entries=100_000)
    try:
        for _ in range(3):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(ember.randn(512, 256)), ember.randint(0, 10, (512,)))
            loss.backward()
            optimizer.step()
        snapshot = ember.memory.memory_snapshot()
    finally:
        ember.memory.record_memory_history(enabled=None)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "timeline.png")
        ember.memory.plot_timeline(snapshot, path, top=3)
        with open(path, "rb") as f:
            return f.read()


def pipeline_schedule():
    """A Pipe of two stages on cpu:0 and cpu:1, four micro-batches: when each stage ran each micro-batch's
    forward (measured with forward hooks on the stages, after one warm-up call)."""
    import threading
    import time

    from ember.parallel import Pipe

    before = ember.backends.cpu.device_count()
    ember.backends.cpu.set_device_count(2)
    try:
        ember.manual_seed(0)
        layers = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
        pipe = Pipe(layers, chunks=4, balance=[2, 3], devices=["cpu:0", "cpu:1"])
        x = ember.randn(256, 512)
        with ember.no_grad():
            pipe(x)  # warm-up
        spans: list[tuple[int, float, float]] = []
        for j, stage in enumerate(pipe.partitions):
            starts: dict[int, float] = {}
            stage.register_forward_pre_hook(
                lambda m, i, starts=starts: starts.__setitem__(threading.get_ident(), time.perf_counter()))
            stage.register_forward_hook(lambda m, i, o, j=j, starts=starts: spans.append(
                (j, starts.pop(threading.get_ident()), time.perf_counter())))
        t0 = time.perf_counter()
        with ember.no_grad():
            pipe(x)
    finally:
        ember.backends.cpu.set_device_count(before)
    fig, ax = plt.subplots(figsize=(9, 2.6))
    colors = plt.get_cmap("tab10").colors
    for j in range(len(pipe.partitions)):
        for k, (_, start, end) in enumerate(sorted((s for s in spans if s[0] == j), key=lambda s: s[1])):
            ax.barh(j, (end - start) * 1e3, left=(start - t0) * 1e3, color=colors[k], edgecolor="black")
            ax.text((start + end) / 2 * 1e3 - t0 * 1e3, j, f"{k}", ha="center", va="center", color="white")
    ax.set_yticks(range(len(pipe.partitions)), [f"stage {j} (cpu:{j})" for j in range(len(pipe.partitions))])
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds")
    ax.set_title("Pipe, GPipe schedule: each stage's forward of micro-batches 0-3 (measured)")
    fig.tight_layout()
    return fig


FIGURES = {"lr_find": lr_find, "tuning_run": tuning_run, "memory_timeline": memory_timeline,
           "pipeline_schedule": pipeline_schedule}


def png(figure) -> bytes:
    """A matplotlib figure (closed after) as PNG bytes; bytes pass through."""
    if isinstance(figure, bytes):
        return figure
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()


def on_files(files, config):
    """Add ``figures/<name>.png`` for every figure to the site's files."""
    for name, draw in FIGURES.items():
        files.append(File.generated(config, f"figures/{name}.png", content=png(draw())))
    return files
