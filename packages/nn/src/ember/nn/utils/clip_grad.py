"""Gradient clipping: ``clip_grad_norm_`` (by the total norm of all gradients) and ``clip_grad_value_``.

>>> import ember
>>> from ember.nn.utils import clip_grad_norm_
>>> w = ember.zeros(2, requires_grad=True)
>>> w.grad = ember.tensor([3.0, 4.0])
>>> clip_grad_norm_([w], max_norm=1.0)
tensor(5.)
>>> w.grad
tensor([0.6000, 0.8000])
"""
from __future__ import annotations

import functools
import types
import warnings

import ember

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _as_list(tensors) -> list:
    return [tensors] if isinstance(tensors, ember.Tensor) else list(tensors)


def _grads(parameters) -> list:
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None):
    """The ``norm_type``-norm of all ``tensors`` together, as if concatenated into one vector (a 0-d tensor on
    the first tensor's device; ``ember.tensor(0.)`` for none). ``foreach`` is accepted and changes nothing.
    """
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return ember.tensor(0.0)
    device = tensors[0].device
    with ember.no_grad():
        norms = [ember.linalg.vector_norm(t, norm_type) for t in tensors]
        dtype = functools.reduce(ember.promote_types, (n.dtype for n in norms))
        total = ember.linalg.vector_norm(ember.stack([n.to(device=device, dtype=dtype) for n in norms]), norm_type)
    if error_if_nonfinite and not bool(ember.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale the gradients of ``parameters`` in place by ``min(1, max_norm / (total_norm + 1e-6))``."""
    grads = _grads(_as_list(parameters))
    if not grads:
        return
    with ember.no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        by_device = {}
        for g in grads:
            key = (g.device, g.dtype)
            if key not in by_device:
                by_device[key] = coef.to(device=g.device, dtype=g.dtype)
            g.mul_(by_device[key])


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None):
    """Scale all gradients of ``parameters`` together so that their total norm is at most ``max_norm``.

    The total norm is that of all gradients concatenated into one vector
    (``norm_type`` may be ``float('inf')``: the largest magnitude); gradients
    are multiplied by ``max_norm / (total + 1e-6)`` when that is below 1.
    Returns the total norm before clipping (a 0-d tensor). With
    ``error_if_nonfinite=True`` a nan or infinite norm is an error instead.
    """
    if isinstance(parameters, types.GeneratorType):
        parameters = list(parameters)
        if not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    parameters = _as_list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None):
    """Deprecated: use :func:`clip_grad_norm_`."""
    warnings.warn("`ember.nn.utils.clip_grad_norm` is now deprecated in favor of `ember.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient of ``parameters`` into ``[-clip_value, clip_value]``, in place.

    >>> import ember
    >>> from ember.nn.utils import clip_grad_value_
    >>> w = ember.zeros(3, requires_grad=True)
    >>> w.grad = ember.tensor([-2.0, 0.5, 3.0])
    >>> clip_grad_value_(w, 1.0); w.grad
    tensor([-1.0000,  0.5000,  1.0000])
    """
    clip_value = float(clip_value)
    with ember.no_grad():
        for g in _grads(_as_list(parameters)):
            g.clamp_(min=-clip_value, max=clip_value)
