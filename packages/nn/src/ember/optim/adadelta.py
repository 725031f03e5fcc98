"""Adadelta: step sizes from the ratio of the running averages of squared updates and squared gradients."""
from __future__ import annotations

import ember
from ember._sibling_api import array, array_namespace, mark_modified

from .optimizer import (
    Optimizer,
    advance_step,
    check_differentiable,
    check_options,
    grad_array,
    new_step_tensor,
    params_with_grad,
)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler), PyTorch's algorithm.

    For each parameter ``p`` with gradient ``g`` (``-g`` if ``maximize``)::

        g = g + weight_decay * p
        v = rho * v + (1 - rho) * g * g
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta

    State per parameter: ``'step'``, ``'square_avg'`` (v) and ``'acc_delta'`` (u).
    ``foreach`` and ``capturable`` are accepted for PyTorch's signature.

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True, dtype=ember.float64)
    >>> opt = ember.optim.Adadelta([w], lr=1.0, rho=0.5, eps=1e-6)
    >>> w.grad = ember.tensor([2.0], dtype=ember.float64); opt.step()
    >>> round(w.item(), 6)  # v = 2, delta = sqrt(1e-6) / sqrt(2 + 1e-6) * 2
    0.998586
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_options((lr >= 0.0, "learning rate", lr), (0.0 <= rho <= 1.0, "rho value", rho),
                      (eps >= 0.0, "epsilon value", eps), (weight_decay >= 0.0, "weight_decay value", weight_decay))
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        check_differentiable(differentiable, None, foreach)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for group in self.param_groups:
                lr, rho, eps = float(group["lr"]), group["rho"], group["eps"]
                for p in params_with_grad(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = new_step_tensor()
                        state["square_avg"] = ember.zeros_like(p)
                        state["acc_delta"] = ember.zeros_like(p)
                    advance_step(state["step"])
                    g = grad_array(p, group["maximize"], group["weight_decay"])
                    v, u = array(state["square_avg"]), array(state["acc_delta"])
                    xp = array_namespace(p)
                    v *= rho
                    v += g * g * (1 - rho)
                    delta = xp.sqrt(u + eps)
                    delta /= xp.sqrt(v + eps)
                    delta *= g
                    u *= rho
                    u += delta * delta * (1 - rho)
                    p_array = array(p)
                    p_array -= delta * lr
                    mark_modified(p, state["square_avg"], state["acc_delta"])
        return loss
