"""One stage of a multi-process pipeline: a submodule on one rank, which receives activations from the previous
stage's rank and sends its own to the next one (``ember.distributed`` point-to-point), and sends gradients back.

A schedule (:mod:`ember.parallel.pipelining.schedules`) drives the stage micro-batch by micro-batch; the stage keeps
what backward needs per micro-batch until that micro-batch's backward ran: its forward graph, or with
``checkpoint=True`` only its input, the forward being recomputed in backward.

>>> from ember.parallel.pipelining import PipelineStage
>>> PipelineStage("layers", 0, 2)
Traceback (most recent call last):
    ...
TypeError: PipelineStage: submodule must be an ember.nn.Module, but got str
"""
from __future__ import annotations

import ember
import ember.distributed as dist
import ember.nn as nn

from .._checkpoint import checkpoint_stage
from ._wire import HEADER_SIZE, decode, encode

__all__ = ["PipelineStage"]

# one tag per kind of message; activations and gradients between two stages go in opposite directions
_TAG_HEADER, _TAG_ACTIVATION, _TAG_GRADIENT = 0, 1, 2


class _Saved:
    """What backward needs of one micro-batch: the stage's inputs, its output and the loss (last stage). With
    checkpointing the output's graph holds only the inputs: its backward recomputes the stage."""

    __slots__ = ("inputs", "output", "loss")

    def __init__(self, inputs, output, loss):
        self.inputs, self.output, self.loss = inputs, output, loss


class PipelineStage:
    """A pipeline stage: ``submodule`` run as stage ``stage_index`` of ``num_stages``, one stage per rank.

    Stage ``i`` runs on the rank of index ``i`` in ``group`` (default: the default group), which must have exactly
    ``num_stages`` ranks. Stages exchange one tensor each way per micro-batch: a stage's submodule takes the previous
    stage's output (the first stage: the micro-batch's inputs) and returns one tensor. Its shape and dtype need not be
    declared: the sending stage sends them (a small header) before a step's first micro-batch.

    ``checkpoint=True`` keeps only each micro-batch's input between its forward and its backward, and recomputes
    the forward in backward (with the random state the forward had on ``device``, and putting the submodule's
    buffers back afterwards, so BatchNorm's running statistics are updated once per micro-batch), trading compute
    for activation memory.

    ``max_live_activations`` is, after a step, the most micro-batches whose saved activations the stage held at once.

    Example, on two ranks (``ember-run --nproc-per-node 2 train.py``)::

        dist.init_process_group()
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
        rank = dist.get_rank()
        stage = PipelineStage(model[:2] if rank == 0 else model[2:], rank, 2)
        schedule = Schedule1F1B(stage, n_microbatches=4, loss_fn=nn.MSELoss())
        if rank == 0:
            schedule.step(x)
        else:
            losses = []
            schedule.step(target=y, losses=losses)
    """

    def __init__(self, submodule, stage_index: int, num_stages: int, device=None, group=None,
                 checkpoint: bool = False):
        """Stage ``stage_index`` of ``num_stages``, run on the rank of the same index in ``group``; received
        activations and gradients are put on ``device`` (default: the CPU)."""
        if not isinstance(submodule, nn.Module):
            raise TypeError(f"PipelineStage: submodule must be an ember.nn.Module, but got {type(submodule).__name__}")
        if not dist.is_initialized():
            raise RuntimeError("PipelineStage: call ember.distributed.init_process_group() first (each stage is a "
                               "rank of a process group)")
        world, rank = dist.get_world_size(group), dist.get_rank(group)
        if not isinstance(num_stages, int) or num_stages != world:
            raise ValueError(f"PipelineStage: num_stages={num_stages!r} does not match the world size {world} of the "
                             f"process group: one stage runs on each rank, so start {num_stages} processes (e.g. "
                             f"mpiexec -n {num_stages}) or pass num_stages={world}")
        if not isinstance(stage_index, int) or stage_index != rank:
            raise ValueError(f"PipelineStage: stage_index={stage_index!r} on rank {rank}: stage i runs on the rank "
                             f"of index i in the group, so this rank must build stage {rank}")
        self.submod = submodule
        self.stage_index, self.num_stages, self.group = stage_index, num_stages, group
        self.device = ember.device("cpu" if device is None else device)
        self.checkpoint = bool(checkpoint)
        ranks = dist.get_process_group_ranks(group)
        self._prev = ranks[stage_index - 1] if stage_index > 0 else None
        self._next = ranks[stage_index + 1] if stage_index + 1 < num_stages else None
        self.max_live_activations = 0
        self._saved: dict[int, _Saved] = {}
        self._sends: list = []      # (work, tensor) of isends not yet known to be complete
        self._meta_in = None        # (dtype, shape) of this step's activations received from the previous stage
        self._meta_out = None       # and of those sent to the next one

    @property
    def is_first(self) -> bool:
        """Whether this is stage 0 (it takes the schedule's inputs)."""
        return self.stage_index == 0

    @property
    def is_last(self) -> bool:
        """Whether this is the last stage (it computes the loss)."""
        return self.stage_index == self.num_stages - 1

    @property
    def live_activations(self) -> int:
        """How many micro-batches' activations the stage holds now (forward done, backward not yet)."""
        return len(self._saved)

    def __repr__(self):
        return (f"PipelineStage(stage {self.stage_index} of {self.num_stages}, checkpoint={self.checkpoint}, "
                f"submod={type(self.submod).__name__})")

    # ---- used by the schedules -------------------------------------------------------------------------------
    def _begin_step(self) -> None:
        if self._saved:
            raise RuntimeError(f"stage {self.stage_index}: a new step began while {len(self._saved)} micro-batches "
                               f"still await their backward (an earlier step failed half-way?)")
        self.max_live_activations = 0
        self._meta_in = self._meta_out = None

    def _forward(self, i: int, args: tuple, kwargs: dict, target=None, loss_fn=None, keep: bool = True):
        """Run micro-batch ``i`` forward (``args``: its inputs on the first stage, ignored elsewhere), send the
        output on, and keep what backward needs when ``keep``. Returns ``(output, loss)`` (loss: last stage)."""
        inputs = tuple(args) if self.is_first else (self._receive_activation(keep),)
        with ember.set_grad_enabled(keep):
            if keep and self.checkpoint:
                output = checkpoint_stage(self.submod, *inputs, **kwargs)
            else:
                output = self.submod(*inputs, **kwargs)
            loss = loss_fn(output, target) if loss_fn is not None and self.is_last else None
        if not self.is_last:
            self._send_activation(i, output)
        if keep:
            self._saved[i] = _Saved(inputs, output, loss)
            self.max_live_activations = max(self.max_live_activations, len(self._saved))
        self._reap()
        return output, loss

    def _backward(self, i: int, scale: float = 1.0) -> None:
        """Run micro-batch ``i`` backward (the schedule calls it only with a ``loss_fn``): from its loss (last stage,
        times ``scale``) or from the gradient the next stage sends; then send the gradient of the stage's input to
        the previous stage."""
        saved = self._saved.pop(i)
        inputs, output, loss = saved.inputs, saved.output, saved.loss
        if self.is_last:
            ember.autograd.backward(loss * scale if scale != 1.0 else loss)
        else:
            grad = ember.empty(tuple(output.shape), dtype=output.dtype, device=self.device)
            dist.recv(grad, src=self._next, group=self.group, tag=_TAG_GRADIENT)
            if output.requires_grad:
                ember.autograd.backward(output, grad)
        if not self.is_first:
            received = inputs[0]
            grad_in = received.grad if received.grad is not None else ember.zeros_like(received)
            self._isend(grad_in.contiguous(), self._prev, _TAG_GRADIENT)
        self._reap()

    def _end_step(self) -> None:
        """Wait until every message this stage sent in the step was received."""
        for work, _ in self._sends:
            work.wait()
        self._sends = []

    # ---- communication ---------------------------------------------------------------------------------------
    def _receive_activation(self, requires_grad: bool):
        if self._meta_in is None:
            header = ember.zeros(HEADER_SIZE, dtype=ember.int64, device=self.device)
            dist.recv(header, src=self._prev, group=self.group, tag=_TAG_HEADER)
            self._meta_in = decode(header)
        dtype, shape = self._meta_in
        activation = ember.empty(shape, dtype=dtype, device=self.device)
        dist.recv(activation, src=self._prev, group=self.group, tag=_TAG_ACTIVATION)
        return _requiring_grad(activation) if requires_grad else activation

    def _send_activation(self, i: int, output) -> None:
        who = f"stage {self.stage_index}, micro-batch {i}"
        header = encode(output, who)
        meta = decode(header)
        if self._meta_out is None:
            self._meta_out = meta
            self._isend(header.to(self.device), self._next, _TAG_HEADER)
        elif meta != self._meta_out:
            raise ValueError(f"{who}: every micro-batch of a step must give an activation of the same dtype and "
                             f"shape, but micro-batch 0 gave {self._meta_out[0]} {self._meta_out[1]} and this one "
                             f"{meta[0]} {meta[1]}")
        self._isend(output.detach().contiguous(), self._next, _TAG_ACTIVATION)

    def _isend(self, tensor, dst: int, tag: int) -> None:
        self._sends.append((dist.isend(tensor, dst=dst, group=self.group, tag=tag), tensor))

    def _reap(self) -> None:
        """Forget the sends that completed, so that their buffers are freed."""
        self._sends = [(work, t) for work, t in self._sends if not work.is_completed()]


def _requiring_grad(x):
    if isinstance(x, ember.Tensor) and (x.is_floating_point() or x.is_complex()):
        return x.detach().requires_grad_()
    return x
