"""Pipeline schedules with ``torch.distributed.pipelining``'s names: the order in which each stage runs its
micro-batches forward and backward.

- :class:`ScheduleGPipe`: every micro-batch forward, then every one backward. Simple; a stage holds the activations
  of all ``n_microbatches`` micro-batches at once.
- :class:`Schedule1F1B`: stage ``s`` of ``S`` runs ``S - s - 1`` micro-batches forward (warm-up), then alternates one
  forward and one backward, then runs the remaining backwards. The same gradients, but a stage holds the activations
  of at most ``S - s`` (at most ``num_stages``) micro-batches at once, however many micro-batches there are.

Every rank calls ``schedule.step`` once per batch: the first stage with the batch's inputs, the last with
``target=`` (and ``losses=[]`` to get each micro-batch's loss), the others with nothing. The batch is split into
``n_microbatches`` equal micro-batches along dimension 0; the loss of each is scaled by ``1 / n_microbatches`` in
backward, so that with a mean-reduced loss the gradients are those of the whole batch (``scale_grads=True``, as in
PyTorch). Without a ``loss_fn`` a step runs forward only. Gradients accumulate into ``.grad``: zero them between
steps as usual.

>>> from ember.parallel.pipelining import Schedule1F1B, ScheduleGPipe
>>> [Schedule1F1B.order(stage_index=s, num_stages=3, n_microbatches=4) for s in (0, 2)]
[['F0', 'F1', 'F2', 'B0', 'F3', 'B1', 'B2', 'B3'], ['F0', 'B0', 'F1', 'B1', 'F2', 'B2', 'F3', 'B3']]
"""
from __future__ import annotations

import ember

from .stage import PipelineStage

__all__ = ["PipelineScheduleSingle", "ScheduleGPipe", "Schedule1F1B"]


class PipelineScheduleSingle:
    """A schedule for one :class:`PipelineStage` per rank; subclasses give the order of forwards and backwards."""

    def __init__(self, stage: PipelineStage, n_microbatches: int, loss_fn=None, scale_grads: bool = True):
        name = type(self).__name__
        if not isinstance(stage, PipelineStage):
            raise TypeError(f"{name}: stage must be a PipelineStage, but got {type(stage).__name__}")
        if not isinstance(n_microbatches, int) or isinstance(n_microbatches, bool) or n_microbatches < 1:
            raise ValueError(f"{name}: n_microbatches must be a positive int, but got {n_microbatches!r}")
        if loss_fn is not None and not callable(loss_fn):
            raise TypeError(f"{name}: loss_fn must be callable as loss_fn(output, target), but got {loss_fn!r}")
        self._stage, self._n_microbatches, self._loss_fn = stage, n_microbatches, loss_fn
        self.scale_grads = scale_grads

    @staticmethod
    def order(stage_index: int, num_stages: int, n_microbatches: int) -> list[str]:
        """The stage's actions in one step: ``"F3"`` runs micro-batch 3 forward, ``"B3"`` backward."""
        raise NotImplementedError

    def step(self, *args, target=None, losses: list | None = None, **kwargs):
        """Run one batch through the pipeline: forward and, with a ``loss_fn``, backward.

        The first stage passes the batch's inputs (``args`` and ``kwargs``: tensors are split along dimension 0,
        anything else goes to every micro-batch as it is); the last stage passes ``target`` and, to collect them,
        ``losses`` (a list that gets each micro-batch's loss appended). Returns the last stage's output for the whole
        batch (micro-batches concatenated along dimension 0) on the last stage, None on the others.
        """
        stage, n, name = self._stage, self._n_microbatches, type(self).__name__
        if stage.is_first:
            if not args and not kwargs:
                raise ValueError(f"{name}.step: the first stage must pass the batch's inputs")
            chunks = [_split(f"{name}.step: input {k}", x, n) for k, x in enumerate(args)]
            kwchunks = {k: _split(f"{name}.step: keyword input {k!r}", x, n) for k, x in kwargs.items()}
        elif args or kwargs:
            raise ValueError(f"{name}.step: only the first stage passes inputs (stage {stage.stage_index} got "
                             f"{len(args) + len(kwargs)}); the others receive their inputs from the previous stage")
        train = self._loss_fn is not None
        targets = [None] * n
        if stage.is_last and train:
            if target is None:
                raise ValueError(f"{name}.step: the last stage must pass target= (the schedule has a loss_fn)")
            targets = _split(f"{name}.step: target", target, n)
        stage._begin_step()
        outputs = [None] * n
        for action in (self.order(stage.stage_index, stage.num_stages, n) if train else [f"F{i}" for i in range(n)]):
            i = int(action[1:])
            if action[0] == "F":
                mb_args = tuple(c[i] for c in chunks) if stage.is_first else ()
                mb_kwargs = {k: c[i] for k, c in kwchunks.items()} if stage.is_first else {}
                output, loss = stage._forward(i, mb_args, mb_kwargs, targets[i], self._loss_fn, keep=train)
                if stage.is_last:
                    outputs[i] = output.detach()
                    if losses is not None and loss is not None:
                        losses.append(loss.detach())
            else:
                stage._backward(i, 1.0 / n if self.scale_grads else 1.0)
        stage._end_step()
        return ember.cat(outputs, dim=0) if stage.is_last else None


class ScheduleGPipe(PipelineScheduleSingle):
    """GPipe: all micro-batches forward, then all backward (PyTorch's ``ScheduleGPipe``).

    ``ScheduleGPipe(stage, n_microbatches, loss_fn=None, scale_grads=True)``; see :meth:`step`.

    >>> ScheduleGPipe.order(stage_index=0, num_stages=2, n_microbatches=3)
    ['F0', 'F1', 'F2', 'B0', 'B1', 'B2']
    """

    @staticmethod
    def order(stage_index: int, num_stages: int, n_microbatches: int) -> list[str]:
        return [f"F{i}" for i in range(n_microbatches)] + [f"B{i}" for i in range(n_microbatches)]


class Schedule1F1B(PipelineScheduleSingle):
    """1F1B: warm-up forwards, then one forward one backward, then the remaining backwards (PyTorch's
    ``Schedule1F1B``); a stage holds at most ``num_stages`` micro-batches' activations.

    ``Schedule1F1B(stage, n_microbatches, loss_fn=None, scale_grads=True)``; see :meth:`step`.

    >>> Schedule1F1B.order(stage_index=0, num_stages=2, n_microbatches=3)
    ['F0', 'F1', 'B0', 'F2', 'B1', 'B2']
    """

    @staticmethod
    def order(stage_index: int, num_stages: int, n_microbatches: int) -> list[str]:
        warmup = min(num_stages - stage_index - 1, n_microbatches)
        actions = [f"F{i}" for i in range(warmup)]
        for i in range(warmup, n_microbatches):
            actions += [f"F{i}", f"B{i - warmup}"]
        return actions + [f"B{i}" for i in range(n_microbatches - warmup, n_microbatches)]


def _split(what: str, x, n: int) -> list:
    """``x`` in ``n`` equal parts along dimension 0 (a tensor), or ``n`` times ``x`` (anything else)."""
    if not isinstance(x, ember.Tensor):
        return [x] * n
    if x.dim() == 0 or x.shape[0] % n:
        size = "a 0-dimensional tensor" if x.dim() == 0 else f"a batch of {x.shape[0]}"
        raise ValueError(f"{what} is {size}, which n_microbatches={n} does not divide: the batch is split along "
                         f"dimension 0 into {n} equal micro-batches, so its size must be a multiple of {n}")
    return list(x.chunk(n, dim=0))
