"""DistributedDataParallel's communication hooks, with PyTorch's names (``torch.distributed.algorithms.ddp_comm_hooks
.default_hooks``): what DDP does with a bucket of gradients once all of them are ready.

A hook is a function ``hook(state, bucket) -> future``: ``bucket`` is a :class:`GradBucket` (its ``buffer()`` holds
this rank's gradients of the bucket's parameters, flattened and concatenated), the future's ``wait()`` returns a
tensor of the buffer's size holding the gradients every rank should use (usually the average over ranks). DDP
launches a bucket's hook during backward, as soon as the bucket's last gradient is ready, and waits on the futures
at the end of backward. Register one with ``ddp.register_comm_hook(state, hook)``; the built-in ones take the
process group (or None, the default group) as ``state``.

>>> from ember.parallel import comm_hooks
>>> comm_hooks.allreduce_hook.__name__, comm_hooks.fp16_compress_hook.__name__
('allreduce_hook', 'fp16_compress_hook')
"""
from __future__ import annotations

import ember
import ember.distributed as dist

__all__ = ["GradBucket", "CommFuture", "allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


class GradBucket:
    """One bucket of DDP's gradients, as a communication hook sees it (PyTorch's ``dist.GradBucket``).

    >>> import ember
    >>> w = ember.ones(2, 3)
    >>> b = GradBucket(0, ember.zeros(6), [w], [0], is_last=True)
    >>> b.index(), b.is_last(), [g.shape for g in b.gradients()]
    (0, True, [ember.Size([2, 3])])
    """

    def __init__(self, index: int, buffer, parameters: list, offsets: list[int], is_last: bool):
        self._index, self._buffer, self._parameters = index, buffer, parameters
        self._offsets, self._is_last = offsets, is_last

    def index(self) -> int:
        """The bucket's position (0: the first launched, holding the last-registered parameters)."""
        return self._index

    def buffer(self):
        """The flat tensor of this rank's gradients of the bucket's parameters (the hook may change it in place)."""
        return self._buffer

    def set_buffer(self, buffer) -> None:
        """Replace the buffer (a tensor of the same size and dtype)."""
        self._buffer = buffer

    def parameters(self) -> list:
        """The bucket's parameters, in buffer order."""
        return list(self._parameters)

    def gradients(self) -> list:
        """Views of the buffer, one per parameter, shaped as the parameter."""
        return [self._buffer[o:o + p.numel()].view(p.shape) for p, o in zip(self._parameters, self._offsets)]

    def is_last(self) -> bool:
        """Whether this is the last bucket to be launched in a backward."""
        return self._is_last


class CommFuture:
    """The result of a communication in flight (the part of ``torch.futures.Future`` that DDP's hooks use):
    ``wait()`` blocks until the communication ``work`` (a ``dist.Work``, or None for nothing to wait on) finished,
    then returns ``finish()``; ``then(fn)`` gives a future whose ``wait()`` returns ``fn(this future)``.

    >>> import ember
    >>> f = CommFuture(None, lambda: ember.ones(2)).then(lambda fut: fut.value() * 3)
    >>> f.wait()
    tensor([3., 3.])
    """

    def __init__(self, work, finish, after: CommFuture | None = None):
        self._work, self._finish, self._after = work, finish, after  # after: the future this one was chained to
        self._done, self._value = False, None

    def wait(self):
        """Block until done; the value."""
        if not self._done:
            if self._work is not None:
                self._work.wait()
            self._value, self._done = self._finish(), True
        return self._value

    def value(self):
        """The value (waiting first if need be)."""
        return self.wait()

    def done(self) -> bool:
        """Whether ``wait()`` has returned."""
        return self._done

    def then(self, callback) -> CommFuture:
        """A future of ``callback(self)``, run when that future is waited on."""
        return CommFuture(None, lambda: callback(self._waited()), self)

    def _progress(self) -> bool:
        """Move the communication on without blocking (MPI moves data only while it is called): whether it
        completed. DDP's reducer calls it from the gradient hooks, so that buckets travel during backward."""
        if self._work is not None:
            return self._work.is_completed()
        return self._after is None or self._after._progress()

    def _waited(self) -> CommFuture:
        self.wait()
        return self


def _group_size(process_group) -> int:
    return dist.get_world_size(process_group)


def allreduce_hook(process_group, bucket: GradBucket) -> CommFuture:
    """Average the bucket's gradients over the ranks of ``process_group`` (None: the default group): divide by the
    group's size, then all-reduce (SUM), non-blocking. What DDP does without a hook.

    On each rank of a job (``ember-run -n 2 script.py``)::

        ddp.register_comm_hook(None, allreduce_hook)
    """
    buffer = bucket.buffer()
    buffer.div_(_group_size(process_group))
    return summed(process_group, buffer)


def summed(process_group, buffer) -> CommFuture:
    """A future of ``buffer`` summed over the ranks of ``process_group`` in place (a non-blocking all-reduce):
    :func:`allreduce_hook` after its division, and DDP itself when it divided the gradients on their way in."""
    return CommFuture(dist.all_reduce(buffer, group=process_group, async_op=True), lambda: buffer)


def _compress_hook(process_group, bucket: GradBucket, dtype) -> CommFuture:
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(_group_size(process_group))
    work = dist.all_reduce(compressed, group=process_group, async_op=True)

    def decompress():
        buffer.copy_(compressed.to(buffer.dtype))
        return buffer
    return CommFuture(work, decompress)


def fp16_compress_hook(process_group, bucket: GradBucket) -> CommFuture:
    """Average the bucket's gradients over the ranks as ``float16`` (half the bytes on the wire, float16's
    precision: about 3 decimal digits), then cast back to the gradients' dtype (PyTorch's ``fp16_compress_hook``).

    >>> from ember.parallel.comm_hooks import fp16_compress_hook

    On each rank of a job (``ember-run -n 2 script.py``)::

        ddp.register_comm_hook(None, fp16_compress_hook)
    """
    return _compress_hook(process_group, bucket, ember.float16)


def bf16_compress_hook(process_group, bucket: GradBucket) -> CommFuture:
    """As :func:`fp16_compress_hook`, in ``bfloat16`` (float32's range, about 2 decimal digits).

    On each rank of a job (``ember-run -n 2 script.py``)::

        ddp.register_comm_hook(None, bf16_compress_hook)
    """
    return _compress_hook(process_group, bucket, ember.bfloat16)
