"""How one pipeline stage tells the next the dtype and shape of its activations.

Point-to-point receives need a buffer of the right shape and dtype, which only the sending stage knows (it depends on
its submodule). So before the first micro-batch of every step the sender sends a fixed-size ``int64`` header:
``[dtype code, ndim, dim 0, ..., dim 7]`` (unused dims 0); every micro-batch of a step then has that shape, which the
sender checks. Gradients flowing backward have the shape of the activation they belong to, known on both sides.

>>> import ember
>>> from ember.parallel.pipelining._wire import encode, decode
>>> decode(encode(ember.zeros(4, 3, dtype=ember.float64), "stage 0"))
(ember.float64, (4, 3))
"""
from __future__ import annotations

import ember

__all__ = ["HEADER_SIZE", "MAX_DIMS", "encode", "decode"]

MAX_DIMS = 8
HEADER_SIZE = 2 + MAX_DIMS
_DTYPES = (ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int64, ember.int32, ember.int16,
           ember.int8, ember.uint8, ember.bool)


def encode(t, who: str):
    """The header describing tensor ``t`` (an ``int64`` tensor of :data:`HEADER_SIZE` elements)."""
    if not isinstance(t, ember.Tensor):
        raise TypeError(f"{who}: a pipeline stage must return one ember.Tensor (the activation sent to the next "
                        f"stage), but its submodule returned {type(t).__name__}")
    if t.dtype not in _DTYPES:
        raise TypeError(f"{who}: cannot send an activation of dtype {t.dtype}; supported: "
                        f"{', '.join(str(d) for d in _DTYPES)}")
    if t.dim() > MAX_DIMS:
        raise ValueError(f"{who}: activations may have at most {MAX_DIMS} dimensions, but this one has shape "
                         f"{tuple(t.shape)}")
    dims = list(t.shape) + [0] * (MAX_DIMS - t.dim())
    return ember.tensor([_DTYPES.index(t.dtype), t.dim(), *dims], dtype=ember.int64)


def decode(header) -> tuple:
    """``(dtype, shape)`` from a header made by :func:`encode`."""
    values = [int(v) for v in header.tolist()]
    return _DTYPES[values[0]], tuple(values[2:2 + values[1]])
