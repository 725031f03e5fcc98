"""Variable-length sequences: ``pad_sequence`` makes one padded batch of them.

>>> import ember
>>> from ember.nn.utils.rnn import pad_sequence
>>> pad_sequence([ember.tensor([1, 2, 3]), ember.tensor([4])], batch_first=True)
tensor([[1, 2, 3],
        [4, 0, 0]])
"""
from __future__ import annotations

from collections.abc import Iterable

from ember import Tensor
from ember._sibling_api import Op, cast_scalar

__all__ = ["pad_sequence"]


class PadSequence(Op):
    """Sequences ``[L_i, *]`` copied into one ``[B, T, *]`` (or ``[T, B, *]``) array filled with a value."""

    name_ = "padsequence"

    @staticmethod
    def forward(ctx, xp, *arrays, batch_first, padding_value, left, dtypes):
        lengths = [a.shape[0] for a in arrays]
        longest = max(lengths)
        first = arrays[0]
        shape = (len(arrays), longest) if batch_first else (longest, len(arrays))
        out = xp.full(shape + tuple(first.shape[1:]), padding_value, dtype=first.dtype)
        for i, (a, n) in enumerate(zip(arrays, lengths)):
            steps = slice(longest - n, longest) if left else slice(0, n)
            if a.dtype != first.dtype:
                a = xp.astype(a, first.dtype)
            out[(i, steps) if batch_first else (steps, i)] = a
        ctx.lengths, ctx.longest, ctx.batch_first, ctx.left, ctx.dtypes = lengths, longest, batch_first, left, dtypes
        return out

    @staticmethod
    def backward(ctx, g):
        grads = []
        for i, (need, n, dtype) in enumerate(zip(ctx.needs_input_grad, ctx.lengths, ctx.dtypes)):
            if not need:
                grads.append(None)
                continue
            steps = g.select(0 if ctx.batch_first else 1, i).narrow(0, ctx.longest - n if ctx.left else 0, n)
            grads.append(steps if steps.dtype is dtype else steps.to(dtype))
        return tuple(grads)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"):
    """Pad tensors of shape ``[L_i, *]`` to the longest length and stack them; differentiable.

    The result is ``[T, B, *]`` (``T`` the longest length, ``B`` the number of
    sequences), or ``[B, T, *]`` with ``batch_first=True``. Padding goes after
    each sequence (``padding_side='right'``) or before it (``'left'``) and holds
    ``padding_value`` cast to the first sequence's dtype, which the result has.
    The usual ``collate_fn`` for variable-length data (token ids of sentences):

    >>> import ember
    >>> from ember.nn.utils.rnn import pad_sequence
    >>> def collate_fn(batch):  # samples: (token ids, label)
    ...     ids, labels = zip(*batch)
    ...     return pad_sequence(ids, batch_first=True, padding_value=-1), ember.tensor(labels)
    >>> collate_fn([(ember.tensor([5, 6, 7]), 0), (ember.tensor([8]), 1)])
    (tensor([[ 5,  6,  7],
            [ 8, -1, -1]]), tensor([0, 1]))
    >>> pad_sequence([ember.tensor([1.0, 2.0]), ember.tensor([3.0])], padding_side="left")
    tensor([[1., 0.],
            [2., 3.]])
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side!r}.")
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(f"pad_sequence: expected a Tensor as sequence {i}, but got {type(s).__name__}")
        if s.ndim == 0:
            raise RuntimeError(f"pad_sequence: sequence {i} is 0-d; each sequence needs a first (length) dimension")
        if s.shape[1:] != sequences[0].shape[1:]:
            raise RuntimeError(f"pad_sequence: every sequence must have the first one's trailing shape "
                               f"{list(sequences[0].shape[1:])} (all dimensions but the length), but sequence {i} "
                               f"has shape {list(s.shape)}")
    return PadSequence.apply(*sequences, batch_first=bool(batch_first),
                             padding_value=cast_scalar(padding_value, sequences[0]),
                             left=padding_side == "left", dtypes=[s.dtype for s in sequences])
