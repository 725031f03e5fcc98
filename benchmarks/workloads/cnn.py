"""Workload 2: the PyTorch MNIST example CNN, batch 64 of 1x28x28, cross-entropy, Adam: a training step.

Its details: the FLOP/s of the second convolution's forward against NumPy's float32 matmul on the
same GEMM (target: ember at least half of NumPy), and the peak memory of one ember training step
against what the step must hold (target: at most 1.5x; see :func:`memory_detail` for the count).
"""
import functools
import gc
import os
import tracemalloc

import numpy as np

from ._training import training_step

NAME = "cnn"
TITLE = "MNIST CNN (conv32-conv64-pool-fc128-fc10), batch 64x1x28x28, cross-entropy, Adam: training step"
TARGETS = (0.85, 1.0)

BATCH, LR = 64, 1e-3
CONV_FLOPS_TARGET, MEMORY_TARGET = 0.5, 1.5


#: ``fused=True`` for both libraries' optimizers with ``BENCH_FUSED=1`` (default: their per-parameter update)
FUSED = True if os.environ.get("BENCH_FUSED") == "1" else None

def build(lib):
    """The model, its Adam optimizer, a batch and a training step, in ``lib`` (ember or torch)."""
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = lib.optim.Adam(model.parameters(), lr=LR, fused=FUSED)
    x, y = lib.randn(BATCH, 1, 28, 28), lib.randint(0, 10, (BATCH,))

    step = training_step(model, opt, nn.functional.cross_entropy, x, y)
    return model, opt, x, y, step


def setup(lib):
    """A training step of the CNN in ``lib``."""
    return build(lib)[-1]


def details(libs, timer):
    """The second convolution's FLOP/s, and ember's peak memory in a training step."""
    return [conv_detail(libs, timer), memory_detail(libs["ember"])]


def conv_detail(libs, timer):
    """FLOP/s of ``conv2d`` on the second convolution's input (64x32x26x26 -> 64x64x24x24, 3x3), forward only.

    Timed as in training: grad mode on, the input and the weight require grad (so the forward saves
    what backward needs). NumPy's reference is ``np.matmul(..., out=...)`` on the im2col GEMM of that
    convolution, (N*Ho*Wo, Cin*k*k) @ (Cin*k*k, Cout), and on its transpose, whichever is faster.
    """
    fns = {}
    for name, lib in libs.items():
        model, _, x, _, _ = build(lib)
        with lib.no_grad():
            a = model[1](model[0](x))
        a = a.detach().requires_grad_(True)
        conv = model[2]
        fns[name] = functools.partial(lib.nn.functional.conv2d, a, conv.weight, conv.bias)
    n, cin, h, w = a.shape
    cout, k = conv.weight.shape[0], conv.weight.shape[-1]
    ho, wo = h - k + 1, w - k + 1
    flops = 2 * n * cout * ho * wo * cin * k * k
    rng = np.random.default_rng(0)
    cols = rng.standard_normal((n * ho * wo, cin * k * k), dtype=np.float32)
    weight = rng.standard_normal((cin * k * k, cout), dtype=np.float32)
    out, out_t = np.empty((n * ho * wo, cout), np.float32), np.empty((cout, n * ho * wo), np.float32)
    cols_t, weight_t = np.ascontiguousarray(cols.T), np.ascontiguousarray(weight.T)
    fns["numpy cols@w"] = lambda: np.matmul(cols, weight, out=out)
    fns["numpy w@cols"] = lambda: np.matmul(weight_t, cols_t, out=out_t)
    seconds = timer(fns)
    gflops = {name: flops / s / 1e9 for name, s in seconds.items()}
    numpy_best = max(gflops.pop("numpy cols@w"), gflops.pop("numpy w@cols"))
    ratio = gflops["ember"] / numpy_best
    torch_text = f", PyTorch conv2d {gflops['torch']:.1f} GFLOP/s" if "torch" in gflops else ""
    return {"name": "cnn conv2 forward FLOP/s", "flops": flops, "ember_gflops": gflops["ember"],
            "numpy_matmul_gflops": numpy_best, "torch_gflops": gflops.get("torch"), "ratio_to_numpy": ratio,
            "target": f">= {CONV_FLOPS_TARGET}x NumPy matmul", "passed": ratio >= CONV_FLOPS_TARGET,
            "text": (f"ember conv2d {gflops['ember']:.1f} GFLOP/s vs NumPy matmul {numpy_best:.1f} GFLOP/s on the "
                     f"im2col GEMM ({n * ho * wo}x{cin * k * k} @ {cin * k * k}x{cout}): {ratio:.2f}x{torch_text}")}


#: what each layer's backward needs of the forward, counted once per storage
SAVED = {"Conv2d": ("input",), "Linear": ("input",), "ReLU": ("output",), "MaxPool2d": ("input", "output")}


def memory_detail(ember):
    """Peak bytes of one ember training step against parameters + gradients + optimizer state + saved activations.

    Saved activations are counted from a forward with hooks, by what each layer's backward needs:
    a convolution's and a linear layer's input (for the weight gradient), a ReLU's output (its mask),
    a max pooling's input and output (enough to find where the maxima were; PyTorch keeps int64
    indices instead, not counted here), nothing for ``Flatten`` (a view), the logits (the size of the
    softmax the loss keeps) and the labels. Each storage counts once (a ReLU's output is the next
    layer's input; the flattened pooling output is a view of it and the first linear layer's input).
    The batch is in the count as the first convolution's input.

    The peak comes from ``ember.max_memory_allocated()`` over a step after a warm-up step (so the
    optimizer state exists), less what was allocated before the model was built. A second figure,
    informative only, is the peak of all memory traced by ``tracemalloc`` (NumPy reports its arrays
    to it, including those no tensor owns) over the same step of a model built under tracing.
    """
    gc.collect()
    before = ember.memory_allocated()  # tensors that live outside this step, not counted
    model, opt, x, y, step = build(ember)
    saved = {}

    def hook(module, inputs, output):
        for which in SAVED.get(type(module).__name__, ()):
            t = inputs[0] if which == "input" else output
            saved[t.data_ptr()] = t.nbytes
    handles = [m.register_forward_hook(hook) for m in model]
    logits = model(x)
    for h in handles:
        h.remove()
    del logits
    step()
    params = sum(p.nbytes for p in model.parameters())
    grads = sum(p.grad.nbytes for p in model.parameters())
    state = sum(v.nbytes for s in opt.state.values() for v in s.values() if hasattr(v, "nbytes"))
    activations = sum(saved.values()) + BATCH * 10 * 4 + y.nbytes
    total = params + grads + state + activations
    ember.reset_peak_memory_stats()
    step()
    peak = ember.max_memory_allocated() - before
    traced = _traced_peak(ember)
    ratio = peak / total
    mb = 1e6
    return {"name": "cnn training-step peak memory", "peak_bytes": peak, "params_bytes": params,
            "grads_bytes": grads, "optimizer_state_bytes": state, "saved_activation_bytes": activations,
            "sum_bytes": total, "ratio": ratio, "tracemalloc_peak_bytes": traced,
            "target": f"<= {MEMORY_TARGET}x the sum", "passed": ratio <= MEMORY_TARGET,
            "text": (f"ember peak {peak / mb:.1f} MB vs sum {total / mb:.1f} MB (params {params / mb:.1f} + grads "
                     f"{grads / mb:.1f} + Adam state {state / mb:.1f} + saved activations {activations / mb:.1f}): "
                     f"{ratio:.2f}x; all NumPy memory (tracemalloc) peaks at {traced / mb:.1f} MB "
                     f"({traced / total:.2f}x)")}


def _traced_peak(ember):
    """Peak bytes traced by ``tracemalloc`` over a training step (after a warm-up) of a model built under tracing."""
    tracemalloc.start()
    try:
        *_, step = build(ember)
        step()
        tracemalloc.reset_peak()
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
