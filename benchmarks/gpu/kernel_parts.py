"""ember's ``cuda`` kernels against the ops' own array-API forwards: which kernels help, and by how much.

Each family of kernels (``ember.backends.cuda.kernels``) is timed on an op it serves, with every kernel in
place against the same table without that family; then whole training steps with all kernels, with only the
plain-``xp`` ones (no compiled CuPy kernels), and with none.
"""
from __future__ import annotations

import kernel_tables
from _timing import alternate
from parts import WORKLOADS, synchronizer

FAMILIES = {
    "convolution": ("convolution", "convolution_backward", "convolutionweightgrad"),
    "max_pool": ("max_pool2d", "max_pool2d_with_indices", "max_pool_backward", "max_pool1d",
                 "max_pool1d_with_indices"),
    "avg_pool": ("avg_pool1d", "avg_pool2d", "avg_pool_backward"),
    "gelu": ("gelu",), "silu": ("silu",), "sigmoid": ("sigmoid",),
    "index_add": ("indexadd", "scatteradd"),
    "softmax": ("softmax", "logsoftmax"),
}


def _benches(ember, device):
    """``{family: (what, fn)}``: one call of an op the family serves, on GPU-sized inputs."""
    F = ember.nn.functional
    ember.manual_seed(0)

    def grad_step(fn, *shapes):
        leaves = [ember.randn(*s, device=device).requires_grad_() for s in shapes]

        def run():
            out = fn(*leaves)
            out.backward(ember.ones_like(out))
            for t in leaves:
                t.grad = None
        return run

    def forward(fn, shape):
        x = ember.randn(*shape, device=device)

        def run():
            with ember.no_grad():
                fn(x)
        return run

    index = ember.randint(0, 1000, (1 << 20,), device=device)
    base, src = ember.zeros(1000, 16, device=device), ember.randn(1 << 20, 16, device=device)
    return {
        "convolution": ("conv2d 32x128x28x28, 3x3, 128 out, padding 1: forward + backward",
                        grad_step(lambda x, w: F.conv2d(x, w, padding=1), (32, 128, 28, 28), (128, 128, 3, 3))),
        "max_pool": ("max_pool2d 32x64x112x112, 3, stride 2, padding 1: forward + backward",
                     grad_step(lambda x: F.max_pool2d(x, 3, 2, 1), (32, 64, 112, 112))),
        "avg_pool": ("avg_pool2d 32x64x112x112, 2: forward + backward",
                     grad_step(lambda x: F.avg_pool2d(x, 2), (32, 64, 112, 112))),
        "gelu": ("gelu forward, 16M float32", forward(F.gelu, (1 << 24,))),
        "silu": ("silu forward, 16M float32", forward(F.silu, (1 << 24,))),
        "sigmoid": ("sigmoid forward, 16M float32", forward(ember.sigmoid, (1 << 24,))),
        "index_add": ("index_add of 1M x 16 rows into 1000 rows",
                      lambda: base.index_add(0, index, src)),
        "softmax": ("softmax + log_softmax over the last dimension of 4096x4096 float32, forward",
                    forward(lambda x: (F.softmax(x, -1), F.log_softmax(x, -1)), (4096, 4096))),
    }


class _Tables:
    """Functions run under a chosen kernel table; the table is switched only when another one was in use."""

    current = None

    @classmethod
    def run_with(cls, ember, table, fn, backend):
        def run():
            if cls.current is not table:
                kernel_tables.use(ember, table, backend)
                cls.current = table
            fn()
        return run

    @classmethod
    def reset(cls, ember):
        kernel_tables.use(ember, None, None)
        cls.current = None


def per_family(ember, device, budget_s):
    """Each family's op with all kernels against the same table without the family."""
    from ember.backends.cuda.kernels import kernels
    sync = synchronizer(ember, device)
    backend = ember.device(device).type
    full = kernels()
    rows = {}
    benches = _benches(ember, device)
    for family, (what, fn) in benches.items():
        without = {k: v for k, v in full.items() if k not in FAMILIES[family]}
        try:
            res = alternate({"kernel": (_Tables.run_with(ember, full, fn, backend), sync),
                             "op forward": (_Tables.run_with(ember, without, fn, backend), sync)},
                            budget_s=budget_s / len(benches), rounds=9)
            speedup = res["op forward"]["median_s"] / res["kernel"]["median_s"]
            rows[family] = {"what": what, "timings": res, "speedup": speedup, "keep": speedup > 1.05}
        except Exception as exc:
            rows[family] = {"what": what, "error": f"{type(exc).__name__}: {exc}"[:300]}
    _Tables.reset(ember)
    text = ", ".join(f"{k} {v['speedup']:.2f}x" if "speedup" in v else f"{k} FAILED" for k, v in rows.items())
    return {"name": "kernels against the ops' forwards (speed-up; > 1: the kernel helps)", **rows,
            "text": text}


def whole_steps(ember, device, budget_s, names=("cnn", "resnet18")):
    """Training steps with all kernels, the plain-xp ones only, and none."""
    from ember.backends.cuda.kernels import kernels
    sync = synchronizer(ember, device)
    backend = ember.device(device).type
    tables = {"all kernels": kernels(), "plain-xp kernels": kernels(compiled=False), "no kernels": {}}
    out = {"name": "training steps by kernel table (ember on cuda)"}
    for name in names:
        fn = WORKLOADS[name][1](ember, device)
        res = alternate({label: (_Tables.run_with(ember, table, fn, backend), sync) for label, table in tables.items()},
                        budget_s=budget_s / len(names), rounds=9)
        out[name] = res
    _Tables.reset(ember)
    out["text"] = " | ".join(f"{n}: " + ", ".join(f"{label} {r['median_s'] * 1e3:.2f} ms" for label, r in
                                                  out[n].items()) for n in names)
    return out
