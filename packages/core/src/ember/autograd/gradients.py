"""``backward`` and ``grad``: run the engine from outputs back to the graph's leaves (and ``Tensor.backward``).

>>> import ember
>>> x = ember.tensor([1.0, 2.0], requires_grad=True)
>>> ember.autograd.backward((x * x).sum())
>>> x.grad
tensor([2., 4.])
"""
from __future__ import annotations

from .._tensor import Tensor
from ..backends.backend import on_device
from . import engine
from .node import accumulate

__all__ = ["backward", "grad"]


def _as_tuple(x):
    if x is None:
        return None
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _make_grads(outputs, grads):
    if grads is None:
        grads = (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got {len(grads)} gradients "
                           f"for {len(outputs)} outputs")
    out = []
    for t, g in zip(outputs, grads):
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not t._dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {t.dtype}")
            with on_device(t._device):
                g = Tensor._make(t._device.backend.xp.ones_like(t._data), t._device, t._dtype)
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradients must be tensors or None, got {type(g).__name__}")
        elif tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {g.shape} and output[0] has a "
                               f"shape of {t.shape}.")
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Add the gradients of ``tensors`` w.r.t. graph leaves into their ``.grad``."""
    tensors = _as_tuple(tensors)
    grads = _make_grads(tensors, _as_tuple(grad_tensors))
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_tuple(inputs)
        res = engine.run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs, allow_unused=True)
        for t, g in zip(inputs, res):
            if g is not None:
                accumulate(t, g, create_graph)
        return
    engine.run_backward(tensors, grads, retain_graph, create_graph)


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Compute the gradient of this tensor w.r.t. the graph leaves and add it into their ``.grad``.

    ``gradient`` is required unless the tensor has one element.

    >>> import ember
    >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([2., 4.])
    """
    if gradient is None and inputs is None and not create_graph and self._data.size == 1 \
            and self._dtype.is_floating_point and self._requires_grad:  # the common case, kept short
        device = self._device
        data = self._data
        backend = device._backend or device.backend
        if backend.device_guard is None:
            seed = backend.xp.full(data.shape, 1, dtype=data.dtype)
        else:
            with on_device(device):
                seed = backend.xp.full(data.shape, 1, dtype=data.dtype)
        engine.run_backward((self,), (Tensor._make(seed, device, self._dtype),), bool(retain_graph), False)
        return
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


Tensor.backward = _tensor_backward  # type: ignore[method-assign]  # defined beside the engine it drives


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         materialize_grads=False):
    """Gradients of ``outputs`` w.r.t. ``inputs``, returned as a tuple (``.grad`` is left alone).

    With ``create_graph=True`` the result is differentiable again (double backward).
    """
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grads = _make_grads(outputs, _as_tuple(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    res = engine.run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs,
                              allow_unused=bool(allow_unused or materialize_grads))
    if materialize_grads:
        res = tuple(_zeros_like(i) if r is None else r for i, r in zip(inputs, res))
    return res



def _zeros_like(t):
    with on_device(t._device):
        return Tensor._make(t._device.backend.xp.zeros_like(t._data), t._device, t._dtype)
