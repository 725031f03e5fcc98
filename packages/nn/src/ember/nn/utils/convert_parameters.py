"""``parameters_to_vector`` and ``vector_to_parameters``: all parameters as one flat vector, and back.

>>> import ember
>>> from ember.nn.utils import parameters_to_vector, vector_to_parameters
>>> w, b = ember.ones(2, 2, requires_grad=True), ember.zeros(2, requires_grad=True)
>>> v = parameters_to_vector([w, b])
>>> v.shape
ember.Size([6])
>>> vector_to_parameters(ember.arange(6.0), [w, b])
>>> w, b
(tensor([[0., 1.],
        [2., 3.]], requires_grad=True), tensor([4., 5.], requires_grad=True))
"""
from __future__ import annotations

import ember

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter's values in order (differentiable; a copy)."""
    device = None
    flat = []
    for p in parameters:
        device = _check_same_device(p, device)
        flat.append(p.reshape(-1))
    return ember.cat(flat)


def vector_to_parameters(vec, parameters) -> None:
    """Give each parameter, in order, the next ``numel()`` values of the 1-D ``vec``.

    As in PyTorch, each parameter's ``.data`` becomes a view of ``vec``, so the
    two share memory afterwards.
    """
    if not isinstance(vec, ember.Tensor):
        raise TypeError(f"expected ember.Tensor, but got: {type(vec).__qualname__}")
    device = None
    start = 0
    for p in parameters:
        device = _check_same_device(p, device)
        n = p.numel()
        p.data = vec[start:start + n].view_as(p).data
        start += n


def _check_same_device(param, device):
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return param.device
