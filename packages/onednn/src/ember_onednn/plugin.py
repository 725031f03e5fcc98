"""The ``ember`` plugin of ember-onednn: oneDNN's convolution and LSTM kernels, and its max pooling for inference,
over ember's own on the CPU backend, and its float32 matrix product as the CPU kernel
``gemm_float32``.

Registering it costs no more than finding the library's file: oneDNN (53 MB) is loaded by the first convolution or
LSTM that runs, or by ``python -m ember info``. Where the file is missing (no wheel for the platform) the plugin gives
no kernel; where it cannot be loaded (no libgomp, another oneDNN version), its kernels hand every call to ember's
own. Either way the hook ``ember_status`` tells ``python -m ember info`` why.
"""
from __future__ import annotations

import numpy as np

import ember
from ember.backends import cpu_threads

from . import _library

#: the topic of this plugin's line in ``python -m ember info``
TOPIC = "oneDNN kernels"
#: op name -> (kernel set, its method): :class:`~ember_onednn._conv.Convolutions` (one kernel for a convolution
#: inside and outside a backward pass, as ember's own), :class:`~ember_onednn._lstm.Lstms` or
#: :class:`~ember_onednn._pool.Pools`
OPS = {"convolution": ("convolutions", "convolution"), "convolution_backward": ("convolutions", "convolution"),
       "convolutionweightgrad": ("convolutions", "weight_grad"), "lstm": ("lstms", "forward"),
       "max_pool2d": ("pools", "max_pool2d")}

_state: dict = {}


def _kernel_sets() -> dict | None:
    """``{"convolutions": ..., "lstms": ...}`` over the loaded library (built on first use), or None when oneDNN
    cannot be used (:func:`status` says why)."""
    if "kernels" not in _state:
        try:
            lib, description = _library.load()
            from . import _conv, _dnnl, _lstm, _pool

            dnnl, built_in = _dnnl.Binding(lib), _builtin()
            _state["kernels"] = {"convolutions": _conv.Convolutions(dnnl, built_in),
                                 "lstms": _lstm.Lstms(dnnl, built_in["lstm"]),
                                 "pools": _pool.Pools(dnnl, built_in["max_pool2d"])}
            _state["description"] = description
        except (_library.Unavailable, OSError, AttributeError, RuntimeError) as exc:
            _state["kernels"], _state["reason"] = None, str(exc)
    return _state["kernels"]


def convolutions():
    """The convolution kernels (:class:`~ember_onednn._conv.Convolutions`), or None when oneDNN cannot be used."""
    sets = _kernel_sets()
    return None if sets is None else sets["convolutions"]


def lstms():
    """The LSTM kernel (:class:`~ember_onednn._lstm.Lstms`), or None when oneDNN cannot be used."""
    sets = _kernel_sets()
    return None if sets is None else sets["lstms"]


def gemm():
    """oneDNN's float32 matrix product (:class:`~ember_onednn._gemm.Gemm`, made on first use), or None when oneDNN
    cannot be used."""
    if "gemm" not in _state:
        try:
            lib, _ = _library.load()
            from . import _gemm

            _state["gemm"] = _gemm.Gemm(lib)
            cpu_threads.single_thread_blas()  # one spinning pool, oneDNN's, for every large float32 product
        except (_library.Unavailable, OSError, AttributeError) as exc:
            _state["gemm"] = None
            _state.setdefault("reason", str(exc))
    return _state["gemm"]


def gemm_float32(a, b, out) -> None:
    """ember's CPU kernel ``gemm_float32`` (see ``ember.hookspecs.ember_cpu_kernels``): ``out = a @ b`` on oneDNN,
    or NumPy's matmul where oneDNN cannot be loaded."""
    kernel = gemm()
    if kernel is None:
        np.matmul(a, b, out=out)
    else:
        kernel(a, b, out)


def _builtin() -> dict:
    """The built-in CPU kernels this plugin replaces: what runs where oneDNN does not."""
    from ember.backends.cpu_kernels import convolution, pooling, recurrent

    return {**convolution.KERNELS, **recurrent.KERNELS, "max_pool2d": pooling.KERNELS["max_pool2d"]}


def _kernel(op: str):
    """The kernel of ``op`` (and of every op served by the same method): oneDNN's, loaded on the first call, or
    the built-in one when it cannot be."""
    kernel_set, method = OPS[op]

    def kernel(ctx, xp, *arrays, **attrs):
        sets = _kernel_sets()
        if sets is None:
            return _builtin()[op](ctx, xp, *arrays, **attrs)
        return getattr(sets[kernel_set], method)(ctx, xp, *arrays, **attrs)

    kernel.__name__ = kernel.__qualname__ = f"onednn_{method}"
    kernel.__doc__ = f"ember-onednn's kernel of op {op!r} (see ember.hookspecs.ember_op_kernels)."
    return kernel


#: the kernels claimed, made once (one per method, as the built-in kernels: a convolution inside a backward pass
#: runs the same function as one outside): the same functions on every call of the hook
_BY_METHOD = {method: _kernel(op) for op, method in OPS.items()}
KERNELS = {op: _BY_METHOD[method] for op, method in OPS.items()}


def status() -> str:
    """One line: what serves ember's convolutions and LSTMs on the CPU, and, when it is not oneDNN, why (loads oneDNN).

    >>> from ember_onednn import plugin
    >>> plugin.status()  # doctest: +ELLIPSIS
    '...'
    """
    if _kernel_sets() is None:
        return f"not in use, ember's own kernels run: {_state['reason']}"
    import os

    pool = ("OMP_NUM_THREADS" if os.environ.get("OMP_NUM_THREADS", "").strip()
            else f"{ember.get_num_threads()}, as ember.get_num_threads()")
    return (f"in use: {_state['description']}; float32 convolutions and LSTMs, their gradients, "
            f"max pooling for inference, and matrix products; "
            f"OpenMP threads: {pool}")


@ember.hookimpl
def ember_op_kernels(backend):
    """On the CPU: ``convolution``, ``convolution_backward``, ``convolutionweightgrad``, ``lstm`` and
    ``max_pool2d``, claimed over the built-in kernels (priority 1); nothing where oneDNN's library file is not
    installed."""
    if backend.name != "cpu" or _state.get("kernels", True) is None:
        return {}
    try:
        _library.library_path()
    except _library.Unavailable:
        return {}
    return {op: ember.Claim(kernel, priority=1) for op, kernel in KERNELS.items()}


@ember.hookimpl
def ember_cpu_kernels():
    """``gemm_float32``: every large float32 matrix product of ember's CPU backend, on oneDNN's OpenMP pool with
    its convolutions; nothing where oneDNN's library file is not installed."""
    if _state.get("gemm", True) is None:
        return {}
    try:
        _library.library_path()
    except _library.Unavailable:
        return {}
    return {"gemm_float32": gemm_float32}


@ember.hookimpl
def ember_status():
    """This plugin's line in ``python -m ember info`` (:func:`status`, called there only)."""
    return {TOPIC: status}
