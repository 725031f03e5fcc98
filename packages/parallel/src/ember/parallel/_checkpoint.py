"""Activation checkpointing of one pipeline stage on one micro-batch: ``ember.utils.checkpoint`` (non-reentrant)
plus what a pipeline needs besides: the stage's buffers are put back after the recomputation, so that
BatchNorm's running statistics (and ``num_batches_tracked``) are updated once per micro-batch, by the forward,
not twice. Used by ``Pipe`` and by ``ember.parallel.pipelining.PipelineStage(checkpoint=True)``.

The non-reentrant checkpoint passes gradients to the stage's parameters even when its input requires none
(a first stage's), so no "phony" input is needed.

>>> import ember
>>> from ember import nn
>>> from ember.parallel._checkpoint import checkpoint_stage
>>> stage = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
>>> checkpoint_stage(stage, ember.ones(3, 2)).sum().backward()  # the backward reran the stage
>>> stage[0].weight.grad is not None, stage[1].num_batches_tracked.item()
(True, 1)
"""
from __future__ import annotations

import contextlib

import ember
from ember.utils.checkpoint import checkpoint

__all__ = ["checkpoint_stage"]


def checkpoint_stage(stage, *inputs, **kwargs):
    """``stage(*inputs, **kwargs)`` whose activations are recomputed in backward (see the module docstring)."""
    return checkpoint(stage, *inputs, use_reentrant=False,
                      context_fn=lambda: (contextlib.nullcontext(), _buffers_kept(stage)), **kwargs)


@contextlib.contextmanager
def _buffers_kept(module):
    """Within the block ``module``'s buffers may change; afterwards they hold what they held before it."""
    buffers = [(b, b.clone()) for b in module.buffers()]
    try:
        yield
    finally:
        with ember.no_grad():
            for buf, before in buffers:
                buf.copy_(before)
