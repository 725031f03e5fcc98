"""The parts of the GPU benchmark: training steps against PyTorch, per-op overhead, host-to-device bandwidth,
autocast. Each returns a dict of figures (JSON-ready) with a one-line ``text`` for the table."""
from __future__ import annotations

import time

from _timing import alternate, summary
from workloads import cnn, mlp, resnet18
from workloads._training import training_step

RATIO_TARGET = 1.5  # ember's median step at most this many times PyTorch's
PINNED_TARGET = 2.0  # pinned host-to-device bandwidth at least this many times pageable
RESNET_BATCH, RESNET_SIZE, RESNET_CLASSES = 32, 64, 1000
AUTOCAST_BATCH = 512


def synchronizer(lib, device):
    """Waits for the device's queued work (``lib.cuda.synchronize``); nothing to wait for on the CPU (a smoke
    test of this script on a machine without a GPU: ``--device cpu``)."""
    return lib.cuda.synchronize if device.startswith("cuda") else (lambda: None)


def _moved(lib, device, model, x, y):
    model = model.to(device)
    return model, x.to(device), y.to(device)


def _mlp(lib, device):
    model, _, x, y, _ = mlp.build(lib)
    model, x, y = _moved(lib, device, model, x, y)
    opt = lib.optim.SGD(model.parameters(), lr=mlp.LR, momentum=mlp.MOMENTUM)
    return training_step(model, opt, lib.nn.functional.cross_entropy, x, y)


def _cnn(lib, device, batch=cnn.BATCH):
    model, _, x, y, _ = cnn.build(lib)
    if batch != cnn.BATCH:
        x, y = lib.randn(batch, 1, 28, 28), lib.randint(0, 10, (batch,))
    model, x, y = _moved(lib, device, model, x, y)
    return model, lib.optim.Adam(model.parameters(), lr=cnn.LR), x, y


def _cnn_step(lib, device):
    model, opt, x, y = _cnn(lib, device)
    return training_step(model, opt, lib.nn.functional.cross_entropy, x, y)


def _resnet(lib, device):
    lib.manual_seed(0)
    model = resnet18.build_resnet18(lib, RESNET_CLASSES).to(device)
    x = lib.randn(RESNET_BATCH, 3, RESNET_SIZE, RESNET_SIZE).to(device)
    y = lib.randint(0, RESNET_CLASSES, (RESNET_BATCH,)).to(device)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return training_step(model, opt, lib.nn.functional.cross_entropy, x, y)


WORKLOADS = {
    "mlp": (mlp.TITLE.replace("training step", "training step on cuda"), _mlp),
    "cnn": (cnn.TITLE.replace("training step", "training step on cuda"), _cnn_step),
    "resnet18": (f"resnet18 {RESNET_BATCH}x3x{RESNET_SIZE}x{RESNET_SIZE}, {RESNET_CLASSES} classes, cross-entropy, "
                 "SGD momentum 0.9: training step on cuda", _resnet),
}


def training_steps(libs, device, name, budget_s):
    """One workload's training step, ember against PyTorch, in turns."""
    title, build = WORKLOADS[name]
    contenders, errors = {}, {}
    for key, lib in libs.items():
        try:
            contenders[key] = (build(lib, device), synchronizer(lib, device))
        except Exception as exc:  # PyTorch failing to build keeps ember's figures (and the other way round)
            errors[key] = f"{type(exc).__name__}: {exc}"[:300]
    res = alternate(contenders, budget_s=budget_s)
    out = {"name": f"{name} step", "title": title, **res, "errors": errors}
    if "torch" in res:
        ratio = res["ember"]["median_s"] / res["torch"]["median_s"]
        out.update(ratio=ratio, target=f"<= {RATIO_TARGET}x PyTorch", passed=ratio <= RATIO_TARGET)
    out["text"] = _step_text(res, out.get("ratio"))
    return out


def _ms(s):
    return f"{s['median_s'] * 1e3:.2f} ms [{s['q1_s'] * 1e3:.2f}-{s['q3_s'] * 1e3:.2f}]"


def _step_text(res, ratio):
    text = f"ember {_ms(res['ember'])}"
    if "torch" in res:
        text += f" | torch {_ms(res['torch'])} | ratio {ratio:.2f}x"
    return text


def op_overhead(libs, device, budget_s, ops=2000):
    """Microseconds per ``a + b`` on 4x4 float32 tensors: dispatch alone (the loop, before the synchronize) and
    with the synchronize (what a dependent chain costs)."""
    res = {}
    for key, lib in libs.items():
        a, b = lib.ones(4, 4, device=device), lib.ones(4, 4, device=device)
        sync = synchronizer(lib, device)
        dispatch, total = [], []
        end = time.perf_counter() + budget_s / len(libs)
        for _ in range(3):
            a + b
        sync()
        while len(total) < 5 or (time.perf_counter() < end and len(total) < 15):
            start = time.perf_counter()
            for _ in range(ops):
                a + b
            mid = time.perf_counter()
            sync()
            stop = time.perf_counter()
            dispatch.append((mid - start) / ops)
            total.append((stop - start) / ops)
        res[key] = {"dispatch": summary(dispatch), "with_sync": summary(total)}
    text = " | ".join(f"{k} {v['dispatch']['median_s'] * 1e6:.1f} us/op (dispatch), "
                      f"{v['with_sync']['median_s'] * 1e6:.1f} us/op (synced)" for k, v in res.items())
    return {"name": "host overhead per op (a + b, 4x4 float32)", **res, "text": text}


def h2d_bandwidth(libs, device, budget_s, megabytes=256):
    """Host-to-device GB/s of a float32 tensor: pageable ``to(device)`` against pinned ``pin_memory()`` +
    ``to(device, non_blocking=True)``."""
    n = megabytes * (1 << 20) // 4
    out = {"name": f"host-to-device bandwidth ({megabytes} MiB float32)"}
    texts = []
    for key, lib in libs.items():
        try:
            host = lib.ones(n)
            pinned = host.pin_memory()
            sync = synchronizer(lib, device)
            contenders = {"pageable": (lambda h=host: h.to(device), sync),
                          "pinned": (lambda p=pinned: p.to(device, non_blocking=True), sync)}
            res = alternate(contenders, calls=2, rounds=9, budget_s=budget_s / len(libs), warmup=1)
        except Exception as exc:  # one library failing keeps the other's figures
            out[key] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            texts.append(f"{key} FAILED ({out[key]['error']})")
            continue
        gbps = {k: n * 4 / v["median_s"] / 1e9 for k, v in res.items()}
        ratio = gbps["pinned"] / gbps["pageable"]
        out[key] = {"pageable_gbps": gbps["pageable"], "pinned_gbps": gbps["pinned"], "pinned_over_pageable": ratio,
                    "timings": res}
        texts.append(f"{key} pageable {gbps['pageable']:.1f} GB/s, pinned {gbps['pinned']:.1f} GB/s ({ratio:.2f}x)")
    if "pinned_over_pageable" in out.get("ember", {}):
        out.update(target=f"pinned >= {PINNED_TARGET}x pageable",
                   passed=out["ember"]["pinned_over_pageable"] >= PINNED_TARGET)
    out["text"] = " | ".join(texts)
    return out


def autocast_speedup(libs, device, budget_s):
    """The CNN's training step (batch 512) in float32 against autocast float16 and bfloat16."""
    out = {"name": f"autocast on the CNN step (batch {AUTOCAST_BATCH})"}
    for key, lib in libs.items():
        try:
            out[key] = _autocast_lib(lib, device, budget_s / len(libs))
        except Exception as exc:  # one library failing keeps the other's figures
            out[key] = {"errors": {"float32": f"{type(exc).__name__}: {exc}"[:300]}}
    out["text"] = " | ".join(
        f"{k}: " + ", ".join(f"{d} {v.get(d + '_speedup', float('nan')):.2f}x" for d in ("float16", "bfloat16"))
        + (f" (failed: {', '.join(v['errors'])})" if v["errors"] else "")
        for k, v in out.items() if isinstance(v, dict))
    return out


def _autocast_lib(lib, device, budget_s):
    """One library's CNN step in float32 and under autocast float16 / bfloat16: timings and speed-ups."""
    model, opt, x, y = _cnn(lib, device, AUTOCAST_BATCH)
    loss_fn = lib.nn.functional.cross_entropy

    def step(dtype=None, model=model, opt=opt, x=x, y=y, lib=lib):
        opt.zero_grad()
        if dtype is None:
            loss = loss_fn(model(x), y)
        else:
            with lib.autocast(device.split(":")[0], dtype=dtype):
                loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    contenders = {"float32": (step, synchronizer(lib, device))}
    errors = {}
    for name in ("float16", "bfloat16"):
        dtype = getattr(lib, name)
        try:
            step(dtype)
            contenders[name] = (lambda d=dtype, s=step: s(d), synchronizer(lib, device))
        except Exception as exc:  # the backend may not hold the dtype
            errors[name] = f"{type(exc).__name__}: {exc}"[:300]
    res = alternate(contenders, budget_s=budget_s)
    base = res["float32"]["median_s"]
    return {"timings": res, "errors": errors,
            **{f"{k}_speedup": base / v["median_s"] for k, v in res.items() if k != "float32"}}
