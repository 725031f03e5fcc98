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
        buffers = [(b, b.clone()) for b in ctx.stage.buffers()]
        with ember.random.fork_rng(devices=[x.device]), ember.enable_grad():
            ember.random.set_rng_state(ctx.rng_state, x.device)
            y = ctx.stage(x)
        with ember.no_grad():
            for buf, before in buffers:
                buf.copy_(before)
        if y.requires_grad:
            ember.autograd.backward(y, grad)
        return None, None, x.grad if saved.requires_grad else None


def checkpoint_stage(stage, x):
    """``stage(x)`` whose activations are recomputed in backward instead of kept (see the module docstring)."""
    phony = ember.empty(0, device=x.device, requires_grad=True)
    return _Checkpoint.apply(phony, stage, x)
