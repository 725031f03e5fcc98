"""``Tensor.new_zeros``, ``new_ones``, ``new_empty``, ``new_full``, ``new_tensor``: new tensors with this tensor's
dtype and device unless ``dtype``/``device`` are given (PyTorch's methods; they share no data and no history).

>>> import ember
>>> t = ember.ones(2, 3, dtype=ember.float64)
>>> t.new_zeros(2), t.new_full((1, 2), 7), t.new_tensor([1, 2]).dtype
(tensor([0., 0.], dtype=ember.float64), tensor([[7., 7.]], dtype=ember.float64), ember.float64)
"""
from __future__ import annotations

import warnings

from .._tensor import size_from_args
from ._common import Tensor, tensor_method
from .creation import empty, full, ones, tensor, zeros

__all__ = ["new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"]


def _like(self, dtype, device):
    return dtype or self.dtype, self.device if device is None else device


@tensor_method()
def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A tensor of zeros of ``size`` (ints or one sequence), with this tensor's dtype and device by default."""
    dtype, device = _like(self, dtype, device)
    return zeros(size_from_args(size, "new_zeros"), dtype=dtype, device=device, requires_grad=requires_grad)


@tensor_method()
def new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A tensor of ones of ``size``, with this tensor's dtype and device by default."""
    dtype, device = _like(self, dtype, device)
    return ones(size_from_args(size, "new_ones"), dtype=dtype, device=device, requires_grad=requires_grad)


@tensor_method()
def new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """An uninitialised tensor of ``size``, with this tensor's dtype and device by default."""
    dtype, device = _like(self, dtype, device)
    return empty(size_from_args(size, "new_empty"), dtype=dtype, device=device, requires_grad=requires_grad)


@tensor_method()
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device by default."""
    dtype, device = _like(self, dtype, device)
    return full(size, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


@tensor_method()
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A copy of ``data`` (a nested sequence, a NumPy array or a tensor) with this tensor's dtype and device by
    default."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
        data = data.detach()
    dtype, device = _like(self, dtype, device)
    return tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
