"""RAdam: Adam whose adaptive step is switched on only once the variance of its estimate is bounded."""
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

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam (Liu et al.), PyTorch's algorithm.

    At step ``t``, for each parameter ``p`` with gradient ``g`` (``-g`` if ``maximize``)::

        p = p * (1 - lr * weight_decay)  if decoupled_weight_decay  else  g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
        m_hat = m / (1 - beta1**t)
        rho_inf = 2 / (1 - beta2) - 1;     rho_t = rho_inf - 2 * t * beta2**t / (1 - beta2**t)
        if rho_t > 5:  r = sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                       p = p - lr * m_hat * r * sqrt(1 - beta2**t) / (sqrt(v) + eps)
        else:          p = p - lr * m_hat

    State per parameter: ``'step'``, ``'exp_avg'`` (m) and ``'exp_avg_sq'`` (v).

    >>> import ember
    >>> w = ember.tensor([1.0], requires_grad=True)
    >>> opt = ember.optim.RAdam([w], lr=0.1)
    >>> w.grad = ember.tensor([2.0]); opt.step()
    >>> w  # rho_1 = 1 <= 5: an SGD-with-momentum step, m_hat = g
    tensor([0.8000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_options((lr >= 0.0, "learning rate", lr), (eps >= 0.0, "epsilon value", eps),
                      (0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0]),
                      (0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1]),
                      (weight_decay >= 0.0, "weight_decay value", weight_decay))
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        check_differentiable(differentiable, None, foreach)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        with ember.no_grad():
            for group in self.param_groups:
                lr, eps, weight_decay = float(group["lr"]), group["eps"], group["weight_decay"]
                beta1, beta2 = (float(b) for b in group["betas"])
                decoupled = group["decoupled_weight_decay"]
                rho_inf = 2 / (1 - beta2) - 1
                for p in params_with_grad(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = new_step_tensor()
                        state["exp_avg"] = ember.zeros_like(p)
                        state["exp_avg_sq"] = ember.zeros_like(p)
                    t = advance_step(state["step"])
                    p_array = array(p)
                    if decoupled and weight_decay != 0:
                        p_array *= 1 - lr * weight_decay
                    g = grad_array(p, group["maximize"], 0 if decoupled else weight_decay)
                    m, v = array(state["exp_avg"]), array(state["exp_avg_sq"])
                    lerp_(m, g, 1 - beta1)
                    v *= beta2
                    v += g * g * (1 - beta2)
                    bias2 = 1 - beta2 ** t
                    m_hat = m / (1 - beta1 ** t)
                    rho_t = rho_inf - 2 * t * beta2 ** t / bias2
                    if rho_t > 5.0:
                        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                        adaptive = bias2 ** 0.5 / (array_namespace(p).sqrt(v) + eps)
                        p_array -= m_hat * lr * adaptive * rect
                    else:
                        p_array -= m_hat * lr
                    mark_modified(p, state["exp_avg"], state["exp_avg_sq"])
        return loss
