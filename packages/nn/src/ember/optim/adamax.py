"""Adamax: Adam with the infinity norm of past gradients in place of their second moment."""
from __future__ import annotations

import ember
from ember._sibling_api import array, array_namespace, mark_modified

from .optimizer import (
    Optimizer,
    advance_step,
    check_differentiable,
    check_options,
    grad_array,
    lerp_,
    new_step_tensor,
    params_with_grad,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax (Kingma and Ba, section 7), PyTorch's algorithm.

    At step ``t``, for each parameter ``p`` with gradient ``g`` (``-g`` if ``maximize``)::

        g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1**t) * m / u

    State per parameter: ``'step'``, ``'exp_avg'`` (m) and ``'exp_inf'`` (u).

    >>> import ember
    >>> w = ember.tensor([1.0, -1.0], requires_grad=True)
    >>> opt = ember.optim.Adamax([w], lr=0.1)
    >>> w.grad = ember.tensor([3.0, -0.5]); opt.step()
    >>> w  # the first step moves each coordinate by lr against its gradient's sign
    tensor([ 0.9000, -0.9000], requires_grad=True)
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_options((lr >= 0.0, "learning rate", lr), (eps >= 0.0, "epsilon value", eps),
                      (0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0]),
                      (0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1]),
                      (weight_decay >= 0.0, "weight_decay value", weight_decay))
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        check_differentiable(differentiable, None, foreach)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for group in self.param_groups:
                lr, eps = float(group["lr"]), group["eps"]
                beta1, beta2 = (float(b) for b in group["betas"])
                for p in params_with_grad(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = new_step_tensor()
                        state["exp_avg"] = ember.zeros_like(p)
                        state["exp_inf"] = ember.zeros_like(p)
                    t = advance_step(state["step"])
                    g = grad_array(p, group["maximize"], group["weight_decay"])
                    m, u = array(state["exp_avg"]), array(state["exp_inf"])
                    xp = array_namespace(p)
                    lerp_(m, g, 1 - beta1)
                    u *= beta2
                    u[...] = xp.maximum(u, xp.abs(g) + eps)
                    p_array = array(p)
                    p_array -= m / u * (lr / (1 - beta1 ** t))
                    mark_modified(p, state["exp_avg"], state["exp_inf"])
        return loss
