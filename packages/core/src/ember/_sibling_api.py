"""What ember's own distributions (ember-nn, ember-data, ember-tune, ember-onnx) may use of ember-core beyond its
public API.

Not for users: this is the one door through which ``ember.nn``, ``ember.optim``,
``ember.data`` and ``ember.tune`` reach core's internals, so that core can
change a tensor's private layout (``_data``, the version counter, ...) and fix
its siblings here, in one place. It is stable within a minor version of
ember-core; the sibling distributions pin ``ember-core>=0.1,<0.2`` for that
reason. ``tests/core/test_sibling_boundary.py`` fails when a sibling touches a
private module, a private name or a private tensor attribute of core other than
through this module.

Where PyTorch has a public way to do something (``t.data = new``,
``t.add_(x)`` under ``no_grad``, ``ember.from_numpy``, ``t.numpy()``), a
sibling uses that; the functions here are for what has none, and for hot paths
that the public way would slow down (an optimizer's step works on the backend
arrays and bumps the version counters itself, as an in-place op would).

>>> import ember
>>> from ember import _sibling_api as core
>>> w = ember.ones(3)
>>> a = core.array(w)         # the backend array itself: no copy
>>> a *= 2                    # change it in place ...
>>> core.mark_modified(w)     # ... and say so, as an in-place op would
>>> w, core.version(w)
(tensor([2., 2., 2.]), 1)

Besides its own functions it re-exports, under the same names, what core's ops
share with nn's (each documented where it is defined):

- ``Op``: the base class of a built-in differentiable op (forward on arrays,
  backward on tensors), for ops nn defines itself (``F.linear``);
- ``promote(a, b)``: two tensors (or a tensor and a Python number) at their
  PyTorch result dtype; ``wrap_dim(dim, ndim)``: a dimension counted from the
  end made non-negative, with PyTorch's error; ``cast_scalar(value, like)``: a
  Python number as ``like``'s element type, as ``fill_`` casts it;
- ``broadcast_shape(a, b)``, ``get_reduction(reduction, size_average, reduce)``
  and ``pairwise_distance``: the loss helpers and op that ``ember.nn.functional``
  names, which core keeps out of the ``ember`` namespace;
- ``autocast_casts(op_name, t)``: whether the ``ember.autocast`` region in force casts the inputs of
  that op on ``t``'s device (a public function's dtype check lets mixed dtypes through then);
- ``queue_callback(fn)``: run ``fn()`` when the backward in progress has finished (PyTorch's
  ``Variable._execution_engine.queue_callback``), for ember-parallel's DistributedDataParallel;
- for ember-onnx: ``TRACE``, the context variable holding the op trace in progress
  (``Op.apply`` hands each call to it; ``start_trace(trace)`` sets it, ``end_trace(token)`` resets it),
  ``onnx_lowerings()``, the plugins' lowerings
  (cached until the registered plugins change), ``numpy_dtype(dtype)``, the NumPy dtype of
  an ember dtype, and the pooling window geometry core's pooling ops use
  (``pool_windows``, ``pooled_size``, ``Windows``, ``AdaptiveWindows``), so that an
  exported pooling cuts the same windows.

>>> core.promote(ember.ones(1, dtype=ember.int64), 0.5)[0].dtype, core.wrap_dim(-1, 3)
(ember.float32, 2)
>>> core.broadcast_shape((2, 1), (3,)), core.get_reduction("sum")
((2, 3), 'sum')
"""
from __future__ import annotations

from ._dtype import numpy_dtype
from ._plugins import cpu_kernel, onnx_lowerings
from ._tensor import Tensor
from .amp.autocast_mode import autocast_casts
from .autograd.engine import queue_callback
from .autograd.function import TRACE, Op, end_trace, start_trace
from .ops._common import cast_scalar, promote, wrap_dim
from .ops._pool_windows import AdaptiveWindows, Windows, pool_windows, pooled_size
from .ops.conversion import _parse_to
from .ops.loss_common import broadcast_shape, get_reduction
from .ops.loss_embedding import pairwise_distance

__all__ = [
    # tensors and their arrays
    "array", "array_namespace", "from_array", "share_storage", "uniform_arrays",
    # version counter and autograd history
    "mark_modified", "version", "is_view", "take_history", "queue_callback",
    # helpers core's ops share with nn's
    "Op", "autocast_casts", "parse_to", "promote", "wrap_dim", "cast_scalar", "broadcast_shape", "get_reduction",
    "pairwise_distance",
    # plugins' compiled CPU loops (hook ember_cpu_kernels), e.g. nn's fused optimizer updates
    "cpu_kernel",
    # for ember-onnx: the op trace, dtypes, pooling windows
    "TRACE", "start_trace", "end_trace", "onnx_lowerings", "numpy_dtype",
    "pool_windows", "pooled_size", "Windows", "AdaptiveWindows",
]


# -- tensors and their arrays ------------------------------------------------------------------------------------
def array(t):
    """The backend array that holds ``t``'s elements: the array itself, not a copy.

    Writing into it changes ``t``; call :func:`mark_modified` afterwards.

    >>> import ember
    >>> from ember._sibling_api import array
    >>> type(array(ember.zeros(2))).__name__
    'ndarray'
    """
    return t._data


def array_namespace(t):
    """The array namespace (``xp``: NumPy, CuPy, ...) of the backend ``t``'s device runs on.

    >>> import ember
    >>> from ember._sibling_api import array, array_namespace
    >>> t = ember.zeros(2)
    >>> array_namespace(t).exp(array(t))
    array([1., 1.], dtype=float32)
    """
    return t._device.backend.xp


def from_array(data, device, dtype=None):
    """A new tensor (no autograd history) that takes ownership of the backend array ``data`` on ``device``
    (an ``ember.device``, e.g. another tensor's ``.device``); its memory is counted for that device.

    ``dtype`` defaults to the ember dtype of ``data``'s element type. ``data`` is not copied: the caller must
    not keep writing into it.

    >>> import ember, numpy as np
    >>> from ember._sibling_api import from_array
    >>> from_array(np.arange(3.0), ember.device("cpu"))
    tensor([0., 1., 2.], dtype=ember.float64)
    """
    return Tensor._make(data, device, dtype)


def share_storage(cls, source):
    """A new ``cls`` (a subclass of ``ember.Tensor``) over ``source``'s array, dtype, device and version
    counter: no copy and no autograd history; the memory stays counted once, by the new tensor.

    ``ember.nn.Parameter(t)`` is made this way.

    >>> import ember
    >>> from ember._sibling_api import share_storage
    >>> class Marked(ember.Tensor):
    ...     pass
    >>> t = ember.zeros(2)
    >>> m = share_storage(Marked, t)
    >>> t += 1
    >>> type(m).__name__, m.tolist()
    ('Marked', [1.0, 1.0])
    """
    if not isinstance(source, Tensor):
        raise TypeError(f"{cls.__name__}(): data must be a Tensor, but got {type(source).__name__}")
    t = cls._sharing(source._data, source._device, source._dtype, source._vc)
    t._count_memory_of(source)
    return t


def uniform_arrays(tensors):
    """The backend arrays of ``tensors`` (a list of them, in order) when they are all tensors on one device, of
    one dtype and one shape, none requires grad and none is a view that owes an autograd-history refresh;
    ``None`` otherwise (then an op such as ``ember.stack`` handles them, and names any odd one out).

    >>> import ember
    >>> from ember._sibling_api import uniform_arrays
    >>> len(uniform_arrays([ember.zeros(2), ember.ones(2)]))
    2
    >>> uniform_arrays([ember.zeros(2), ember.ones(3)]) is None
    True
    """
    first = tensors[0]
    arrays = []
    append = arrays.append
    try:
        device, dtype, shape = first._device, first._dtype, first._data.shape
        for t in tensors:
            # (a view whose base changed in place since may owe a refresh of its autograd history: an op does it)
            if (t._requires_grad or t._dtype is not dtype or t._device is not device or t._data.shape != shape
                    or (t._base is not None and t._vc[0] != t._vv)):
                return None
            append(t._data)
    except AttributeError:  # not all tensors
        return None
    return arrays


# -- version counter and autograd history ---------------------------------------------------------------------------
def mark_modified(*tensors) -> None:
    """Record that the arrays of ``tensors`` were changed in place (their version counters move on, as an
    in-place op's would), so that backward still reports a tensor changed after it was saved for it.

    >>> import ember
    >>> from ember._sibling_api import array, mark_modified
    >>> w = ember.ones(2, requires_grad=True)
    >>> y = (w * w).sum()      # saves w for backward
    >>> array(w)[0] = 5.0; mark_modified(w)
    >>> y.backward()
    Traceback (most recent call last):
    ...
    RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: ...
    """
    for t in tensors:
        t._vc[0] += 1


def version(t) -> int:
    """``t``'s version counter: how many in-place changes its storage has seen (views share it).

    >>> import ember
    >>> from ember._sibling_api import version
    >>> t = ember.zeros(2)
    >>> _ = t.add_(1)
    >>> version(t)
    1
    """
    return t._vc[0]


def is_view(t) -> bool:
    """Whether ``t`` shares the storage of another tensor (its base) as a view.

    >>> import ember
    >>> from ember._sibling_api import is_view
    >>> t = ember.zeros(4)
    >>> is_view(t), is_view(t[1:])
    (False, True)
    """
    return t._base is not None


def take_history(dst, src) -> None:
    """``dst`` takes ``src``'s place in the autograd graph: its ``grad_fn`` and its index among that node's
    outputs. For a tensor that an in-place op reached only through an alias (``src``): the caller's tensor then
    carries the in-place op's history, as if the op had run on it.

    >>> import ember
    >>> from ember._sibling_api import take_history
    >>> x = ember.ones(2, requires_grad=True)
    >>> a, b = x * 1, (x * 2).exp()
    >>> take_history(a, b)
    >>> a.grad_fn.name()
    'ExpBackward0'
    """
    dst.grad_fn, dst._output_nr = src.grad_fn, src._output_nr


# -- helpers core's ops share with nn's ---------------------------------------------------------------------------
def parse_to(args: tuple, kwargs: dict):
    """``(dtype, device, copy)`` from the arguments of ``Tensor.to(...)`` (a dtype, a device or a tensor,
    positionally or as ``dtype=``/``device=``); raises ``TypeError`` on anything else. ``kwargs`` is consumed.

    >>> import ember
    >>> from ember._sibling_api import parse_to
    >>> parse_to((ember.float64,), {"device": "cpu"})
    (ember.float64, device(type='cpu'), False)
    """
    return _parse_to(args, kwargs)[:3]
