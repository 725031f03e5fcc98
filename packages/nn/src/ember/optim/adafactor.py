"""Adafactor: Adam-like steps with the second moment of a matrix kept as row and column averages only."""
from __future__ import annotations

import math

import numpy as np

import ember
from ember._sibling_api import array, array_namespace, mark_modified

from .optimizer import Optimizer, advance_step, grad_array, lerp_, new_step_tensor, params_with_grad

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor (Shazeer and Stern), PyTorch's variant (no first moment, relative step sizes).

    At step ``t``, for each parameter ``p`` with gradient ``g`` (``-g`` if ``maximize``)::

        beta2_t = 1 - t**beta2_decay;   rho_t = min(lr, 1 / sqrt(t))
        alpha = max(eps2, RMS(p)) * rho_t                    (RMS(x) = ||x|| / sqrt(numel(x)))
        p = p * (1 - lr * weight_decay)
        matrices (and stacks of them):  R = beta2_t * R + (1 - beta2_t) * mean(g * g, last dim)
                                        C = beta2_t * C + (1 - beta2_t) * mean(g * g, second-last dim)
                                        V = R @ C / max(mean(R, second-last dim), eps1)
        vectors and scalars:            V = beta2_t * V + (1 - beta2_t) * g * g
        U = g / sqrt(max(V, eps1**2));  p = p - alpha / max(1, RMS(U) / d) * U

    ``eps = (eps1, eps2)``; ``eps1=None`` is the machine epsilon of the parameter's
    dtype. State per parameter: ``'step'`` and ``'row_var'`` (R) and ``'col_var'``
    (C) for parameters of two or more dimensions, ``'variance'`` (V) otherwise.

    >>> import ember
    >>> w = ember.tensor([3.0, 4.0], requires_grad=True)
    >>> opt = ember.optim.Adafactor([w], lr=0.1)
    >>> w.grad = ember.tensor([1.0, -2.0]); opt.step()
    >>> w  # alpha = RMS(w) * 0.1 = 0.3536; U = sign(g) at the first step
    tensor([2.6464, 4.3536], requires_grad=True)
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        for ok, message in ((0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}"),
                            (0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
                            (eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}"),
                            (0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}"),
                            (1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}"),
                            (0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")):
            if not ok:
                raise ValueError(message)
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for group in self.param_groups:
                lr, d, weight_decay = float(group["lr"]), group["d"], group["weight_decay"]
                eps1, eps2 = group["eps"]
                for p in params_with_grad(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = new_step_tensor()
                        if p.grad.dim() > 1:
                            state["row_var"] = ember.zeros(*p.grad.shape[:-1], 1, dtype=p.dtype, device=p.device)
                            state["col_var"] = ember.zeros(*p.grad.shape[:-2], 1, p.grad.shape[-1], dtype=p.dtype,
                                                           device=p.device)
                        else:
                            state["variance"] = ember.zeros_like(p)
                    t = advance_step(state["step"])
                    xp = array_namespace(p)
                    g = grad_array(p, group["maximize"])
                    p_array = array(p)
                    tiny = float(np.finfo(p_array.dtype).eps) if eps1 is None else eps1
                    beta2_complement = t ** group["beta2_decay"]
                    alpha = max(eps2, _rms(xp, p_array)) * min(lr, 1 / t ** 0.5)
                    if weight_decay != 0:
                        p_array *= 1 - lr * weight_decay
                    if g.ndim > 1:
                        row, col = array(state["row_var"]), array(state["col_var"])
                        lerp_(row, xp.linalg.vector_norm(g, axis=-1, keepdims=True) ** 2 / g.shape[-1],
                              beta2_complement)
                        lerp_(col, xp.linalg.vector_norm(g, axis=-2, keepdims=True) ** 2 / g.shape[-2],
                              beta2_complement)
                        variance = xp.matmul(row, col)
                        variance /= xp.maximum(xp.mean(row, axis=-2, keepdims=True), tiny)
                        mark_modified(state["row_var"], state["col_var"])
                    else:
                        v = array(state["variance"])
                        lerp_(v, g * g, beta2_complement)
                        variance = xp.asarray(v, copy=True)
                        mark_modified(state["variance"])
                    update = 1 / xp.sqrt(xp.maximum(variance, tiny * tiny))  # PyTorch's rsqrt, then times g
                    update *= g
                    p_array -= update * (alpha / max(1.0, _rms(xp, update) / d))
                    mark_modified(p)
        return loss


def _rms(xp, a) -> float:
    """``||a|| / sqrt(numel(a))``."""
    return float(xp.linalg.vector_norm(a)) / math.sqrt(a.size)
