"""Activation checkpointing of one pipeline stage on one micro-batch: keep the stage's input, not its
activations, and recompute them during backward.

The forward runs without recording; the backward reruns the stage with recording on, from the saved input and
with the random state the forward saw (so dropout draws the same mask), and back-propagates through that
recomputation, which accumulates into the stage's parameters and returns the input's gradient. Buffers the
rerun changes (BatchNorm's running statistics) are put back, so that a checkpointed stage updates them once.
A "phony" empty tensor that requires grad is passed along, so that the backward runs even when the input needs
no gradient (a first stage's parameters still get theirs), as PyTorch's Pipe does.

>>> import ember
>>> from ember import nn
>>> from ember.parallel._checkpoint import checkpoint_stage
>>> stage = nn.Linear(2, 1)
>>> checkpoint_stage(stage, ember.ones(3, 2)).sum().backward()
>>> stage.weight.grad.tolist()
[[3.0, 3.0]]
"""
from __future__ import annotations

import ember

__all__ = ["checkpoint_stage"]


def recompute(module, rng_state, device, run):
    """``run()`` recorded (grad enabled), for a checkpoint's backward: the random generator of ``device`` (and the
    CPU's) starts from ``rng_state`` (``ember.random.get_rng_state(device)`` taken when the forward began) and is
    left as it was, and ``module``'s buffers are put back afterwards, so that the rerun changes no running
    statistics (BatchNorm's, its ``num_batches_tracked``) that the forward already updated. Returns what ``run``
    returned. Used by :func:`checkpoint_stage` and by ``ember.parallel.pipelining.PipelineStage(checkpoint=True)``.

    >>> import ember
    >>> from ember import nn
    >>> bn = nn.BatchNorm1d(2)
    >>> _ = bn(ember.randn(4, 2))
    >>> y = recompute(bn, ember.random.get_rng_state(), "cpu", lambda: bn(ember.randn(4, 2)))
    >>> y.requires_grad, bn.num_batches_tracked.item()
    (True, 1)
    """
    device = ember.device(device)
    buffers = [(b, b.clone()) for b in module.buffers()]
    try:
        with ember.random.fork_rng(devices=[device]), ember.enable_grad():
            ember.random.set_rng_state(rng_state, device)
            return run()
    finally:
        with ember.no_grad():
            for buf, before in buffers:
                buf.copy_(before)


class _Checkpoint(ember.autograd.Function):
    @staticmethod
    def forward(ctx, phony, stage, x):
        ctx.stage = stage
        ctx.rng_state = ember.random.get_rng_state(x.device)
        ctx.save_for_backward(x)
        return stage(x)

    @staticmethod
    def backward(ctx, grad):
        saved, = ctx.saved_tensors
        x = saved.detach().requires_grad_(saved.requires_grad)
        y = recompute(ctx.stage, ctx.rng_state, x.device, lambda: ctx.stage(x))
        if y.requires_grad:
            ember.autograd.backward(y, grad)
        return None, None, x.grad if saved.requires_grad else None


def checkpoint_stage(stage, x):
    """``stage(x)`` whose activations are recomputed in backward instead of kept (see the module docstring)."""
    phony = ember.empty(0, device=x.device, requires_grad=True)
    return _Checkpoint.apply(phony, stage, x)
